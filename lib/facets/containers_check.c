/* SPDX-License-Identifier: MIT */
/* containers: what the verifier checks (nodeforge verify) of enroot and
 * pyxis: the shared directories, enroot.conf, its helpers and the
 * container's root, pyxis and plugstack.conf, user namespaces; GPU
 * containers in containers_nvidia.c. */
#include "containers_int.h"

#include <unistd.h>

/* ---- check: what the verifier checks (nodeforge verify) ---- */

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

/* The directories enroot's users share: 1777 and owned by root, or by the
 * owner of the root the verifier reads (root on a node; whoever made a
 * fixture tree in tests), so no user can delete another's directories.
 * On an unbooted image root (/run is empty there) the tmpfiles.d file
 * that makes them at boot. */
static int check_dirs(struct nf_vcheck *c, const json_t *sec)
{
	char dirs[NF_ENROOT_NKEYS][NF_ENROOT_DIR_MAX], *tf = NULL;
	struct nf_buf want = { 0 }, seen = { 0 };
	const char *bad = NULL;
	struct stat st, top;
	int n, v;

	if (!json_object_get(sec, "enroot"))
		return nf_v_skip(c, "the profile has no enroot");
	if ((n = nf_containers_shared_dirs(sec, dirs, &bad)) < 0) {
		nf_v_seen(c, "containers.enroot.%s cannot be a tmpfiles.d path", bad);
		nf_v_remedy(c, "nodeforge lint   # fix containers.enroot.%s", bad);
		return NF_V_FAIL;
	}
	if (!n)
		return nf_v_skip(c, "no enroot path is shared between users");
	if (nf_v_stat(c, NF_VROOT, "/", &top))
		top.st_uid = 0;
	if (nf_v_static(c) && nf_v_read(c, NF_VROOT, NF_ENROOT_TMPFILES, 64 * 1024, &tf, NULL))
		nf_buf_printf(&seen, "%s missing", NF_ENROOT_TMPFILES);
	for (int i = 0; i < n && !(nf_v_static(c) && !tf); i++) {
		char line[NF_ENROOT_DIR_MAX + 32];
		const char *why = NULL;

		if (nf_v_static(c)) {
			snprintf(line, sizeof(line), "d %s 1777 root root", dirs[i]);
			if (!conf_lists(tf, line))
				why = "not in " NF_ENROOT_TMPFILES;
		} else if (nf_v_stat(c, NF_VROOT, dirs[i], &st)) {
			why = "missing";
		} else if (!S_ISDIR(st.st_mode)) {
			why = "not a directory";
		} else if ((st.st_mode & 07777) != 01777 ||
			   (st.st_uid != 0 && st.st_uid != top.st_uid)) {
			nf_buf_printf(&seen, "%s%s mode %04o owner %u", seen.len ? ", " : "",
				      dirs[i], (unsigned)st.st_mode & 07777,
				      (unsigned)st.st_uid);
		}
		if (why)
			nf_buf_printf(&seen, "%s%s %s", seen.len ? ", " : "", dirs[i], why);
	}
	free(tf);
	for (int i = 0; i < n; i++)
		nf_buf_printf(&want, "%s ", dirs[i]);
	nf_v_expect(c, "%smode 1777, owner root", want.s);
	if (want.err || seen.err) {
		nf_v_seen(c, "out of memory");
		v = NF_V_FAIL;
	} else if (!seen.len) {
		nf_v_seen(c, "%d director%s 1777 root", n, n == 1 ? "y" : "ies");
		v = NF_V_PASS;
	} else {
		nf_v_seen(c, "%s", seen.s);
		if (nf_v_static(c))
			nf_v_remedy(c, "nodeforge build %s   # the containers facet writes %s",
				    nf_v_role(c), NF_ENROOT_TMPFILES);
		else
			nf_v_remedy(c, "systemd-tmpfiles --create %s", NF_ENROOT_TMPFILES);
		v = NF_V_FAIL;
	}
	nf_buf_free(&want);
	nf_buf_free(&seen);
	return v;
}

/* Run as nobody: as root, enroot's own `mkdir -p` of its paths would
 * make root-owned 0700 directories where users need theirs, and only a
 * user's run proves that users can run it */
