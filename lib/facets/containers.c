/* SPDX-License-Identifier: MIT */
/* containers: enroot (runtime, cache layout) and the pyxis SPANK plugin:
 * the schema, lint and what the build writes.  What the verifier checks is
 * lib/facets/containers_check.c. */
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

const struct nf_enroot_key nf_enroot_keys[NF_ENROOT_NKEYS] = {
	{ "cache_path", "ENROOT_CACHE_PATH", PER_USER },
	{ "data_path", "ENROOT_DATA_PATH", PER_USER },
	{ "temp_path", "ENROOT_TEMP_PATH", SHARED },
	{ "runtime_path", "ENROOT_RUNTIME_PATH", PER_USER },
	{ "squash_options", "ENROOT_SQUASH_OPTIONS", NOT_A_PATH },
};


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
int nf_containers_shared_dirs(const json_t *sec,
			      char dirs[][NF_ENROOT_DIR_MAX], const char **bad)
{
	const json_t *en = json_object_get(sec, "enroot");
	size_t n = 0;

	for (size_t i = 0; i < NF_ENROOT_NKEYS; i++) {
		const char *v = json_string_value(json_object_get(en, nf_enroot_keys[i].key));
		char d[NF_ENROOT_DIR_MAX];
		size_t k;

		if (!v || nf_enroot_keys[i].kind == NOT_A_PATH ||
		    nf_enroot_shared_dir(v, d, sizeof(d)) <= 0)
			continue;
		if (strpbrk(d, " \t\n\\")) {
			*bad = nf_enroot_keys[i].key;
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
	char dirs[NF_ENROOT_NKEYS][NF_ENROOT_DIR_MAX], p[64];
	const char *bad = NULL;

	if (cache && data && !strcmp(cache, data))
		nf_lint_at(l, "containers.enroot.data_path", NF_SEV_ERROR,
			   "enroot data_path and cache_path are both '%s': "
			   "per-job overlays would fill the image cache", data);
	for (size_t i = 0; i < NF_ENROOT_NKEYS; i++) {
		const char *v = json_string_value(json_object_get(en, nf_enroot_keys[i].key));
		char d[NF_ENROOT_DIR_MAX];

		snprintf(p, sizeof(p), "containers.enroot.%s", nf_enroot_keys[i].key);
		if (v && nf_enroot_keys[i].kind == PER_USER &&
		    nf_enroot_shared_dir(v, d, sizeof(d)) == 2)
			nf_lint_at(l, p, NF_SEV_ERROR,
				   "enroot %s '%s' is one directory for every user: "
				   "enroot creates it 0700 for the first user who runs it; "
				   "make it per user, e.g. '%s/user-$(id -u)'",
				   nf_enroot_keys[i].key, v, d);
	}
	if (nf_containers_shared_dirs(sec, dirs, &bad) < 0) {
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
	char dirs[NF_ENROOT_NKEYS][NF_ENROOT_DIR_MAX];
	const char *bad = NULL;
	struct nf_buf b = { 0 };
	int n = nf_containers_shared_dirs(sec, dirs, &bad);

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
	return nf_apply_write_buf(a, NF_ENROOT_TMPFILES, &b, 0644, 0, 0);
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
void nf_containers_pyxis_args(struct nf_buf *b, const json_t *px)
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
		for (size_t i = 0; i < NF_ENROOT_NKEYS; i++) {
			const char *v = json_string_value(json_object_get(en, nf_enroot_keys[i].key));

			if (!v)
				continue;
			if (strchr(v, '\n')) {
				nf_buf_free(&b);
				return nf_fail(a->ctx, NF_E_INVALID,
					       "containers.enroot.%s has a newline",
					       nf_enroot_keys[i].key);
			}
			nf_buf_printf(&b, "%-24s %s\n", nf_enroot_keys[i].conf, v);
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
		nf_containers_pyxis_args(&b, px);
		nf_buf_printf(&b, "\n");
		if ((r = nf_apply_write_buf(a, "/etc/slurm/plugstack.conf.d/pyxis.conf",
					    &b, 0644, 0, 0)))
			return r;
	}
	return 0;
}

/* ---- end of apply ---- */


const struct nf_facet nf_facet_containers = {
	.name = "containers",
	.summary = "enroot and pyxis",
	.apply = apply,
	.schema = fields,
	.lint = lint,
	.checks = &nf_containers_checks,
};
