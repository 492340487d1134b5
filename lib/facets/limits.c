/* SPDX-License-Identifier: MIT */
/*
 * limits: resource limits for jobs.  Applied both to limits.d (login
 * sessions) and to slurmd's unit (Limit*=), since slurmd's children inherit
 * the daemon's limits, not PAM's.
 */
#include "internal.h"

static const struct nf_field fields[] = {
	{ "nofile", NF_T_LIMIT },
	{ "memlock", NF_T_LIMIT },
	{ "stack", NF_T_LIMIT },
	{ "nproc", NF_T_LIMIT },
	{ "core", NF_T_LIMIT },
	{ 0 }
};

static int lint(struct nf_facet_lint *l, const json_t *sec)
{
	const json_t *ml = json_object_get(sec, "memlock");
	const json_t *nofile = json_object_get(sec, "nofile");

	if (json_is_integer(ml))
		nf_lint_at(l, "limits.memlock", NF_SEV_WARNING,
			   "memlock %lld: RDMA (GPUDirect) needs memlock unlimited, "
			   "or ibv_reg_mr fails and NCCL falls back to host memory",
			   (long long)json_integer_value(ml));
	if (json_is_integer(nofile) && json_integer_value(nofile) > 1073741816)
		nf_lint_at(l, "limits.nofile", NF_SEV_ERROR,
			   "nofile %lld is above the kernel's nr_open maximum",
			   (long long)json_integer_value(nofile));
	return 0;
}

/* ---- apply: what the image build writes (nodeforge build) ---- */

/* The same limits twice: limits.d for PAM sessions (ssh, adopted by
 * pam_slurm_adopt) and a slurmd drop-in, because slurmd is started by
 * systemd, not through PAM, and jobs inherit slurmd's own limits */
static const struct {
	const char *key, *systemd;
} limit_names[] = {
	{ "nofile", "LimitNOFILE" },
	{ "memlock", "LimitMEMLOCK" },
	{ "stack", "LimitSTACK" },
	{ "nproc", "LimitNPROC" },
	{ "core", "LimitCORE" },
};

static int limit_value(const json_t *v, char *out, size_t outsz, int sysd)
{
	if (json_is_integer(v) && json_integer_value(v) >= 0)
		snprintf(out, outsz, "%lld", (long long)json_integer_value(v));
	else if (json_is_string(v) && !strcmp(json_string_value(v), "unlimited"))
		snprintf(out, outsz, "%s", sysd ? "infinity" : "unlimited");
	else
		return -1;
	return 0;
}

static int apply(struct nf_apply *a, const json_t *sec)
{
	struct nf_buf pam = { 0 }, unit = { 0 };
	char val[32];
	int r;

	nf_apply_header(&pam, "#", "limits");
	nf_apply_header(&unit, "#", "limits");
	nf_buf_printf(&unit, "[Service]\n");
	for (size_t i = 0; i < NF_ARRAY_SIZE(limit_names); i++) {
		const json_t *v = json_object_get(sec, limit_names[i].key);

		if (!v)
			continue;
		if (limit_value(v, val, sizeof(val), 0)) {
			nf_buf_free(&pam);
			nf_buf_free(&unit);
			return nf_fail(a->ctx, NF_E_INVALID,
				       "limits.%s must be a number or 'unlimited'",
				       limit_names[i].key);
		}
		nf_buf_printf(&pam, "*\tsoft\t%s\t%s\n*\thard\t%s\t%s\n",
			      limit_names[i].key, val, limit_names[i].key, val);
		limit_value(v, val, sizeof(val), 1);
		nf_buf_printf(&unit, "%s=%s\n", limit_names[i].systemd, val);
	}
	r = nf_apply_write_buf(a, "/etc/security/limits.d/90-nodeforge.conf",
			       &pam, 0644, 0, 0);
	if (r || !nf_apply_has_daemon(a, "slurmd")) {
		nf_buf_free(&unit);
		return r;
	}
	return nf_apply_write_buf(a, "/etc/systemd/system/slurmd.service.d/"
				  "nodeforge-limits.conf", &unit, 0644, 0, 0);
}

/* ---- end of apply ---- */

/* ---- check: what the verifier checks (nodeforge verify) ---- */

/* ---- end of check ---- */

const struct nf_facet nf_facet_limits = {
	.name = "limits",
	.summary = "ulimits for jobs: limits.d and slurmd's Limit* values",
	.apply = apply,
	.schema = fields,
	.lint = lint,
	.checks = NULL,
};
