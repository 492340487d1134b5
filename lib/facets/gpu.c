/* SPDX-License-Identifier: MIT */
/* gpu: what the node's GPUs must be (count, type, ECC, persistence). */
#include "internal.h"

static const struct nf_field fields[] = {
	{ "count", NF_T_INT, .required = true },
	{ "type", NF_T_STR, .required = true },
	{ "ecc", NF_T_BOOL },
	{ "persistence", NF_T_BOOL },
	{ "nvswitch", NF_T_BOOL },
	{ "nvlink", NF_T_BOOL },
	{ "driver", NF_T_STR },
	{ 0 }
};

static int lint(struct nf_facet_lint *l, const json_t *sec)
{
	const json_t *slurm = json_object_get(nf_profile_json(l->profile), "slurm");
	json_int_t count = json_integer_value(json_object_get(sec, "count"));
	const char *type = json_string_value(json_object_get(sec, "type"));
	json_int_t declared = 0;
	size_t i;
	json_t *g;

	if (count < 1 || count > 64)
		nf_lint_at(l, "gpu.count", NF_SEV_ERROR,
			   "gpu count %lld is outside 1-64", (long long)count);
	json_array_foreach(json_object_get(slurm, "gres"), i, g) {
		const char *name = json_string_value(json_object_get(g, "name"));
		const char *gt = json_string_value(json_object_get(g, "type"));

		if (!name || strcmp(name, "gpu"))
			continue;
		declared += json_object_get(g, "count")
				    ? json_integer_value(json_object_get(g, "count")) : 1;
		if (gt && type && strcmp(gt, type))
			nf_lint_at(l, "gpu.type", NF_SEV_ERROR,
				   "gpu type '%s' differs from GRES type '%s'",
				   type, gt);
	}
	if (declared && declared != count)
		nf_lint_at(l, "gpu.count", NF_SEV_ERROR,
			   "gpu count %lld differs from the %lld GPUs declared as GRES",
			   (long long)count, (long long)declared);
	return 0;
}

/* ---- apply: what the image build writes (nodeforge build) ---- */

/* ---- end of apply ---- */

/* ---- check: what the verifier checks (nodeforge verify) ---- */

/* ---- end of check ---- */

const struct nf_facet nf_facet_gpu = {
	.name = "gpu",
	.summary = "GPU count, type, ECC, row remapping, persistence",
	.apply = NULL,
	.schema = fields,
	.lint = lint,
	.checks = NULL,
};
