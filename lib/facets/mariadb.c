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

static int check_server(struct nf_vcheck *c, const json_t *sec)
{
	const char *argv[] = { "mariadb", "--batch", "--skip-column-names", "-e",
			       "SHOW GLOBAL VARIABLES", NULL };
	char *out = NULL, *save = NULL;
	json_t *vars;
	int st = 0, r;

	(void)sec;
	nf_v_expect(c, "the server answers SHOW GLOBAL VARIABLES");
	nf_v_remedy(c, "systemctl status mariadb; journalctl -u mariadb -n 30");
	r = nf_v_exec(c, argv, NULL, &out, &st);
	if (r == NF_E_TIMEOUT)
		return NF_V_HUNG;
	if (r) {
		nf_v_seen(c, "cannot run mariadb: %s", r < 0 ? strerror(-r) : nf_strerror(r));
		return NF_V_FAIL;
	}
	if (st) {
		out[strcspn(out, "\n")] = '\0';
		nf_v_seen(c, "exit %d: %.200s", st, out);
		free(out);
		return NF_V_FAIL;
	}
	vars = json_object();
	for (char *l = strtok_r(out, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *tab = strchr(l, '\t');

		if (tab) {
			*tab = '\0';
			json_object_set_new(vars, l, json_string(tab + 1));
		}
	}
	free(out);
	nf_v_seen(c, "%zu variables", json_object_size(vars));
	nf_v_cache_put(c, "mariadb.vars", vars);
	return NF_V_PASS;
}

static const char *var(struct nf_vcheck *c, const char *name)
{
	return json_string_value(json_object_get(nf_v_cache_get(c, "mariadb.vars"), name));
}

static int check_buffer_pool(struct nf_vcheck *c, const json_t *sec)
{
	json_int_t pct = json_integer_value(json_object_get(sec, "buffer_pool_pct"));
	const char *v = var(c, "innodb_buffer_pool_size");
	unsigned long long mem_kb = 0;
	char *buf = NULL, *m;
	double have;

	if (!pct)
		return nf_v_skip(c, "the profile sets no buffer_pool_pct");
	if (nf_v_read(c, NF_VSYS, "/proc/meminfo", 64 * 1024, &buf, NULL) ||
	    !(m = strstr(buf, "MemTotal:"))) {
		free(buf);
		return nf_v_skip(c, "no MemTotal in /proc/meminfo");
	}
	mem_kb = strtoull(m + 9, NULL, 10);
	free(buf);
	if (!v || !mem_kb) {
		nf_v_seen(c, "innodb_buffer_pool_size unknown");
		return NF_V_FAIL;
	}
	have = strtod(v, NULL) * 100.0 / (mem_kb * 1024.0);
	nf_v_expect(c, "innodb_buffer_pool_size %lld-%lld %% of RAM", (long long)pct - 5,
		    (long long)pct + 5);
	nf_v_seen(c, "%s bytes = %.1f %% of %llu MiB", v, have, mem_kb / 1024);
	if (have >= pct - 5 && have <= pct + 5)
		return NF_V_PASS;
	nf_v_remedy(c, "set innodb_buffer_pool_size = %lluM in the server's nodeforge.cnf and "
		    "systemctl restart mariadb", mem_kb * (unsigned long long)pct / 100 / 1024);
	return NF_V_FAIL;
}

static const struct {
	const char *id, *key, *var;
	bool size;
} simple[] = {
	{ "mariadb.lock_wait_timeout", "lock_wait_timeout", "innodb_lock_wait_timeout", false },
	{ "mariadb.log_file_size", "log_file_size", "innodb_log_file_size", true },
	{ "mariadb.log_buffer_size", "log_buffer_size", "innodb_log_buffer_size", true },
	{ "mariadb.max_allowed_packet", "max_allowed_packet", "max_allowed_packet", true },
	{ "mariadb.flush_log_at_trx_commit", "flush_log_at_trx_commit",
	  "innodb_flush_log_at_trx_commit", false },
};

static int check_simple(struct nf_vcheck *c, const json_t *sec)
{
	const char *id = nf_v_id(c);
	char want[64];
	const char *v;
	size_t i;

	for (i = 0; i < NF_ARRAY_SIZE(simple) && strcmp(simple[i].id, id); i++)
		;
	if (i == NF_ARRAY_SIZE(simple) || !json_object_get(sec, simple[i].key))
		return nf_v_skip(c, "the profile does not set it");
	nf_v_json_str(json_object_get(sec, simple[i].key), want, sizeof(want));
	if (simple[i].size) {
		unsigned long long b;

		if (!nf_parse_size(want, &b))
			snprintf(want, sizeof(want), "%llu", b);
	}
	v = var(c, simple[i].var);
	nf_v_expect(c, "%s = %s", simple[i].var, want);
	nf_v_seen(c, "%s = %s", simple[i].var, v ? v : "(none)");
	if (v && !strcmp(v, want))
		return NF_V_PASS;
	nf_v_remedy(c, "set %s = %s in the server's nodeforge.cnf and systemctl restart mariadb",
		    simple[i].var, want);
	return NF_V_FAIL;
}

static const struct nf_check_def defs[] = {
	{ "mariadb.server", "the database server answers", NULL, NF_CHECK_PROBE, 3000,
	  check_server },
	{ "mariadb.buffer_pool", "InnoDB buffer pool size against RAM", "mariadb.server", 0, 0,
	  check_buffer_pool },
	{ "mariadb.lock_wait_timeout", "InnoDB lock wait timeout", "mariadb.server", 0, 0,
	  check_simple },
	{ "mariadb.log_file_size", "InnoDB redo log size", "mariadb.server", 0, 0, check_simple },
	{ "mariadb.log_buffer_size", "InnoDB log buffer size", "mariadb.server", 0, 0,
	  check_simple },
	{ "mariadb.max_allowed_packet", "max_allowed_packet", "mariadb.server", 0, 0,
	  check_simple },
	{ "mariadb.flush_log_at_trx_commit", "InnoDB flush policy", "mariadb.server", 0, 0,
	  check_simple },
};

static const struct nf_checkset checks = NF_CHECKSET(defs);

/* ---- end of check ---- */

const struct nf_facet nf_facet_mariadb = {
	.name = "mariadb",
	.summary = "MariaDB tuning for slurmdbd",
	.apply = NULL,
	.schema = fields,
	.lint = lint,
	.checks = &checks,
};
