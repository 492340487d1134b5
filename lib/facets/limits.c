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

/* ---- end of apply ---- */

/* ---- check: what the verifier checks (nodeforge verify) ---- */

/* ---- end of check ---- */

const struct nf_facet nf_facet_limits = {
	.name = "limits",
	.summary = "ulimits for jobs: limits.d and slurmd's Limit* values",
	.apply = NULL,
	.schema = fields,
	.lint = lint,
	.checks = NULL,
};
