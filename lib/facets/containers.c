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

/* The mount point that holds `path` in the sysroot's /proc/mounts */
static int mount_of(struct nf_vcheck *c, const char *path, char *mnt, size_t mntsz,
		    char *fs, size_t fssz)
{
	char *buf = NULL, *save = NULL;
	size_t best = 0;

	if (nf_v_read(c, NF_VSYS, "/proc/mounts", 1 << 20, &buf, NULL))
		return -1;
	for (char *l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char dev[256], mp[512], type[64];
		size_t n;

		if (sscanf(l, "%255s %511s %63s", dev, mp, type) != 3)
			continue;
		n = strlen(mp);
		if (!strncmp(path, mp, n) && (path[n] == '/' || !path[n] || n == 1) && n >= best) {
			best = n;
			snprintf(mnt, mntsz, "%s", mp);
			snprintf(fs, fssz, "%s", type);
		}
	}
	free(buf);
	return best ? 0 : -1;
}

static int check_cache(struct nf_vcheck *c, const json_t *sec)
{
	const char *cache = json_string_value(json_object_get(json_object_get(sec, "enroot"),
							      "cache_path"));
	const json_t *st = json_object_get(json_object_get(nf_v_profile(c), "storage"),
					   "enroot_cache");
	const char *want = json_string_value(json_object_get(st, "mount"));
	char mnt[512], fs[64];

	if (!cache || !want)
		return nf_v_skip(c, "the profile sets no enroot cache device");
	nf_v_expect(c, "%s on the %s mount", cache, want);
	if (mount_of(c, cache, mnt, sizeof(mnt), fs, sizeof(fs))) {
		nf_v_seen(c, "no mount holds it");
		return NF_V_FAIL;
	}
	nf_v_seen(c, "on %s (%s)", mnt, fs);
	if (!strcmp(mnt, want))
		return NF_V_PASS;
	nf_v_remedy(c, "systemctl start %s.mount   # or: nodeforge disk --enroot-cache",
		    want[1] ? want + 1 : "-");
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
	{ "containers.enroot.cache", "the enroot cache is on the expected device", NULL, 0, 0,
	  check_cache },
};

static const struct nf_checkset checks = NF_CHECKSET(defs);

/* ---- end of check ---- */

const struct nf_facet nf_facet_containers = {
	.name = "containers",
	.summary = "enroot and pyxis",
	.apply = NULL,
	.schema = fields,
	.lint = lint,
	.checks = &checks,
};
