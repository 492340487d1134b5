/* SPDX-License-Identifier: MIT */
/* cgroup: cgroup v2 unified hierarchy, controllers, and cgroup.conf. */
#include "internal.h"

static const struct nf_field fields[] = {
	{ "controllers", NF_T_STRLIST },
	{ "conf", NF_T_MAP },
	{ 0 }
};

static int boot_args(const json_t *sec, json_t *args)
{
	(void)sec;
	json_array_append_new(args, json_string("systemd.unified_cgroup_hierarchy=1"));
	return 0;
}

static int lint(struct nf_facet_lint *l, const json_t *sec)
{
	const json_t *conf = json_object_get(sec, "conf");
	const char *plugin = json_string_value(json_object_get(conf, "CgroupPlugin"));

	if (plugin && strcmp(plugin, "cgroup/v2") && strcmp(plugin, "autodetect"))
		nf_lint_at(l, "cgroup.conf.CgroupPlugin", NF_SEV_ERROR,
			   "CgroupPlugin '%s': nodeforge nodes run the unified "
			   "hierarchy, use cgroup/v2", plugin);
	if (json_is_false(json_object_get(conf, "ConstrainDevices")))
		nf_lint_at(l, "cgroup.conf.ConstrainDevices", NF_SEV_WARNING,
			   "ConstrainDevices=no lets jobs open GPUs they were "
			   "not allocated");
	return 0;
}

/* ---- apply: what the image build writes (nodeforge build) ---- */

/* cgroup.conf: Slurm reads booleans as yes/no */
static int apply(struct nf_apply *a, const json_t *sec)
{
	const json_t *conf = json_object_get(sec, "conf");
	struct nf_buf b = { 0 };
	const char *k;
	json_t *v;

	if (!conf)
		return 0;
	nf_apply_header(&b, "#", "cgroup");
	json_object_foreach((json_t *)conf, k, v) {
		if (json_is_boolean(v))
			nf_buf_printf(&b, "%s=%s\n", k, json_is_true(v) ? "yes" : "no");
		else if (json_is_integer(v))
			nf_buf_printf(&b, "%s=%lld\n", k, (long long)json_integer_value(v));
		else if (json_is_real(v))
			nf_buf_printf(&b, "%s=%g\n", k, json_real_value(v));
		else if (json_is_string(v) && !strchr(json_string_value(v), '\n'))
			nf_buf_printf(&b, "%s=%s\n", k, json_string_value(v));
		else {
			nf_buf_free(&b);
			return nf_fail(a->ctx, NF_E_INVALID,
				       "cgroup.conf.%s has a value cgroup.conf "
				       "cannot hold", k);
		}
	}
	return nf_apply_write_buf(a, "/etc/slurm/cgroup.conf", &b, 0644, 0, 0);
}

/* ---- end of apply ---- */

/* ---- check: what the verifier checks (nodeforge verify) ---- */

static int check_v2(struct nf_vcheck *c, const json_t *sec)
{
	int r = nf_v_cgroup2(c, "/sys/fs/cgroup");

	(void)sec;
	nf_v_expect(c, "/sys/fs/cgroup is a cgroup2 file system");
	if (r == 1) {
		nf_v_seen(c, "cgroup2");
		return NF_V_PASS;
	}
	nf_v_seen(c, r < 0 ? "cannot inspect /sys/fs/cgroup" : "not cgroup2 (legacy or hybrid hierarchy)");
	nf_v_remedy(c, "add systemd.unified_cgroup_hierarchy=1 to the kernel command line and reboot");
	return NF_V_FAIL;
}

/* Controllers of the profile missing from a cgroup.* list file */
static int missing_in(struct nf_vcheck *c, const json_t *sec, const char *file,
		      char *miss, size_t sz)
{
	char *buf = NULL;
	size_t i;
	json_t *x;
	int n = 0;

	*miss = '\0';
	if (nf_v_read(c, NF_VSYS, file, 4096, &buf, NULL))
		return -1;
	json_array_foreach(json_object_get(sec, "controllers"), i, x) {
		const char *name = json_string_value(x);
		size_t len = name ? strlen(name) : 0;
		int found = 0;

		for (const char *p = buf; name && *p;) {
			p += strspn(p, " \n");
			if (!strncmp(p, name, len) && (!p[len] || strchr(" \n", p[len])))
				found = 1;
			p += strcspn(p, " \n");
		}
		if (name && !found) {
			snprintf(miss + strlen(miss), sz - strlen(miss), "%s%s",
				 *miss ? " " : "", name);
			n++;
		}
	}
	free(buf);
	return n;
}

