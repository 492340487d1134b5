/* SPDX-License-Identifier: MIT */
/* containers: enroot (runtime, cache layout) and the pyxis SPANK plugin. */
#include "containers_int.h"

#include <unistd.h>

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

/* enroot.conf's settings.  enroot itself creates cache, data and runtime
 * (`mkdir -p` under umask 077) at every run, even `enroot version`
 * (enroot.in, END CONFIG), so whoever runs it first owns them 0700: each
 * user needs their own.  In temp it only makes directories (mktemp -d),
 * so one sticky directory serves everyone. */
enum { NOT_A_PATH, PER_USER, SHARED };

static const struct {
	const char *key, *conf;
	int kind;
} keys[] = {
	{ "cache_path", "ENROOT_CACHE_PATH", PER_USER },
	{ "data_path", "ENROOT_DATA_PATH", PER_USER },
	{ "temp_path", "ENROOT_TEMP_PATH", SHARED },
	{ "runtime_path", "ENROOT_RUNTIME_PATH", PER_USER },
	{ "squash_options", "ENROOT_SQUASH_OPTIONS", NOT_A_PATH },
};

#define TMPFILES "/etc/tmpfiles.d/nodeforge-enroot.conf"

int nf_enroot_shared_dir(const char *v, char *out, size_t sz)
{
	/* enroot expands each value with `eval echo` (config::load) */
	const char *x = strpbrk(v, "$`~\\*?[{");
	size_t n = x ? (size_t)(x - v) : strlen(v);

	if (x) {
		while (n && v[n - 1] != '/')
			n--;
		if (n)
			n--;
	}
	while (n > 1 && v[n - 1] == '/')
		n--;
	if (n <= 1)
		return 0;
	if (n >= sz)
		return -ENAMETOOLONG;
	memcpy(out, v, n);
	out[n] = '\0';
	return x ? 1 : 2;
}

static int blank(char ch)
{
	return ch == ' ' || ch == '\t';
}

int nf_enroot_conf_get(const char *conf, const char *key, char *out, size_t sz)
{
	size_t kl = strlen(key);

	for (const char *l = conf, *e; l && *l; l = e ? e + 1 : NULL) {
		const char *end, *p = l, *v;

		e = strchr(l, '\n');
		end = e ? e : l + strlen(l);
		while (p < end && blank(*p))
			p++;
		if ((size_t)(end - p) < kl || strncmp(p, key, kl) ||
		    (p + kl < end && !blank(p[kl]) && p[kl] != '='))
			continue;
		for (v = p + kl; v < end && blank(*v); v++)
			;
		if (v < end && *v == '=')
			for (v++; v < end && blank(*v); v++)
				;
		while (end > v && blank(end[-1]))
			end--;
		/* read(1) drops one last '=' delimiter, not "==" */
		if (end > v && end[-1] == '=' && (end - 1 == v || end[-2] != '=')) {
			for (end--; end > v && blank(end[-1]); end--)
				;
		}
		if (end == v)
			continue;  /* enroot takes a later value for an empty one */
		if (sz)
			snprintf(out, sz, "%.*s", (int)(end - v), v);
		return 1;
	}
	return 0;
}

/* The n bytes at w name `plugin`: the same path, or one ending in its
 * file name (distributions install pyxis in different directories) */
static int names_plugin(const char *w, size_t n, const char *plugin)
{
	const char *base = strrchr(plugin, '/') ? strrchr(plugin, '/') + 1 : plugin;
	size_t bl = strlen(base);

	if (n == strlen(plugin) && !strncmp(w, plugin, n))
		return 1;
	return n >= bl && !strncmp(w + n - bl, base, bl) && (n == bl || w[n - bl - 1] == '/');
}

int nf_plugstack_args(const char *conf, const char *plugin, char *out, size_t sz)
{
	for (const char *l = conf, *e; l && *l; l = e ? e + 1 : NULL) {
		const char *end, *p = l, *w, *we;

		e = strchr(l, '\n');
		end = e ? e : l + strlen(l);
		while (p < end && blank(*p))
			p++;
		if (!((end - p > 8 && !strncmp(p, "required", 8) && blank(p[8])) ||
		      (end - p > 8 && !strncmp(p, "optional", 8) && blank(p[8]))))
			continue;
		for (w = p + 8; w < end && blank(*w); w++)
			;
		for (we = w; we < end && !blank(*we); we++)
			;
		if (!names_plugin(w, (size_t)(we - w), plugin))
			continue;
		if (sz)
			*out = '\0';
		/* a line ending in a backslash goes on on the next one */
		for (;;) {
			int more;

			while (we < end && blank(*we))
				we++;
			while (end > we && (blank(end[-1]) || end[-1] == '\r'))
				end--;
			more = end > we && end[-1] == '\\' && e;
			if (more)
				for (end--; end > we && blank(end[-1]); end--)
					;
			if (sz && end > we)
				snprintf(out + strlen(out), sz - strlen(out), "%s%.*s",
					 *out ? " " : "", (int)(end - we), we);
			if (!more)
				return 1;
			we = e + 1;
			e = strchr(we, '\n');
			end = e ? e : we + strlen(we);
		}
	}
	return 0;
}

