/* SPDX-License-Identifier: MIT */
/* fabric_manager: NVIDIA Fabric Manager on NVSwitch systems; its version
 * must equal the driver's or the fabric never comes up. */
#include "internal.h"

static const struct nf_field fields[] = {
	{ "enabled", NF_T_BOOL },
	{ "package", NF_T_STR },
	{ "match_driver", NF_T_BOOL },
	{ 0 }
};

static int lint(struct nf_facet_lint *l, const json_t *sec)
{
	const json_t *gpu = json_object_get(nf_profile_json(l->profile), "gpu");

	if (json_is_true(json_object_get(gpu, "nvswitch")) &&
	    !json_is_true(json_object_get(sec, "enabled")))
		nf_lint_at(l, "fabric_manager.enabled", NF_SEV_ERROR,
			   "NVSwitch GPUs need nvidia-fabricmanager: without it "
			   "CUDA fails to initialise");
	return 0;
}

/* ---- apply: what the image build writes (nodeforge build) ---- */

/* ---- end of apply ---- */

/* ---- check: what the verifier checks (nodeforge verify) ---- */

/* ---- end of check ---- */

const struct nf_facet nf_facet_fabric_manager = {
	.name = "fabric_manager",
	.summary = "NVIDIA Fabric Manager",
	.apply = NULL,
	.schema = fields,
	.lint = lint,
	.checks = NULL,
};
