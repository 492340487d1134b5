/* SPDX-License-Identifier: MIT */
/*
 * mariadb: slurmdbd's database tuning.  The buffer pool is a share of the
 * node's RAM, resolved on the node (a fixed "45G" is right for one size of
 * machine only).
 */
#include "internal.h"

static const struct nf_field fields[] = {
	{ "buffer_pool_pct", NF_T_INT },
	{ "log_file_size", NF_T_SIZE },
	{ "log_buffer_size", NF_T_SIZE },
	{ "lock_wait_timeout", NF_T_INT },
	{ "max_allowed_packet", NF_T_SIZE },
	{ "flush_log_at_trx_commit", NF_T_INT },
	{ "sync_binlog", NF_T_INT },
	{ 0 }
};

static int lint(struct nf_facet_lint *l, const json_t *sec)
{
	json_int_t pct = json_integer_value(json_object_get(sec, "buffer_pool_pct"));
	json_int_t flush = json_integer_value(json_object_get(sec, "flush_log_at_trx_commit"));

	if (json_object_get(sec, "buffer_pool_pct") && (pct < 70 || pct > 80))
		nf_lint_at(l, "mariadb.buffer_pool_pct", NF_SEV_WARNING,
			   "buffer_pool_pct %lld: a dedicated slurmdbd database "
			   "wants 70-80%% of RAM", (long long)pct);
	if (json_object_get(sec, "buffer_pool_pct") && (pct < 1 || pct > 90))
		nf_lint_at(l, "mariadb.buffer_pool_pct", NF_SEV_ERROR,
			   "buffer_pool_pct %lld is outside 1-90", (long long)pct);
	if (json_object_get(sec, "flush_log_at_trx_commit") &&
	    (flush < 0 || flush > 2))
		nf_lint_at(l, "mariadb.flush_log_at_trx_commit", NF_SEV_ERROR,
			   "innodb_flush_log_at_trx_commit takes 0, 1 or 2, not %lld",
			   (long long)flush);
	return 0;
}

/* ---- apply: what the image build writes (nodeforge build) ---- */

/* ---- end of apply ---- */

/* ---- check: what the verifier checks (nodeforge verify) ---- */

/* ---- end of check ---- */

const struct nf_facet nf_facet_mariadb = {
	.name = "mariadb",
	.summary = "MariaDB tuning for slurmdbd",
	.apply = NULL,
	.schema = fields,
	.lint = lint,
	.checks = NULL,
};
