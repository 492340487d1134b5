/* SPDX-License-Identifier: MIT */
/* fabric_manager: NVIDIA Fabric Manager on NVSwitch systems; its version
 * must equal the driver's or the fabric never comes up. */
#include "internal.h"

#include <ctype.h>

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

static int check_active(struct nf_vcheck *c, const json_t *sec)
{
	char state[64] = "";
	int r;

	if (json_is_false(json_object_get(sec, "enabled")))
		return nf_v_skip(c, "fabric manager disabled in the profile");
	nf_v_expect(c, "nvidia-fabricmanager active");
	r = nf_v_service_active(c, "nvidia-fabricmanager", state, sizeof(state));
	if (r == NF_E_TIMEOUT)
		return NF_V_HUNG;
	if (r == 1) {
		nf_v_seen(c, "active");
		return NF_V_PASS;
	}
	nf_v_seen(c, r < 0 ? "cannot ask systemctl" : "%s", state);
	nf_v_remedy(c, "systemctl enable --now nvidia-fabricmanager; journalctl -u "
		    "nvidia-fabricmanager -n 30");
	return NF_V_FAIL;
}

static int check_version(struct nf_vcheck *c, const json_t *sec)
{
	const char *argv[] = { "nv-fabricmanager", "--version", NULL };
	const char *drv = json_string_value(json_object_get(nf_v_cache_get(c, "gpu.nvml"),
							    "driver_version"));
	char *out = NULL, *v;
	int st = 0, r;

	if (!json_is_true(json_object_get(sec, "match_driver")))
		return nf_v_skip(c, "the profile does not pin the version");
	if (!drv)
		return nf_v_skip(c, "driver version unknown");
	nf_v_expect(c, "fabric manager %s (the driver's version)", drv);
	/* the version goes into a pasteable remedy: digits and dots only */
	if (!isdigit((unsigned char)*drv) || drv[strspn(drv, "0123456789.")]) {
		nf_v_seen(c, "the driver reports version '%s', which is not a "
			  "version number", drv);
		nf_v_remedy(c, "nvidia-smi -q | grep -i 'driver version'   # "
			    "reinstall the driver if it is not N.N.N");
		return NF_V_FAIL;
	}
	r = nf_v_exec(c, argv, NULL, &out, &st);
	if (r == NF_E_TIMEOUT)
		return NF_V_HUNG;
	if (r) {
		nf_v_seen(c, "cannot run nv-fabricmanager: %s", r < 0 ? strerror(-r) : nf_strerror(r));
		nf_v_remedy(c, "apt-get install nvidia-fabricmanager-%.*s=%s*",
			    (int)strcspn(drv, "."), drv, drv);
		return NF_V_FAIL;
	}
	/* "Fabric Manager version is : 550.90.07" */
	v = strpbrk(out, "0123456789");
	if (v)
		v[strspn(v, "0123456789.")] = '\0';
	nf_v_seen(c, "fabric manager %s", v ? v : "?");
	r = v && !strcmp(v, drv);
	free(out);
	if (r)
		return NF_V_PASS;
	nf_v_remedy(c, "apt-get install nvidia-fabricmanager-%.*s=%s*   # must equal the driver",
		    (int)strcspn(drv, "."), drv, drv);
	return NF_V_FAIL;
}

static const struct nf_check_def defs[] = {
	{ "fabric_manager.active", "nvidia-fabricmanager runs", NULL, NF_CHECK_PROBE, 2000,
	  check_active, "system.init",
	  .needs = "nvswitch" },
	{ "fabric_manager.version", "fabric manager version equals the driver's",
	  "gpu.driver", NF_CHECK_PROBE, 2000, check_version,
	  .needs = "nvswitch" },
};

static const struct nf_checkset checks = NF_CHECKSET(defs);

/* ---- end of check ---- */

const struct nf_facet nf_facet_fabric_manager = {
	.name = "fabric_manager",
	.summary = "NVIDIA Fabric Manager",
	.apply = apply,
	.schema = fields,
	.lint = lint,
	.checks = &checks,
};