/* The directories every user of enroot needs, 1777 root, sorted, without
 * duplicates and without /tmp and /var/tmp (the OS makes those).  Returns
 * how many, or NF_E_INVALID with the offending key in *bad. */
#define MAX_DIRS NF_ARRAY_SIZE(keys)
static int shared_dirs(const json_t *sec, char dirs[][NF_ENROOT_DIR_MAX],
		       const char **bad)
{
	const json_t *en = json_object_get(sec, "enroot");
	size_t n = 0;

	for (size_t i = 0; i < NF_ARRAY_SIZE(keys); i++) {
		const char *v = json_string_value(json_object_get(en, keys[i].key));
		char d[NF_ENROOT_DIR_MAX];
		size_t k;

		if (!v || keys[i].kind == NOT_A_PATH ||
		    nf_enroot_shared_dir(v, d, sizeof(d)) <= 0)
			continue;
		if (strpbrk(d, " \t\n\\")) {
			*bad = keys[i].key;
			return NF_E_INVALID;
		}
		if (!strcmp(d, "/tmp") || !strcmp(d, "/var/tmp"))
			continue;
		for (k = 0; k < n && strcmp(dirs[k], d) < 0; k++)
			;
		if (k < n && !strcmp(dirs[k], d))
			continue;
		memmove(dirs[k + 1], dirs[k], (n - k) * sizeof(dirs[0]));
		memcpy(dirs[k], d, sizeof(d));
		n++;
	}
	return (int)n;
}

static int lint(struct nf_facet_lint *l, const json_t *sec)
{
	const json_t *en = json_object_get(sec, "enroot");
	const char *cache = json_string_value(json_object_get(en, "cache_path"));
	const char *data = json_string_value(json_object_get(en, "data_path"));
	char dirs[MAX_DIRS][NF_ENROOT_DIR_MAX], p[64];
	const char *bad = NULL;

	if (cache && data && !strcmp(cache, data))
		nf_lint_at(l, "containers.enroot.data_path", NF_SEV_ERROR,
			   "enroot data_path and cache_path are both '%s': "
			   "per-job overlays would fill the image cache", data);
	for (size_t i = 0; i < NF_ARRAY_SIZE(keys); i++) {
		const char *v = json_string_value(json_object_get(en, keys[i].key));
		char d[NF_ENROOT_DIR_MAX];

		snprintf(p, sizeof(p), "containers.enroot.%s", keys[i].key);
		if (v && keys[i].kind == PER_USER &&
		    nf_enroot_shared_dir(v, d, sizeof(d)) == 2)
			nf_lint_at(l, p, NF_SEV_ERROR,
				   "enroot %s '%s' is one directory for every user: "
				   "enroot creates it 0700 for the first user who runs it; "
				   "make it per user, e.g. '%s/user-$(id -u)'",
				   keys[i].key, v, d);
	}
	if (shared_dirs(sec, dirs, &bad) < 0) {
		snprintf(p, sizeof(p), "containers.enroot.%s", bad);
		nf_lint_at(l, p, NF_SEV_ERROR,
			   "enroot %s has a space or a backslash before its per-user part", bad);
	}
	/* a submit host's srun needs only the plugin; slurmstepd runs the
	 * containers with enroot where slurmd runs */
	if (json_object_get(sec, "pyxis") && !en &&
	    nf_profile_runs(nf_profile_json(l->profile), "slurmd"))
		nf_lint_at(l, "containers.pyxis", NF_SEV_ERROR,
			   "pyxis needs enroot on a node that runs slurmd");
	return 0;
}

/* ---- apply: what the image build writes (nodeforge build) ---- */

/* The shared parents of enroot's paths, made 1777 root at every boot
 * (after local-fs.target: on the cache disk when it is mounted, else on
 * the root file system, RAM on a network boot) */
