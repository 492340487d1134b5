/* SPDX-License-Identifier: MIT */
/* containers: enroot (runtime, cache layout) and the pyxis SPANK plugin. */
#include "internal.h"

static const struct nf_field enroot_fields[] = {
	{ "version", NF_T_STR },
	{ "cache_path", NF_T_PATH },
	{ "data_path", NF_T_PATH },
	{ "temp_path", NF_T_PATH },
	{ "runtime_path", NF_T_STR },
	{ "squash_options", NF_T_STR },
	{ "mount_home", NF_T_BOOL },
	{ 0 }
};

static const struct nf_field pyxis_fields[] = {
	{ "version", NF_T_STR },
	{ "path", NF_T_PATH },
	{ "args", NF_T_MAP },
	{ 0 }
};

static const struct nf_field fields[] = {
	{ "enroot", NF_T_OBJ, enroot_fields },
	{ "pyxis", NF_T_OBJ, pyxis_fields },
	{ 0 }
};

static int lint(struct nf_facet_lint *l, const json_t *sec)
{
	const json_t *en = json_object_get(sec, "enroot");
	const char *cache = json_string_value(json_object_get(en, "cache_path"));
	const char *data = json_string_value(json_object_get(en, "data_path"));

	if (cache && data && !strcmp(cache, data))
		nf_lint_at(l, "containers.enroot.data_path", NF_SEV_ERROR,
			   "enroot data_path and cache_path are both '%s': "
			   "per-job overlays would fill the image cache", data);
	if (json_object_get(sec, "pyxis") && !en)
		nf_lint_at(l, "containers.pyxis", NF_SEV_ERROR,
			   "pyxis needs enroot on the node");
	return 0;
}

/* ---- apply: what the image build writes (nodeforge build) ---- */

/* ---- end of apply ---- */

/* ---- check: what the verifier checks (nodeforge verify) ---- */

/* ---- end of check ---- */

const struct nf_facet nf_facet_containers = {
	.name = "containers",
	.summary = "enroot and pyxis",
	.apply = NULL,
	.schema = fields,
	.lint = lint,
	.checks = NULL,
};