static int check_enabled(struct nf_vcheck *c, const json_t *sec)
{
	char miss[256];
	int n = missing_in(c, sec, "/sys/fs/cgroup/cgroup.controllers", miss, sizeof(miss));

	nf_v_expect(c, "controllers available at the root");
	if (n == 0) {
		nf_v_seen(c, "all available");
		return NF_V_PASS;
	}
	nf_v_seen(c, n < 0 ? "no cgroup.controllers" : "missing: %s", miss);
	nf_v_remedy(c, "check the kernel command line for cgroup_disable= and the kernel "
		    "config for the controllers");
	return NF_V_FAIL;
}

static int check_delegated(struct nf_vcheck *c, const json_t *sec)
{
	char miss[256];
	int n;

	/* systemd enables controllers below the root for the units that ask
	 * (slurmd's Delegate=yes); a role without slurmd has nothing to
	 * delegate them to */
	if (!nf_profile_runs(nf_v_profile(c), "slurmd"))
		return nf_v_skip(c, "the role runs no slurmd");
	n = missing_in(c, sec, "/sys/fs/cgroup/cgroup.subtree_control", miss,
		       sizeof(miss));
	nf_v_expect(c, "controllers delegated below the root (cgroup.subtree_control)");
	if (n == 0) {
		nf_v_seen(c, "all delegated");
		return NF_V_PASS;
	}
	nf_v_seen(c, n < 0 ? "no cgroup.subtree_control" : "not delegated: %s", miss);
	nf_v_remedy(c, "set Delegate=yes in slurmd.service and systemctl daemon-reload && "
		    "systemctl restart slurmd");
	return NF_V_FAIL;
}

static int check_conf(struct nf_vcheck *c, const json_t *sec)
{
	const json_t *conf = json_object_get(sec, "conf");
	char *buf = NULL, want[256], bad[512] = "";
	const char *k;
	json_t *x;
	int n = 0;

	if (!json_object_size(conf))
		return nf_v_skip(c, "the profile sets no cgroup.conf");
	nf_v_expect(c, "/etc/slurm/cgroup.conf as the profile says");
	if (nf_v_read(c, NF_VROOT, "/etc/slurm/cgroup.conf", 256 * 1024, &buf, NULL)) {
		nf_v_seen(c, "no /etc/slurm/cgroup.conf");
		nf_v_remedy(c, "on the build host: nodeforge build %s, then boot this node "
			    "from the new image", nf_v_role(c));
		return NF_V_FAIL;
	}
	json_object_foreach((json_t *)conf, k, x) {
		char *have = nf_v_conf_get(buf, k, "= \t");

		nf_v_json_str(x, want, sizeof(want));
		if (!have || strcasecmp(have, want)) {
			if (n++ < 4)
				snprintf(bad + strlen(bad), sizeof(bad) - strlen(bad),
					 "%s%s=%s", *bad ? ", " : "", k, have ? have : "(unset)");
		}
		free(have);
	}
	free(buf);
	if (!n) {
		nf_v_seen(c, "%zu settings match", json_object_size(conf));
		return NF_V_PASS;
	}
	nf_v_seen(c, "%s", bad);
	nf_v_remedy(c, "nodeforge profile show %s --json | jq .cgroup.conf   # fix "
		    "/etc/slurm/cgroup.conf to match, then scontrol reconfigure",
		    nf_v_role(c));
	return NF_V_FAIL;
}

static const struct nf_check_def defs[] = {
	{ "cgroup.v2", "the unified cgroup hierarchy", NULL, 0, 0, check_v2,
	  "kernel.cmdline.running" },
	{ "cgroup.controllers.enabled", "the profile's controllers exist", "cgroup.v2", 0, 0,
	  check_enabled },
	{ "cgroup.controllers.delegated", "the controllers are delegated", "cgroup.controllers.enabled",
	  0, 0, check_delegated },
	{ "cgroup.conf", "cgroup.conf as the profile says", NULL, NF_CHECK_STATIC, 0, check_conf },
};

static const struct nf_checkset checks = NF_CHECKSET(defs);

/* ---- end of check ---- */

const struct nf_facet nf_facet_cgroup = {
	.name = "cgroup",
	.summary = "cgroup v2 and cgroup.conf",
	.apply = apply,
	.schema = fields,
	.lint = lint,
	.boot_args = boot_args,
	.checks = &checks,
};
