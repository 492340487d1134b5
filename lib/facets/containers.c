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

static int check_enroot(struct nf_vcheck *c, const json_t *sec)
{
	const char *want = json_string_value(json_object_get(json_object_get(sec, "enroot"),
							     "version"));
	const char *argv[] = { "enroot", "version", NULL };
	char *out = NULL;
	int st = 0, r;

	if (!json_object_get(sec, "enroot"))
		return nf_v_skip(c, "the profile has no enroot");
	nf_v_expect(c, "enroot version %s", want ? want : "(any)");
	r = nf_v_exec(c, argv, NULL, &out, &st);
	if (r == NF_E_TIMEOUT)
		return NF_V_HUNG;
	if (r) {
		nf_v_seen(c, "cannot run enroot: %s", r < 0 ? strerror(-r) : nf_strerror(r));
		nf_v_remedy(c, "install enroot %s (rebuild the image)", want ? want : "");
		return NF_V_FAIL;
	}
	out[strcspn(out, "\n")] = '\0';
	nf_v_seen(c, "exit %d: %.100s", st, out);
	r = !st && (!want || !strncmp(out, want, strlen(want)));
	free(out);
	if (r)
		return NF_V_PASS;
	nf_v_remedy(c, "enroot version; reinstall enroot %s", want ? want : "");
	return NF_V_FAIL;
}

static const char *pyxis_path(const json_t *sec)
{
	return json_string_value(json_object_get(json_object_get(sec, "pyxis"), "path"));
}

static int check_pyxis(struct nf_vcheck *c, const json_t *sec)
{
	const char *p = pyxis_path(sec);
	struct stat st;

	if (!p)
		return nf_v_skip(c, "the profile has no pyxis");
	nf_v_expect(c, "%s", p);
	if (nf_v_stat(c, NF_VROOT, p, &st) == 0 && S_ISREG(st.st_mode)) {
		nf_v_seen(c, "present");
		return NF_V_PASS;
	}
	nf_v_seen(c, "missing");
	nf_v_remedy(c, "rebuild the image: pyxis is compiled against the image's Slurm");
	return NF_V_FAIL;
}

static int conf_lists(const char *buf, const char *word)
{
	for (const char *l = buf; l && *l;) {
		const char *e = strchr(l, '\n');
		size_t len = e ? (size_t)(e - l) : strlen(l);
		const char *p = l + strspn(l, " \t");

		if (*p != '#' && memmem(p, len - (size_t)(p - l), word, strlen(word)))
			return 1;
		l = e ? e + 1 : NULL;
	}
	return 0;
}

static int check_plugstack(struct nf_vcheck *c, const json_t *sec)
{
	char *buf = NULL, **names = NULL, path[512];
	int found = 0, n;

	if (!pyxis_path(sec))
		return nf_v_skip(c, "the profile has no pyxis");
	nf_v_expect(c, "spank_pyxis.so listed in plugstack.conf");
	if (!nf_v_read(c, NF_VROOT, "/etc/slurm/plugstack.conf", 64 * 1024, &buf, NULL)) {
		found = conf_lists(buf, "spank_pyxis.so");
		free(buf);
	}
	n = nf_v_list(c, NF_VROOT, "/etc/slurm/plugstack.conf.d", &names, 256);
	for (int i = 0; i < n && !found; i++) {
		snprintf(path, sizeof(path), "/etc/slurm/plugstack.conf.d/%.200s", names[i]);
		if (!nf_v_read(c, NF_VROOT, path, 64 * 1024, &buf, NULL)) {
			found = conf_lists(buf, "spank_pyxis.so");
			free(buf);
		}
	}
	if (n > 0)
		nf_strv_free(names, (size_t)n);
	nf_v_seen(c, found ? "listed" : "not listed");
	if (found)
		return NF_V_PASS;
	nf_v_remedy(c, "echo 'required %s' > /etc/slurm/plugstack.conf.d/pyxis.conf",
		    pyxis_path(sec));
	return NF_V_FAIL;
}

static int check_userns(struct nf_vcheck *c, const json_t *sec)
{
	char *buf = NULL;
	long max = -1, clone = 1;

	(void)sec;
	nf_v_expect(c, "user namespaces enabled (user.max_user_namespaces > 0)");
	if (!nf_v_read(c, NF_VSYS, "/proc/sys/user/max_user_namespaces", 64, &buf, NULL)) {
		max = strtol(buf, NULL, 10);
		free(buf);
	}
	if (!nf_v_read(c, NF_VSYS, "/proc/sys/kernel/unprivileged_userns_clone", 64, &buf, NULL)) {
		clone = strtol(buf, NULL, 10);
		free(buf);
	}
	nf_v_seen(c, "max_user_namespaces=%ld%s", max, clone ? "" : ", unprivileged_userns_clone=0");
	if (max > 0 && clone)
		return NF_V_PASS;
	nf_v_remedy(c, "sysctl -w user.max_user_namespaces=65536 kernel.unprivileged_userns_clone=1");
	return NF_V_FAIL;
}

static const struct nf_check_def defs[] = {
	{ "containers.enroot.runs", "enroot runs at the profile's version", NULL,
	  NF_CHECK_PROBE, 3000, check_enroot },
	{ "containers.pyxis.present", "the pyxis plugin is installed", NULL, NF_CHECK_STATIC, 0,
	  check_pyxis },
	{ "containers.pyxis.plugstack", "pyxis is listed in plugstack.conf",
	  "containers.pyxis.present", NF_CHECK_STATIC, 0, check_plugstack },
	{ "containers.userns", "user namespaces are enabled", NULL, 0, 0, check_userns },
	/* where the cache lives (mount, file system, disk): the storage
	 * facet's storage.enroot_cache.* checks */
};

static const struct nf_checkset checks = NF_CHECKSET(defs);

/* ---- end of check ---- */

const struct nf_facet nf_facet_containers = {
	.name = "containers",
	.summary = "enroot and pyxis",
	.apply = apply,
	.schema = fields,
	.lint = lint,
	.checks = &checks,
};
