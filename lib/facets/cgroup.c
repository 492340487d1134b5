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

/* ---- end of apply ---- */

/* ---- check: what the verifier checks (nodeforge verify) ---- */

/* ---- end of check ---- */

const struct nf_facet nf_facet_cgroup = {
	.name = "cgroup",
	.summary = "cgroup v2 and cgroup.conf",
	.apply = NULL,
	.schema = fields,
	.lint = lint,
	.boot_args = boot_args,
	.checks = NULL,
};
