/* SPDX-License-Identifier: MIT */
/* fabric_manager: NVIDIA Fabric Manager on NVSwitch systems; its version
 * must equal the driver's or the fabric never comes up. */
#include "internal.h"

#include <ctype.h>

static const struct nf_field fields[] = {
	{ "enabled", NF_T_BOOL },
	/* the package, named as NVIDIA names it for a driver branch
	 * (nvidia-fabricmanager-550); its unit is nvidia-fabricmanager */
	{ "package", NF_T_STR },
	{ "match_driver", NF_T_BOOL },
	{ 0 }
};

#define FM_UNIT "nvidia-fabricmanager"

/* The fabric manager runs where the profile enables it on NVSwitch GPUs:
 * on other systems it exits at start (no NVSwitch to manage), so a role
 * whose gpu.nvswitch is false has none, whatever 'enabled' says */
static int fm_on(const json_t *prof, const json_t *sec)
{
	return json_is_true(json_object_get(sec, "enabled")) &&
	       json_is_true(nf_profile_get(prof, "gpu.nvswitch"));
}

const char *nf_fabric_manager_unit(const json_t *prof)
{
	return fm_on(prof, json_object_get(prof, "fabric_manager")) ? FM_UNIT : NULL;
}

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
	struct nf_buf b = { 0 };
	int r;

	if (!fm_on(a->prof, sec))
		return 0;
	if ((r = nf_apply_enable(a, FM_UNIT)))
		return r;
	if (!nf_apply_has_daemon(a, "slurmd"))
		return 0;
	nf_apply_header(&b, "#", "fabric_manager");
	nf_buf_printf(&b, "[Unit]\nWants=%s.service\nAfter=%s.service\n", FM_UNIT,
		      FM_UNIT);
	return nf_apply_write_buf(a, "/etc/systemd/system/slurmd.service.d/"
				  "nodeforge-fabricmanager.conf", &b, 0644, 0, 0);
}

/* ---- end of apply ---- */

/* ---- check: what the verifier checks (nodeforge verify) ---- */

static int check_active(struct nf_vcheck *c, const json_t *sec)
{
	char state[64] = "";
	int r;

	if (!json_is_true(nf_profile_get(nf_v_profile(c), "gpu.nvswitch")))
		return nf_v_skip(c, "no NVSwitch in this role (gpu.nvswitch: false)");
	if (!fm_on(nf_v_profile(c), sec))
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

	if (!fm_on(nf_v_profile(c), sec))
		return nf_v_skip(c, "no fabric manager in this role");
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
		nf_v_remedy(c, "on the build host: pin the site's "
			    "nvidia-fabricmanager-%.*s %s deb in the site file "
			    "(artifacts:) and rebuild this role",
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
	nf_v_remedy(c, "on the build host: the profile's fabric manager must be "
		    "the driver's version: nvidia-fabricmanager-%.*s %s (the "
		    "fabric manager artifact's version), pinned in the site "
		    "file; rebuild this role", (int)strcspn(drv, "."), drv, drv);
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

/* The fabric checks read what the fabric manager set up */
static size_t gate_units(const struct nf_apply *a, const json_t *sec,
			 struct nf_gate_unit *out, size_t max)
{
	if (!max || !fm_on(a->prof, sec))
		return 0;
	out[0] = (struct nf_gate_unit){ FM_UNIT, NF_GATE_AFTER };
	return 1;
}

const struct nf_facet nf_facet_fabric_manager = {
	.name = "fabric_manager",
	.summary = "NVIDIA Fabric Manager",
	.apply = apply,
	.schema = fields,
	.lint = lint,
	.checks = &checks,
	.gate_units = gate_units,
};