static int apply_tmpfiles(struct nf_apply *a, const json_t *sec)
{
	char dirs[MAX_DIRS][NF_ENROOT_DIR_MAX];
	const char *bad = NULL;
	struct nf_buf b = { 0 };
	int n = shared_dirs(sec, dirs, &bad);

	if (n < 0)
		return nf_fail(a->ctx, NF_E_INVALID, "containers.enroot.%s has a space "
			       "or a backslash before its per-user part", bad);
	if (!n)
		return 0;
	nf_apply_header(&b, "#", "containers");
	nf_buf_printf(&b, "# Where each user's enroot makes its own directories "
		      "(user-$(id -u) in enroot.conf)\n");
	for (int i = 0; i < n; i++)
		nf_buf_printf(&b, "d %s 1777 root root -\n", dirs[i]);
	return nf_apply_write_buf(a, TMPFILES, &b, 0644, 0, 0);
}

/* A network-booted node runs from its initramfs, and the initramfs root
 * (rootfs) is the one mount pivot_root(2) refuses with EINVAL: enroot's
 * switchroot fails there ("failed to switch root: ...: Invalid
 * argument"), as would any container runtime.  So an image that runs
 * containers starts with this /init: as the kernel's first process it
 * copies itself into a tmpfs and makes that the root with switch_root
 * (which empties the initramfs as it goes), then systemd starts as
 * usual.  Being PID 1, it must never exit: each step is checked (both
 * tars of the copy, the copy's own /sbin/init, switch_root present
 * before anything is emptied), and any failure unmounts the tmpfs and
 * execs the initramfs's /sbin/init, the reason on the console; the
 * verifier's containers.enroot.root then fails.  A disk-installed image
 * never runs /init. */
static const char INIT_SCRIPT[] =
	"#!/bin/sh\n"
	"# Written by nodeforge build (facet 'containers'): the initramfs root\n"
	"# cannot be pivot_root(2)ed, which container runtimes need; move the\n"
	"# image into a tmpfs and switch_root to it before systemd starts.\n"
	"# This shell is PID 1: if it exits, the kernel panics.  Every step up to\n"
	"# switch_root is checked, and any failure ends in the initramfs's own\n"
	"# /sbin/init with the reason on the console.  switch_root itself cannot\n"
	"# return, so all it needs is checked first.\n"
	"new=/.nodeforge-root\n"
	"why=\n"
	"mounted=\n"
	"if [ \"$$\" != 1 ]; then\n"
	"\twhy=\"not the kernel's first process (pid $$)\"\n"
	"elif ! command -v switch_root > /dev/null 2>&1; then\n"
	"\twhy=\"no switch_root in the image\"\n"
	"elif ! command -v chroot > /dev/null 2>&1; then\n"
	"\twhy=\"no chroot in the image\"\n"
	"elif ! mkdir -p \"$new\"; then\n"
	"\twhy=\"cannot make $new\"\n"
	"elif ! mount -t tmpfs -o mode=0755,size=100% nodeforge-root \"$new\"; then\n"
	"\twhy=\"cannot mount a tmpfs on $new\"\n"
	"else\n"
	"\tmounted=1\n"
	"\t# both sides of the copy: a pipeline's status is only its last\n"
	"\t# command's, and tar extracts a stream cut between entries as a\n"
	"\t# whole archive\n"
	"\tst=$( { { tar -C / --one-file-system --exclude=./.nodeforge-root -cf - .\n"
	"\t\t  echo \"c$?\" >&3; } |\n"
	"\t\t{ tar -C \"$new\" -xpf -; echo \"x$?\" >&3; }; } 3>&1 >&2 )\n"
	"\tc='?' x='?'\n"
	"\tfor w in $st; do\n"
	"\t\tcase $w in\n"
	"\t\tc*) c=${w#c} ;;\n"
	"\t\tx*) x=${w#x} ;;\n"
	"\t\tesac\n"
	"\tdone\n"
	"\tif [ \"$c\" != 0 ] || [ \"$x\" != 0 ]; then\n"
	"\t\twhy=\"copying the image into a tmpfs failed (archiving tar exit $c, extracting tar exit $x)\"\n"
	"\t# in the copy's own root: /sbin/init is often an absolute link\n"
	"\telif ! chroot \"$new\" /bin/sh -c '[ -f /sbin/init ] && [ -x /sbin/init ]'; then\n"
	"\t\twhy=\"the copy has no /sbin/init it can run\"\n"
	"\telse\n"
	"\t\texec switch_root \"$new\" /sbin/init \"$@\"\n"
	"\tfi\n"
	"fi\n"
	"echo \"nodeforge: $why: the root stays the initramfs, containers cannot start\" >&2\n"
	"if [ -n \"$mounted\" ] && ! umount \"$new\"; then\n"
	"\techo \"nodeforge: cannot unmount $new: its copy of the image stays in memory\" >&2\n"
	"fi\n"
	"rmdir \"$new\" 2> /dev/null\n"
	"exec /sbin/init \"$@\"\n";