static int check_enroot(struct nf_vcheck *c, const json_t *sec)
{
	const char *want = json_string_value(json_object_get(json_object_get(sec, "enroot"),
							     "version"));
	const char *argv[] = { "enroot", "version", NULL };
	char *out = NULL;
	int st = 0, r;

	if (!json_object_get(sec, "enroot"))
		return nf_v_skip(c, "the profile has no enroot");
	nf_v_expect(c, "enroot version %s as uid %d", want ? want : "(any)",
		    geteuid() ? (int)geteuid() : NF_V_NOBODY);
	r = nf_v_exec_unprivileged(c, argv, &out, &st);
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
	if (!r && strstr(out, "ermission denied"))
		nf_v_remedy(c, "systemd-tmpfiles --create %s; ls -ld /run/enroot   # enroot's "
			    "directories must be per user under 1777 parents", NF_ENROOT_TMPFILES);
	else if (!r)
		nf_v_remedy(c, "enroot version; reinstall enroot %s", want ? want : "");
	free(out);
	return r ? NF_V_PASS : NF_V_FAIL;
}

/* enroot's compiled helpers, beside the enroot script: one whose ELF
 * interpreter the image lacks cannot be executed ("enroot-nsenter: cannot
 * execute: required file not found" at every container start), which
 * `enroot version`, a shell script, never shows.  Read, not run, so it
 * holds for an image root (ci) as for a node. */
static int check_helpers(struct nf_vcheck *c, const json_t *sec)
{
	static const char *const helpers[] = {
		"aufs2ovlfs", "mksquashovlfs", "mount", "nsenter", "switchroot",
	};
	static const char *const dirs[] = { "/usr/bin", "/usr/local/bin" };
	const char *dir = NULL;
	struct nf_buf bad = { 0 };
	char path[128], why[512], loader[256] = "";
	struct stat st;
	int v;

	if (!json_object_get(sec, "enroot"))
		return nf_v_skip(c, "the profile has no enroot");
	for (size_t i = 0; i < NF_ARRAY_SIZE(dirs) && !dir; i++) {
		snprintf(path, sizeof(path), "%s/enroot", dirs[i]);
		if (!nf_v_stat(c, NF_VROOT, path, &st))
			dir = dirs[i];
	}
	nf_v_expect(c, "enroot-{%s,...} start with a loader the image has",
		    helpers[0]);
	if (!dir) {
		nf_v_seen(c, "no enroot in /usr/bin or /usr/local/bin");
		nf_v_remedy(c, "nodeforge build %s   # with profiles/enroot.yaml",
			    nf_v_role(c));
		return NF_V_FAIL;
	}
	for (size_t i = 0; i < NF_ARRAY_SIZE(helpers); i++) {
		snprintf(path, sizeof(path), "%s/enroot-%s", dir, helpers[i]);
		if (nf_containers_elf_runs(c, path, why, sizeof(why)))
			nf_buf_printf(&bad, "%s%s", bad.len ? "; " : "", why);
		else if (*why)
			snprintf(loader, sizeof(loader), "%s", why);
	}
	if (bad.err) {
		nf_buf_free(&bad);
		nf_v_seen(c, "out of memory");
		return NF_V_FAIL;
	}
	if (!bad.len) {
		nf_v_seen(c, "%zu helpers, %s%s", NF_ARRAY_SIZE(helpers),
			  *loader ? "loader " : "static", loader);
		v = NF_V_PASS;
	} else {
		nf_v_seen(c, "%s", bad.s);
		nf_v_remedy(c, "nodeforge build %s   # enroot built with FORCE_GLIBC=1 "
			    "(profiles/enroot.yaml) links its helpers with the image's glibc",
			    nf_v_role(c));
		v = NF_V_FAIL;
	}
	nf_buf_free(&bad);
	return v;
}

/* The running root is one pivot_root(2) accepts: not the initramfs's
 * rootfs (the image's /init moves a network-booted node into a tmpfs) */
