/* SPDX-License-Identifier: MIT */
/* storage: local NVMe for the enroot cache, picked by a disk rule. */
#include "internal.h"

static const struct nf_field cache_fields[] = {
	{ "rule", NF_T_STR },
	{ "mount", NF_T_PATH, .required = true },
	{ "fs", NF_T_STR, .choices = (const char *const[]){ "xfs", "ext4", "tmpfs", NULL } },
	{ 0 }
};

static const struct nf_field fields[] = {
	{ "enroot_cache", NF_T_OBJ, cache_fields },
	{ "install_disk", NF_T_STR },
	{ 0 }
};

static int lint(struct nf_facet_lint *l, const json_t *sec)
{
	const json_t *ec = json_object_get(sec, "enroot_cache");
	const char *mount = json_string_value(json_object_get(ec, "mount"));
	const char *cache = json_string_value(json_object_get(json_object_get(
		json_object_get(nf_profile_json(l->profile), "containers"),
		"enroot"), "cache_path"));

	if (mount && cache && strncmp(cache, mount, strlen(mount)))
		nf_lint_at(l, "storage.enroot_cache.mount", NF_SEV_ERROR,
			   "enroot cache_path '%s' is not under the cache mount '%s'",
			   cache, mount);
	return 0;
}

/* ---- apply: what the image build writes (nodeforge build) ---- */

/* ---- end of apply ---- */

/* ---- check: what the verifier checks (nodeforge verify) ---- */

/* ---- end of check ---- */

const struct nf_facet nf_facet_storage = {
	.name = "storage",
	.summary = "local NVMe for the enroot cache",
	.apply = NULL,
	.schema = fields,
	.lint = lint,
	.checks = NULL,
};
