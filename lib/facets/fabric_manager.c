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

/* NVSwitch systems: fabric manager enabled, and started before slurmd */
static int apply(struct nf_apply *a, const json_t *sec)
{
	const char *pkg = json_string_value(json_object_get(sec, "package"));
	char unit[128];
	struct nf_buf b = { 0 };
	int r;

	if (!json_is_true(json_object_get(sec, "enabled")))
		return 0;
	snprintf(unit, sizeof(unit), "%s", pkg && !strchr(pkg, '/') ? pkg
		 : "nvidia-fabricmanager");
	if ((r = nf_apply_enable(a, unit)))
		return r;
	if (!nf_apply_has_daemon(a, "slurmd"))
		return 0;
	nf_apply_header(&b, "#", "fabric_manager");
	nf_buf_printf(&b, "[Unit]\nWants=%s.service\nAfter=%s.service\n", unit,
		      unit);
	return nf_apply_write_buf(a, "/etc/systemd/system/slurmd.service.d/"
				  "nodeforge-fabricmanager.conf", &b, 0644, 0, 0);
}

/* ---- end of apply ---- */

/* ---- check: what the verifier checks (nodeforge verify) ---- */

/* ---- end of check ---- */

const struct nf_facet nf_facet_fabric_manager = {
	.name = "fabric_manager",
	.summary = "NVIDIA Fabric Manager",
	.apply = apply,
	.schema = fields,
	.lint = lint,
	.checks = NULL,
};
