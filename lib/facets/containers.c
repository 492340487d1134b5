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

/* enroot.conf (enroot's own "KEY value" syntax, sourced by its shell code,
 * so $(id -u) in a path is expanded per user) and the pyxis plugstack
 * line */
static int apply(struct nf_apply *a, const json_t *sec)
{
	static const struct {
		const char *key, *conf;
	} keys[] = {
		{ "cache_path", "ENROOT_CACHE_PATH" },
		{ "data_path", "ENROOT_DATA_PATH" },
		{ "temp_path", "ENROOT_TEMP_PATH" },
		{ "runtime_path", "ENROOT_RUNTIME_PATH" },
		{ "squash_options", "ENROOT_SQUASH_OPTIONS" },
	};
	const json_t *en = json_object_get(sec, "enroot");
	const json_t *px = json_object_get(sec, "pyxis");
	struct nf_buf b = { 0 };
	int r;

	if (en) {
		const json_t *mh = json_object_get(en, "mount_home");

		nf_apply_header(&b, "#", "containers");
		for (size_t i = 0; i < NF_ARRAY_SIZE(keys); i++) {
			const char *v = json_string_value(json_object_get(en, keys[i].key));

			if (!v)
				continue;
			if (strchr(v, '\n')) {
				nf_buf_free(&b);
				return nf_fail(a->ctx, NF_E_INVALID,
					       "containers.enroot.%s has a newline",
					       keys[i].key);
			}
			nf_buf_printf(&b, "%-24s %s\n", keys[i].conf, v);
		}
		if (json_is_boolean(mh))
			nf_buf_printf(&b, "%-24s %s\n", "ENROOT_MOUNT_HOME",
				      json_is_true(mh) ? "yes" : "no");
		if ((r = nf_apply_write_buf(a, "/etc/enroot/enroot.conf", &b,
					    0644, 0, 0)))
			return r;
	}
	if (px) {
		const char *path = json_string_value(json_object_get(px, "path"));
		const char *k;
		json_t *v;

		if (!path)
			return nf_fail(a->ctx, NF_E_INVALID,
				       "containers.pyxis has no path");
		nf_apply_header(&b, "#", "containers");
		nf_buf_printf(&b, "required %s", path);
		json_object_foreach(json_object_get(px, "args"), k, v) {
			if (json_is_string(v))
				nf_buf_printf(&b, " %s=%s", k, json_string_value(v));
			else if (json_is_integer(v))
				nf_buf_printf(&b, " %s=%lld", k,
					      (long long)json_integer_value(v));
			else if (json_is_boolean(v))
				nf_buf_printf(&b, " %s=%d", k, json_is_true(v));
		}
		nf_buf_printf(&b, "\n");
		if ((r = nf_apply_write_buf(a, "/etc/slurm/plugstack.conf.d/pyxis.conf",
					    &b, 0644, 0, 0)))
			return r;
	}
	return 0;
}

/* ---- end of apply ---- */

/* ---- check: what the verifier checks (nodeforge verify) ---- */

/* ---- end of check ---- */

const struct nf_facet nf_facet_containers = {
	.name = "containers",
	.summary = "enroot and pyxis",
	.apply = apply,
	.schema = fields,
	.lint = lint,
	.checks = NULL,
};
