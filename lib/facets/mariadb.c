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

/* The buffer pool is a share of the node's RAM, which the image does not
 * know: a small script run before mariadb starts renders it from
 * /proc/meminfo into its own file next to the static tuning */
static int size_val(const json_t *v, char *out, size_t outsz)
{
	if (json_is_integer(v))
		snprintf(out, outsz, "%lld", (long long)json_integer_value(v));
	else if (json_is_string(v) && !strpbrk(json_string_value(v), " \n#"))
		snprintf(out, outsz, "%s", json_string_value(v));
	else
		return -1;
	return 0;
}

static int apply(struct nf_apply *a, const json_t *sec)
{
	static const struct {
		const char *key, *conf;
	} keys[] = {
		{ "log_file_size", "innodb_log_file_size" },
		{ "log_buffer_size", "innodb_log_buffer_size" },
		{ "lock_wait_timeout", "innodb_lock_wait_timeout" },
		{ "max_allowed_packet", "max_allowed_packet" },
		{ "flush_log_at_trx_commit", "innodb_flush_log_at_trx_commit" },
		{ "sync_binlog", "sync_binlog" },
	};
	const char *dir = a->el ? "/etc/my.cnf.d" : "/etc/mysql/mariadb.conf.d";
	json_int_t pct = json_integer_value(json_object_get(sec, "buffer_pool_pct"));
	struct nf_buf b = { 0 };
	char path[128], val[64];
	int r;

	nf_apply_header(&b, "#", "mariadb");
	nf_buf_printf(&b, "[mysqld]\n");
	for (size_t i = 0; i < NF_ARRAY_SIZE(keys); i++) {
		const json_t *v = json_object_get(sec, keys[i].key);

		if (!v)
			continue;
		if (size_val(v, val, sizeof(val))) {
			nf_buf_free(&b);
			return nf_fail(a->ctx, NF_E_INVALID,
				       "mariadb.%s is not a number or size",
				       keys[i].key);
		}
		nf_buf_printf(&b, "%-31s = %s\n", keys[i].conf, val);
	}
	if (pct)
		nf_buf_printf(&b, "# innodb_buffer_pool_size: %lld%% of RAM, "
			      "written to 91-nodeforge-buffer-pool.cnf at start\n",
			      (long long)pct);
	snprintf(path, sizeof(path), "%s/90-slurm.cnf", dir);
	if ((r = nf_apply_write_buf(a, path, &b, 0644, 0, 0)))
		return r;
	if (pct <= 0 || pct > 100)
		return 0;
	nf_buf_printf(&b,
		"#!/bin/sh\n"
		"# Written by nodeforge build (facet 'mariadb'): size the InnoDB\n"
		"# buffer pool as a share of this node's RAM.\n"
		"set -eu\n"
		"pct=$1\n"
		"out=%s/91-nodeforge-buffer-pool.cnf\n"
		"kb=$(awk '/^MemTotal:/ { print $2 }' /proc/meminfo)\n"
		"mb=$((kb * pct / 100 / 1024))\n"
		"printf '[mysqld]\\ninnodb_buffer_pool_size = %%sM\\n' \"$mb\" > \"$out.tmp\"\n"
		"mv -f \"$out.tmp\" \"$out\"\n", dir);
	if ((r = nf_apply_write_buf(a, "/usr/lib/nodeforge/mariadb-buffer-pool",
				    &b, 0755, 0, 0)))
		return r;
	nf_apply_header(&b, "#", "mariadb");
	nf_buf_printf(&b, "[Service]\n# '+': runs as root, the service itself as mysql\n"
		      "ExecStartPre=+/usr/lib/nodeforge/"
		      "mariadb-buffer-pool %lld\n", (long long)pct);
	return nf_apply_write_buf(a, "/etc/systemd/system/mariadb.service.d/"
				  "nodeforge.conf", &b, 0644, 0, 0);
}

/* ---- end of apply ---- */

/* ---- check: what the verifier checks (nodeforge verify) ---- */

/* ---- end of check ---- */

const struct nf_facet nf_facet_mariadb = {
	.name = "mariadb",
	.summary = "MariaDB tuning for slurmdbd",
	.apply = apply,
	.schema = fields,
	.lint = lint,
	.checks = NULL,
};