static int check_root(struct nf_vcheck *c, const json_t *sec)
{
	struct nf_mount_info m = { 0 };
	int r;

	if (!json_object_get(sec, "enroot"))
		return nf_v_skip(c, "the profile has no enroot");
	nf_v_expect(c, "/ on a file system other than rootfs (initramfs)");
	if (!nf_v_ctx(c)) {
		nf_v_seen(c, "out of memory");
		return NF_V_FAIL;
	}
	r = nf_mount_find(nf_v_ctx(c), "/", &m);
	if (r < 0) {
		nf_v_seen(c, "%s", nf_errmsg(nf_v_ctx(c)));
		nf_v_remedy(c, "cat /proc/self/mountinfo   # is /proc mounted?");
		return NF_V_FAIL;
	}
	nf_v_seen(c, "/ is %s", m.fstype ? m.fstype : "?");
	r = m.fstype && strcmp(m.fstype, "rootfs") ? NF_V_PASS : NF_V_FAIL;
	if (r == NF_V_FAIL)
		nf_v_remedy(c, "nodeforge build %s   # its /init moves the image into "
			    "a tmpfs; see the console for why it did not", nf_v_role(c));
	nf_mount_info_clear(&m);
	return r;
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

#define ENROOT_CONF "/etc/enroot/enroot.conf"

/* A value in one pair of quotes, as enroot's `eval echo` reads it: without */
static const char *unquoted(char *v)
{
	size_t n = strlen(v);

	if (n >= 2 && (v[0] == '"' || v[0] == '\'') && v[n - 1] == v[0] &&
	    !memchr(v + 1, v[0], n - 2)) {
		v[n - 1] = '\0';
		return v + 1;
	}
	return v;
}
#define CONF_FILES_MAX 64

/* The settings the profile makes hold where enroot reads them: enroot.conf,
 * then the .conf files of enroot.conf.d in name order, the first value set winning
 * (config::init), compared as written (enroot expands them per user) */
static int check_conf(struct nf_vcheck *c, const json_t *sec)
{
	const json_t *en = json_object_get(sec, "enroot");
	const json_t *mh = json_object_get(en, "mount_home");
	char *text[1 + CONF_FILES_MAX] = { 0 }, **names = NULL, path[512];
	struct nf_buf bad = { 0 };
	size_t nt = 0, nset = 0;
	int n, v;

	if (!en)
		return nf_v_skip(c, "the profile has no enroot");
	if (!nf_v_read(c, NF_VROOT, ENROOT_CONF, 64 * 1024, &text[nt], NULL))
		nt++;
	n = nf_v_list(c, NF_VROOT, ENROOT_CONF ".d", &names, 256);
	for (int i = 0; i < n && nt < NF_ARRAY_SIZE(text); i++) {
		size_t l = strlen(names[i]);

		if (l <= 5 || strcmp(names[i] + l - 5, ".conf"))
			continue;
		snprintf(path, sizeof(path), ENROOT_CONF ".d/%.200s", names[i]);
		if (!nf_v_read(c, NF_VROOT, path, 64 * 1024, &text[nt], NULL))
			nt++;
	}
	if (n > 0)
		nf_strv_free(names, (size_t)n);
	for (size_t i = 0; i <= NF_ENROOT_NKEYS; i++) {
		const char *conf = i < NF_ENROOT_NKEYS ? nf_enroot_keys[i].conf : "ENROOT_MOUNT_HOME";
		const char *want;
		char got[512];
		size_t j;

		if (i < NF_ENROOT_NKEYS)
			want = json_string_value(json_object_get(en, nf_enroot_keys[i].key));
		else
			want = json_is_boolean(mh) ? (json_is_true(mh) ? "yes" : "no") : NULL;
		if (!want)
			continue;
		nset++;
		for (j = 0; j < nt && !nf_enroot_conf_get(text[j], conf, got, sizeof(got)); j++)
			;
		if (j == nt)
			nf_buf_printf(&bad, "%s%s not set", bad.len ? ", " : "", conf);
		else if (strcmp(unquoted(got), want))
			nf_buf_printf(&bad, "%s%s is '%.200s' (the profile: '%s')",
				      bad.len ? ", " : "", conf, got, want);
	}
	for (size_t j = 0; j < nt; j++)
		free(text[j]);
	nf_v_expect(c, "%zu setting%s of the profile in %s", nset, nset == 1 ? "" : "s",
		    ENROOT_CONF);
	if (bad.err) {
		nf_v_seen(c, "out of memory");
		v = NF_V_FAIL;
	} else if (!bad.len) {
		nf_v_seen(c, "%zu as the profile sets them", nset);
		v = NF_V_PASS;
	} else {
		nf_v_seen(c, "%s%s", nt ? "" : ENROOT_CONF " missing: ", bad.s);
		nf_v_remedy(c, "nodeforge build %s   # the containers facet writes %s",
			    nf_v_role(c), ENROOT_CONF);
		v = NF_V_FAIL;
	}
	nf_buf_free(&bad);
	return v;
}

/* The arguments of the plugstack line loading pyxis: plugstack.conf, then
 * plugstack.conf.d; 1 when a line loads it */
static int plugstack_pyxis_args(struct nf_vcheck *c, const char *plugin, char *out,
				size_t sz)
{
	char *buf = NULL, **names = NULL, path[512];
	int found = 0, n;

	if (!nf_v_read(c, NF_VROOT, "/etc/slurm/plugstack.conf", 64 * 1024, &buf, NULL)) {
		found = nf_plugstack_args(buf, plugin, out, sz);
		free(buf);
	}
	n = nf_v_list(c, NF_VROOT, "/etc/slurm/plugstack.conf.d", &names, 256);
	for (int i = 0; i < n && !found; i++) {
		snprintf(path, sizeof(path), "/etc/slurm/plugstack.conf.d/%.200s", names[i]);
		if (!nf_v_read(c, NF_VROOT, path, 64 * 1024, &buf, NULL)) {
			found = nf_plugstack_args(buf, plugin, out, sz);
			free(buf);
		}
	}
	if (n > 0)
		nf_strv_free(names, (size_t)n);
	return found;
}

/* Each k=v the profile gives pyxis is a word of its plugstack line */
static int check_pyxis_args(struct nf_vcheck *c, const json_t *sec)
{
	const char *p = pyxis_path(sec);
	struct nf_buf want = { 0 }, bad = { 0 };
	char args[4096] = "";
	int v;

	if (!p)
		return nf_v_skip(c, "the profile has no pyxis");
	nf_containers_pyxis_args(&want, json_object_get(sec, "pyxis"));
	if (want.err) {
		nf_buf_free(&want);
		nf_v_seen(c, "out of memory");
		return NF_V_FAIL;
	}
	if (!want.len)
		return nf_v_skip(c, "the profile gives pyxis no arguments");
	nf_v_expect(c, "the pyxis line of plugstack.conf has%s", want.s);
	if (!plugstack_pyxis_args(c, p, args, sizeof(args))) {
		nf_buf_free(&want);
		nf_v_seen(c, "no line loads %s", p);
		nf_v_remedy(c, "nodeforge build %s   # the containers facet writes "
			    "/etc/slurm/plugstack.conf.d/pyxis.conf", nf_v_role(c));
		return NF_V_FAIL;
	}
	for (char *w = want.s + 1, *e; w && *w; w = e ? e + 1 : NULL) {
		size_t wl;
		const char *a;
		int has = 0;

		e = strchr(w, ' ');
		wl = e ? (size_t)(e - w) : strlen(w);
		for (a = args; *a; a += strcspn(a, " \t"), a += strspn(a, " \t"))
			if (strcspn(a, " \t") == wl && !strncmp(a, w, wl))
				has = 1;
		if (!has)
			nf_buf_printf(&bad, "%s%.*s", bad.len ? " " : "", (int)wl, w);
	}
	nf_buf_free(&want);
	if (bad.err) {
		nf_v_seen(c, "out of memory");
		v = NF_V_FAIL;
	} else if (!bad.len) {
		nf_v_seen(c, "%s", args);
		v = NF_V_PASS;
	} else {
		nf_v_seen(c, "'%.200s', without %s", args, bad.s);
		nf_v_remedy(c, "nodeforge build %s   # the containers facet writes "
			    "/etc/slurm/plugstack.conf.d/pyxis.conf", nf_v_role(c));
		v = NF_V_FAIL;
	}
	nf_buf_free(&bad);
	return v;
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
	nf_v_remedy(c, "sysctl -w user.max_user_namespaces=65536 kernel.unprivileged_userns_clone=1"
		    "   # and both in the profile's sysctl, which sets them at boot");
	return NF_V_FAIL;
}

static const struct nf_check_def defs[] = {
	{ "containers.enroot.dirs", "enroot's shared directories are 1777 root", NULL,
	  NF_CHECK_STATIC, 0, check_dirs },
	{ "containers.enroot.runs", "an unprivileged user runs enroot at the profile's version",
	  NULL, NF_CHECK_PROBE, 10000, check_enroot, .explained_by = "containers.enroot.dirs" },
	{ "containers.enroot.helpers", "enroot's helpers can be executed in this image",
	  NULL, NF_CHECK_STATIC, 0, check_helpers },
	{ "containers.enroot.root", "the root is one enroot can pivot_root from", NULL,
	  0, 0, check_root },
	{ "containers.enroot.conf", "enroot.conf has the profile's enroot settings", NULL,
	  NF_CHECK_STATIC, 0, check_conf },
	{ "containers.pyxis.present", "the pyxis plugin is installed", NULL, NF_CHECK_STATIC, 0,
	  check_pyxis },
	{ "containers.pyxis.plugstack", "pyxis is listed in plugstack.conf",
	  "containers.pyxis.present", NF_CHECK_STATIC, 0, check_plugstack },
	{ "containers.pyxis.args", "pyxis's plugstack.conf line has the profile's arguments",
	  "containers.pyxis.plugstack", NF_CHECK_STATIC, 0, check_pyxis_args },
	{ "containers.userns", "user namespaces are enabled", NULL, 0, 0, check_userns },
	{ "containers.nvidia", "enroot's NVIDIA hook can run: nvidia-container-cli "
	  "and libcuda.so.1 are in the image", NULL, NF_CHECK_STATIC, 0,
	  nf_containers_check_nvidia },
	/* where the cache lives (mount, file system, disk): the storage
	 * facet's storage.enroot_cache.* checks */
};

const struct nf_checkset nf_containers_checks = NF_CHECKSET(defs);

/* ---- end of check ---- */