/* The profile's pyxis arguments as plugstack.conf gets them: " k=v" each */
static void pyxis_args(struct nf_buf *b, const json_t *px)
{
	const char *k;
	json_t *v;

	json_object_foreach(json_object_get(px, "args"), k, v) {
		if (json_is_string(v))
			nf_buf_printf(b, " %s=%s", k, json_string_value(v));
		else if (json_is_integer(v))
			nf_buf_printf(b, " %s=%lld", k, (long long)json_integer_value(v));
		else if (json_is_boolean(v))
			nf_buf_printf(b, " %s=%d", k, json_is_true(v));
	}
}

/* enroot.conf (enroot's own "KEY value" syntax, each value expanded with
 * `eval echo` as the user who runs enroot, so $(id -u) in a path is per
 * user), the tmpfiles.d file for the shared parents and the pyxis
 * plugstack line */
static int apply(struct nf_apply *a, const json_t *sec)
{
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
					    0644, 0, 0)) ||
		    (r = apply_tmpfiles(a, sec)) ||
		    (r = nf_apply_write(a, "/init", INIT_SCRIPT,
					sizeof(INIT_SCRIPT) - 1, 0755, 0, 0)))
			return r;
	}
	if (px) {
		const char *path = json_string_value(json_object_get(px, "path"));

		if (!path)
			return nf_fail(a->ctx, NF_E_INVALID,
				       "containers.pyxis has no path");
		nf_apply_header(&b, "#", "containers");
		nf_buf_printf(&b, "required %s", path);
		pyxis_args(&b, px);
		nf_buf_printf(&b, "\n");
		if ((r = nf_apply_write_buf(a, "/etc/slurm/plugstack.conf.d/pyxis.conf",
					    &b, 0644, 0, 0)))
			return r;
	}
	return 0;
}

/* ---- end of apply ---- */

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
	char dirs[MAX_DIRS][NF_ENROOT_DIR_MAX], *tf = NULL;
	struct nf_buf want = { 0 }, seen = { 0 };
	const char *bad = NULL;
	struct stat st, top;
	int n, v;

	if (!json_object_get(sec, "enroot"))
		return nf_v_skip(c, "the profile has no enroot");
	if ((n = shared_dirs(sec, dirs, &bad)) < 0) {
		nf_v_seen(c, "containers.enroot.%s cannot be a tmpfiles.d path", bad);
		nf_v_remedy(c, "nodeforge lint   # fix containers.enroot.%s", bad);
		return NF_V_FAIL;
	}
	if (!n)
		return nf_v_skip(c, "no enroot path is shared between users");
	if (nf_v_stat(c, NF_VROOT, "/", &top))
		top.st_uid = 0;
	if (nf_v_static(c) && nf_v_read(c, NF_VROOT, TMPFILES, 64 * 1024, &tf, NULL))
		nf_buf_printf(&seen, "%s missing", TMPFILES);
	for (int i = 0; i < n && !(nf_v_static(c) && !tf); i++) {
		char line[NF_ENROOT_DIR_MAX + 32];
		const char *why = NULL;

		if (nf_v_static(c)) {
			snprintf(line, sizeof(line), "d %s 1777 root root", dirs[i]);
			if (!conf_lists(tf, line))
				why = "not in " TMPFILES;
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
				    nf_v_role(c), TMPFILES);
		else
			nf_v_remedy(c, "systemd-tmpfiles --create %s", TMPFILES);
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
			    "directories must be per user under 1777 parents", TMPFILES);
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
	for (size_t i = 0; i <= NF_ARRAY_SIZE(keys); i++) {
		const char *conf = i < NF_ARRAY_SIZE(keys) ? keys[i].conf : "ENROOT_MOUNT_HOME";
		const char *want;
		char got[512];
		size_t j;

		if (i < NF_ARRAY_SIZE(keys))
			want = json_string_value(json_object_get(en, keys[i].key));
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
	pyxis_args(&want, json_object_get(sec, "pyxis"));
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
	nf_v_remedy(c, "sysctl -w user.max_user_namespaces=65536 kernel.unprivileged_userns_clone=1");
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
