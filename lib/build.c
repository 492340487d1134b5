/* SPDX-License-Identifier: MIT */
/*
 * nodeforge build ROLE: the golden image pipeline.
 *
 *   resolve profile -> lock OUT/ROLE -> inputs hash (unchanged: done)
 *   -> bootstrap (the distro's own tool, cached by the hash of what
 *   affects it) -> unpack into a work root -> artifacts -> overlays ->
 *   facets apply -> host identity removed -> pack rootfs (tar.zst) and
 *   initramfs (cpio.zst, the whole root with systemd as /init), kernel
 *   copied out, mtimes clamped by the packer -> manifest signed ->
 *   content-addressed names renamed into OUT/ROLE, ROLE.current replaced
 *   by rename.  EL roles also get the rootfs as tar.xz, the tarball
 *   Anaconda's kickstart 'liveimg' accepts (it goes by the URL's suffix
 *   and knows no .tar.zst), signed and named in ROLE.current as 'liveimg'
 *   (ROLE-<sha12 of the tar.xz>.rootfs.tar.xz).
 *
 * A killed build leaves only temporary names (.tmp-*), removed by the next
 * build; the previous image and its pointer are never touched before the
 * new one is complete.
 */
#include "internal.h"

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NF_DEFAULT_EPOCH 1704067200LL   /* 2024-01-01T00:00:00Z */
#define NF_TOOL_OUT_MAX (64u << 10)
#define NF_OVERLAY_FILE_MAX (16u << 20)
#define NF_POINTER_MAX (64u << 10)
#define NF_BOOTSTRAP_FORMAT "nodeforge-bootstrap-v1"

struct build {
	struct nf_ctx *ctx;
	const struct nf_build_opts *o;
	struct nf_profile *profile;
	const json_t *prof;
	const char *role;
	char out[PATH_MAX];       /* OUT/ROLE */
	char cache[PATH_MAX];
	char work[PATH_MAX];      /* work dir (root/ inside) */
	char root[PATH_MAX + 8];
	char stage[PATH_MAX + 32];/* OUT/ROLE/.tmp-PID */
	char overlays[PATH_MAX];
	char key[PATH_MAX];
	char pub[PATH_MAX];
	char suite[32];           /* Debian suite, or EL release ("9") */
	int el;                   /* EL family: dnf --installroot */
	char mirror[PATH_MAX];
	char security[PATH_MAX];
	long long epoch;
	int lockfd;
	struct timespec t0;
	const char *cur_stage;
	json_t *overlay_names;
	char liveimg[256];        /* EL: ROLE-<its sha12>.rootfs.tar.xz */
	char liveimg_sha256[NF_SHA256_HEX];
	json_t *nodes;            /* --inventory: nf_cluster_load() */
};

/* ------------------------------------------------------------ progress */

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double stage_t0;

static void stage_begin(struct build *b, const char *name)
{
	b->cur_stage = name;
	stage_t0 = now_s();
	nf_log(b->ctx, NF_LOG_DEBUG, "build: stage '%s'", name);
	if (b->o->progress)
		b->o->progress(b->o->progress_data, NF_BUILD_START, name, 0, 0);
}

static void stage_end(struct build *b, unsigned long long bytes)
{
	if (b->o->progress)
		b->o->progress(b->o->progress_data, NF_BUILD_DONE, b->cur_stage,
			       now_s() - stage_t0, bytes);
}

static void note(struct build *b, const char *msg)
{
	if (b->o->progress)
		b->o->progress(b->o->progress_data, NF_BUILD_NOTE, msg,
			       now_s() - stage_t0, 0);
}

static void pack_progress(void *data, unsigned long long entries,
			  unsigned long long total, unsigned long long bytes)
{
	struct build *b = data;

	(void)entries;
	(void)total;
	if (b->o->progress)
		b->o->progress(b->o->progress_data, NF_BUILD_BYTES, b->cur_stage,
			       now_s() - stage_t0, bytes);
}

/* --------------------------------------------------------------- tools */

/* Run argv with stdout+stderr into `log` (NULL: /dev/null); env entries
 * are added.  Returns the exit status, or a negative errno. */
static int run_tool(struct nf_ctx *ctx, char *const argv[], const char *log,
		    char *const env[])
{
	pid_t pid;
	int st;

	pid = fork();
	if (pid < 0)
		return nf_fail(ctx, -errno, "cannot run '%s': %s", argv[0],
			       strerror(errno));
	if (pid == 0) {
		int fd = open(log ? log : "/dev/null",
			      O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);

		if (fd < 0 || nul < 0)
			_exit(127);
		/* a killed build takes its tool with it */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(nul, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		for (size_t i = 0; env && env[i]; i++)
			putenv(env[i]);
		execvp(argv[0], argv);
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return nf_fail(ctx, -errno, "cannot wait for '%s': %s",
				       argv[0], strerror(errno));
	if (WIFEXITED(st)) {
		if (WEXITSTATUS(st) == 127)
			return nf_fail(ctx, NF_E_EXTERNAL, "cannot run '%s': not "
				       "installed? (Debian package '%s')",
				       argv[0], argv[0]);
		return WEXITSTATUS(st);
	}
	return nf_fail(ctx, NF_E_EXTERNAL, "'%s' was killed by signal %d",
		       argv[0], WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

/* First line of a tool's output (its --version) */
static int tool_version(struct nf_ctx *ctx, const char *tool, char *out,
			size_t outsz)
{
	char log[] = "/tmp/nf-version.XXXXXX";
	char *argv[] = { (char *)tool, "--version", NULL };
	char *buf = NULL;
	int fd, r;

	fd = mkstemp(log);
	if (fd < 0)
		return nf_fail(ctx, -errno, "cannot create a temporary file: %s",
			       strerror(errno));
	close(fd);
	r = run_tool(ctx, argv, log, NULL);
	if (r == 0 && !(r = nf_read_file(ctx, log, NF_TOOL_OUT_MAX, &buf, NULL))) {
		buf[strcspn(buf, "\n")] = '\0';
		snprintf(out, outsz, "%s", buf);
		free(buf);
	} else if (r > 0) {
		r = nf_fail(ctx, NF_E_EXTERNAL, "'%s --version' failed", tool);
	}
	unlink(log);
	return r;
}

/* The most telling line of a failed tool's log: apt's "E:" lines first */
static void log_reason(const char *log, char *out, size_t outsz)
{
	char *buf = NULL, *line, *save = NULL, *last = NULL, *err = NULL;

	snprintf(out, outsz, "see '%s'", log);
	if (nf_read_file(NULL, log, 8u << 20, &buf, NULL))
		return;
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (!err && (!strncmp(line, "E: ", 3) ||
			     !strncmp(line, "E: ", 3)))
			err = line;
		if (*line)
			last = line;
	}
	if (err || last)
		snprintf(out, outsz, "%s (log: '%s')", err ? err : last, log);
	free(buf);
}

/* ---------------------------------------------------------------- paths */

static int mkdir_p(struct nf_ctx *ctx, const char *path, unsigned mode)
{
	char tmp[PATH_MAX];

	if (snprintf(tmp, sizeof(tmp), "%s", path) >= (int)sizeof(tmp))
		return nf_fail(ctx, NF_E_LIMIT, "path '%s' is too long", path);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
			return nf_fail(ctx, -errno, "cannot create '%s': %s", tmp,
				       strerror(errno));
		*p = '/';
	}
	if (mkdir(tmp, mode) < 0 && errno != EEXIST)
		return nf_fail(ctx, -errno, "cannot create '%s': %s", tmp,
			       strerror(errno));
	return 0;
}

static int file_exists(const char *p)
{
	struct stat st;

	return stat(p, &st) == 0;
}

/* Remove leftovers of killed builds: OUT/ROLE/.tmp-* (lock held) */
static void clean_stale(struct build *b)
{
	DIR *d = opendir(b->out);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, ".tmp-", 5))
			nf_rm_tree_at(dirfd(d), de->d_name);
	closedir(d);
}

/* --------------------------------------------------------------- setup */

static int setup_paths(struct build *b)
{
	const struct nf_build_opts *o = b->o;
	const char *out = o->out && *o->out ? o->out : "out";
	const json_t *site = json_object_get(b->prof, "site");
	const char *distro = json_string_value(json_object_get(site, "distro"));
	const struct nf_distro *dd;
	const json_t *mirrors = json_object_get(site, "mirrors");
	const char *m;
	int r;

	if (snprintf(b->out, sizeof(b->out), "%s/%s", out, b->role) >=
	    (int)sizeof(b->out))
		return nf_fail(b->ctx, NF_E_LIMIT, "output path '%s' is too long",
			       out);
	if (o->cache && *o->cache) {
		snprintf(b->cache, sizeof(b->cache), "%s", o->cache);
	} else {
		const char *x = getenv("XDG_CACHE_HOME");
		const char *home = getenv("HOME");

		if (x && *x == '/')
			snprintf(b->cache, sizeof(b->cache), "%s/nodeforge", x);
		else if (home && *home)
			snprintf(b->cache, sizeof(b->cache), "%s/.cache/nodeforge",
				 home);
		else
			return nf_fail(b->ctx, NF_E_INVALID, "no cache directory: "
				       "set HOME or pass --cache DIR");
	}
	if (o->overlays && *o->overlays)
		snprintf(b->overlays, sizeof(b->overlays), "%s", o->overlays);
	else
		snprintf(b->overlays, sizeof(b->overlays), "%s/../overlays",
			 nf_ctx_profiles_dir(b->ctx));
	if (!distro)
		distro = "debian13";
	if ((dd = nf_distro_find(distro))) {
		snprintf(b->suite, sizeof(b->suite), "%s", dd->suite);
		b->el = dd->el;
	} else
		return nf_fail(b->ctx, NF_E_UNSUPPORTED,
			       "distro '%s': supported are debian11, debian12, "
			       "debian13 (mmdebstrap) and rocky9, rhel9, alma9 "
			       "(dnf --installroot)", distro);
	m = o->mirror && *o->mirror ? o->mirror
		: json_string_value(json_object_get(mirrors, b->el ? "rocky"
								   : "debian"));
	if (!m)
		m = b->el ? "https://dl.rockylinux.org/pub/rocky/9"
			  : "http://deb.debian.org/debian";
	if (m[0] == '/') {
		char *real = realpath(m, NULL);

		if (!real)
			return nf_fail(b->ctx, -errno, "cannot use mirror '%s': %s",
				       m, strerror(errno));
		snprintf(b->mirror, sizeof(b->mirror), "file://%s", real);
		free(real);
	} else if (!strncmp(m, "http://", 7) || !strncmp(m, "https://", 8) ||
		   !strncmp(m, "file://", 7)) {
		snprintf(b->mirror, sizeof(b->mirror), "%s", m);
	} else {
		return nf_fail(b->ctx, NF_E_INVALID, "mirror '%s' is neither an "
			       "http(s):// or file:// URL nor an absolute directory",
			       m);
	}
	/* a local mirror is the whole world: no security mirror beside it */
	m = json_string_value(json_object_get(mirrors, "debian-security"));
	if (m && !b->el && !(o->mirror && *o->mirror))
		snprintf(b->security, sizeof(b->security), "%s", m);
	if (strpbrk(b->mirror, " \t\n\"'") || strpbrk(b->security, " \t\n\"'"))
		return nf_fail(b->ctx, NF_E_INVALID, "mirror URL '%s' has blanks "
			       "or quotes", b->mirror);
	if (o->key && *o->key) {
		snprintf(b->key, sizeof(b->key), "%s", o->key);
		snprintf(b->pub, sizeof(b->pub), "%.*s.pub",
			 (int)(strlen(o->key) - (strlen(o->key) > 4 &&
			  !strcmp(o->key + strlen(o->key) - 4, ".key") ? 4 : 0)),
			 o->key);
	} else {
		char kd[PATH_MAX + 8];

		snprintf(kd, sizeof(kd), "%s/keys", b->cache);
		snprintf(b->key, sizeof(b->key), "%s/signing.key", kd);
		snprintf(b->pub, sizeof(b->pub), "%s/signing.pub", kd);
		if (!file_exists(b->key)) {
			if ((r = mkdir_p(b->ctx, b->cache, 0755)))
				return r;
			if ((r = nf_keys_signing(b->ctx, kd)))
				return r;
		}
	}
	if (o->epoch >= 0) {
		b->epoch = o->epoch;
	} else {
		const char *sde = getenv("SOURCE_DATE_EPOCH");
		char *end;

		b->epoch = NF_DEFAULT_EPOCH;
		if (sde && *sde) {
			long long v = strtoll(sde, &end, 10);

			if (*end || v < 0)
				return nf_fail(b->ctx, NF_E_INVALID,
					       "SOURCE_DATE_EPOCH '%s' is not a "
					       "number of seconds", sde);
			b->epoch = v;
		}
	}
	return 0;
}

static int take_lock(struct build *b)
{
	char path[PATH_MAX + 16];
	int r;

	if ((r = mkdir_p(b->ctx, b->out, 0755)))
		return r;
	snprintf(path, sizeof(path), "%s/.lock", b->out);
	b->lockfd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (b->lockfd < 0)
		return nf_fail(b->ctx, -errno, "cannot open lock '%s': %s", path,
			       strerror(errno));
	if (flock(b->lockfd, LOCK_EX | LOCK_NB) < 0) {
		if (errno == EWOULDBLOCK)
			return nf_fail(b->ctx, NF_E_LOCKED,
				       "another build of '%s' is running (lock "
				       "'%s' is held); wait for it or stop it",
				       b->role, path);
		return nf_fail(b->ctx, -errno, "cannot lock '%s': %s", path,
			       strerror(errno));
	}
	return 0;
}

/* ---------------------------------------------------------- input hash */

static int cmp_str(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

/* Debian 12 packages of the libraries nodeforge links (Makefile PKGS) */
static const char *const self_libs[] = {
	"libyaml-0-2", "libjansson4", "libarchive13", "libcurl4", "libssl3",
	"libblkid1", "libefivar1", "libefiboot1", "libmicrohttpd12", "libzstd1",
};

/* the same libraries in Debian 13, renamed by the 64-bit time_t transition */
static const char *const self_libs_trixie[] = {
	"libyaml-0-2", "libjansson4", "libarchive13t64", "libcurl4t64",
	"libssl3t64", "libblkid1", "libefivar1t64", "libefiboot1t64",
	"libmicrohttpd12t64", "libzstd1",
};

/* The package list: the profile's, plus the kernel, sorted and unique */
static int package_list(struct build *b, char ***out, size_t *n)
{
	const json_t *inst = json_object_get(json_object_get(
		json_object_get(b->prof, "system"), "packages"), "install");
	size_t cap = json_array_size(inst) + 2 + NF_ARRAY_SIZE(self_libs), k = 0, i;
	char **v = calloc(cap, sizeof(*v));
	json_t *p;

	if (!v)
		return -ENOMEM;
	json_array_foreach(inst, i, p) {
		const char *s = json_string_value(p);

		for (const char *c = s; c && *c; c++)
			if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') ||
			      *c == '+' || *c == '-' || *c == '.' || *c == ':' ||
			      *c == '=' || *c == '_' || (*c >= 'A' && *c <= 'Z')))
				s = NULL;
		if (s && b->el)
			for (const char *c = s; *c; c++)
				if (*c >= 'A' && *c <= 'Z')
					s = NULL;
		if (!s || !*s) {
			nf_strv_free(v, k);
			return nf_fail(b->ctx, NF_E_INVALID,
				       "package name '%s' in system.packages.install "
				       "is not a package name",
				       json_string_value(p) ? json_string_value(p) : "");
		}
		v[k++] = nf_strdup(s);
	}
	v[k++] = nf_strdup(b->el ? "kernel" : "linux-image-amd64");
	/* the image carries nodeforge itself (the first-boot verifier that
	 * gates slurmd), built on this host: its shared libraries */
	if (!strcmp(b->suite, "bookworm"))
		for (size_t j = 0; j < NF_ARRAY_SIZE(self_libs); j++)
			v[k++] = nf_strdup(self_libs[j]);
	else if (!strcmp(b->suite, "trixie"))
		for (size_t j = 0; j < NF_ARRAY_SIZE(self_libs_trixie); j++)
			v[k++] = nf_strdup(self_libs_trixie[j]);
	qsort(v, k, sizeof(*v), cmp_str);
	size_t w = 0;

	for (i = 0; i < k; i++) {
		if (w && !strcmp(v[w - 1], v[i])) {
			free(v[i]);
			continue;
		}
		v[w++] = v[i];
	}
	*out = v;
	*n = w;
	return 0;
}

static const char *const dpkg_opts[] = {
	"path-exclude=/usr/share/man/*",
	"path-exclude=/usr/share/doc/*",
	"path-include=/usr/share/doc/*/copyright",
	"path-exclude=/usr/share/locale/*",
	"path-include=/usr/share/locale/locale.alias",
};

static int bootstrap_key(struct build *b, char **pkgs, size_t npkgs,
			 const char *tool, char out[NF_SHA256_HEX])
{
	struct nf_buf k = { 0 };

	nf_buf_printf(&k, "%s\nfamily=%s\nsuite=%s\nmirror=%s\nsecurity=%s\n"
		      "variant=minbase\narch=amd64\ntool=%s\nepoch=%lld\n",
		      NF_BOOTSTRAP_FORMAT, b->el ? "el" : "debian", b->suite,
		      b->mirror, b->security, tool, b->epoch);
	for (size_t i = 0; i < NF_ARRAY_SIZE(dpkg_opts); i++)
		nf_buf_printf(&k, "dpkgopt=%s\n", dpkg_opts[i]);
	for (size_t i = 0; i < npkgs; i++)
		nf_buf_printf(&k, "pkg=%s\n", pkgs[i]);
	if (k.err) {
		nf_buf_free(&k);
		return -ENOMEM;
	}
	nf_sha256_hex(k.s, k.len, out);
	nf_buf_free(&k);
	return 0;
}

/* Digest of an overlay tree: paths, types, modes and contents */
static struct nf_sha256 *ov_hash;
static struct nf_ctx *ov_ctx;
static size_t ov_prefix;

static int ov_hash_cb(const char *p, const struct stat *st, int flag,
		      struct FTW *f)
{
	char link[PATH_MAX];
	char hex[NF_SHA256_HEX];
	char line[PATH_MAX + 128];
	unsigned long long sz;

	(void)f;
	if (flag == FTW_DNR || flag == FTW_NS)
		return nf_fail(ov_ctx, -EACCES, "cannot read overlay '%s'", p);
	snprintf(line, sizeof(line), "%s\n%o\n", p + ov_prefix, st->st_mode);
	nf_sha256_update(ov_hash, line, strlen(line));
	if (S_ISLNK(st->st_mode)) {
		ssize_t n = readlink(p, link, sizeof(link) - 1);

		if (n >= 0)
			nf_sha256_update(ov_hash, link, (size_t)n);
	} else if (S_ISREG(st->st_mode)) {
		int fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		int r;

		if (fd < 0)
			return nf_fail(ov_ctx, -errno, "cannot read overlay '%s': %s",
				       p, strerror(errno));
		r = nf_sha256_fd(ov_ctx, fd, p, hex, &sz);
		close(fd);
		if (r)
			return r;
		nf_sha256_update(ov_hash, hex, strlen(hex));
	}
	return 0;
}

/* Overlays applied, in order: common, the role's own, system.overlays */
static int overlay_list(struct build *b)
{
	const json_t *names = json_object_get(json_object_get(b->prof, "system"),
					      "overlays");
	char p[PATH_MAX * 2];
	size_t i;
	json_t *n;

	b->overlay_names = json_array();
	if (!b->overlay_names)
		return -ENOMEM;
	snprintf(p, sizeof(p), "%s/common", b->overlays);
	if (file_exists(p))
		json_array_append_new(b->overlay_names, json_string("common"));
	snprintf(p, sizeof(p), "%s/%s", b->overlays, b->role);
	if (file_exists(p))
		json_array_append_new(b->overlay_names, json_string(b->role));
	json_array_foreach(names, i, n) {
		const char *s = json_string_value(n);

		if (!s || !*s || strchr(s, '/') || !strcmp(s, ".") ||
		    !strcmp(s, ".."))
			return nf_fail(b->ctx, NF_E_UNSAFE, "overlay name '%s' "
				       "must be a plain directory name", s ? s : "");
		snprintf(p, sizeof(p), "%s/%s", b->overlays, s);
		if (!file_exists(p))
			return nf_fail(b->ctx, NF_E_NOTFOUND, "overlay '%s' "
				       "(system.overlays) not found: no directory "
				       "'%s'", s, p);
		json_array_append_new(b->overlay_names, json_string(s));
	}
	return 0;
}

static int inputs_key(struct build *b, const char *bkey, char out[NF_SHA256_HEX])
{
	char *doc = json_dumps(b->prof, JSON_SORT_KEYS | JSON_COMPACT);
	char line[PATH_MAX * 2 + 64];
	size_t i;
	json_t *n;
	int r = 0;

	if (!doc || nf_sha256_new(&ov_hash)) {
		free(doc);
		return -ENOMEM;
	}
	snprintf(line, sizeof(line), "nodeforge-image-v1\n%s\n%s\nepoch=%lld\n",
		 NF_VERSION, bkey, b->epoch);
	nf_sha256_update(ov_hash, line, strlen(line));
	nf_sha256_update(ov_hash, doc, strlen(doc));
	free(doc);
	if (b->nodes) {
		if (!(doc = json_dumps(b->nodes, JSON_SORT_KEYS | JSON_COMPACT)))
			return -ENOMEM;
		nf_sha256_update(ov_hash, "nodes=", 6);
		nf_sha256_update(ov_hash, doc, strlen(doc));
		free(doc);
	}
	/* nodeforge itself goes into the image */
	{
		char hex[NF_SHA256_HEX];
		unsigned long long sz;
		int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);

		if (fd >= 0 && !nf_sha256_fd(b->ctx, fd, "/proc/self/exe", hex, &sz))
			nf_sha256_update(ov_hash, hex, strlen(hex));
		if (fd >= 0)
			close(fd);
	}
	/* the signing key's public half: another key, another image */
	if (!nf_read_file(b->ctx, b->pub, 64 << 10, &doc, NULL)) {
		nf_sha256_update(ov_hash, doc, strlen(doc));
		free(doc);
	}
	json_array_foreach(b->overlay_names, i, n) {
		snprintf(line, sizeof(line), "%s/%s", b->overlays,
			 json_string_value(n));
		ov_ctx = b->ctx;
		ov_prefix = strlen(line);
		nf_sha256_update(ov_hash, json_string_value(n),
				 strlen(json_string_value(n)) + 1);
		r = nftw(line, ov_hash_cb, 32, FTW_PHYS);
		if (r) {
			if (r > 0)
				r = nf_fail(b->ctx, NF_E_INVALID,
					    "cannot read overlay '%s'", line);
			break;
		}
	}
	nf_sha256_final_hex(ov_hash, out);
	nf_sha256_free(ov_hash);
	ov_hash = NULL;
	return r;
}

/* ROLE.current names the same inputs and its files are there */
static int published_matches(struct build *b, const char *ikey,
			     struct nf_build_result *res)
{
	char path[PATH_MAX + 64], f[PATH_MAX * 2];
	static const char *const keys[] = { "kernel", "initramfs", "rootfs",
					    "manifest" };
	char *buf = NULL;
	json_t *j;
	int ok = 0;

	snprintf(path, sizeof(path), "%s/%s.current", b->out, b->role);
	if (nf_read_file(NULL, path, NF_POINTER_MAX, &buf, NULL))
		return 0;
	j = json_loads(buf, 0, NULL);
	free(buf);
	if (!j)
		return 0;
	if (!strcmp(json_string_value(json_object_get(j, "inputs_sha256")) ?: "",
		    ikey)) {
		ok = 1;
		for (size_t i = 0; i < NF_ARRAY_SIZE(keys); i++) {
			const char *v = json_string_value(json_object_get(j, keys[i]));

			snprintf(f, sizeof(f), "%s/%s", b->out, v ? v : "");
			if (!v || strchr(v, '/') || !file_exists(f))
				ok = 0;
		}
		if (b->el) {
			const char *v = json_string_value(json_object_get(j,
								"liveimg"));

			snprintf(f, sizeof(f), "%s/%s", b->out, v ? v : "");
			if (!v || strchr(v, '/') || !file_exists(f))
				ok = 0;
		}
	}
	if (ok) {
		const char *sha = json_string_value(json_object_get(j, "rootfs_sha256"));

		res->kernel = nf_strdup(json_string_value(json_object_get(j, "kernel")));
		res->initramfs = nf_strdup(json_string_value(json_object_get(j, "initramfs")));
		res->rootfs = nf_strdup(json_string_value(json_object_get(j, "rootfs")));
		res->manifest = nf_strdup(json_string_value(json_object_get(j, "manifest")));
		snprintf(res->rootfs_sha256, sizeof(res->rootfs_sha256), "%s",
			 sha ? sha : "");
	}
	json_decref(j);
	return ok;
}

/* ----------------------------------------------------------- bootstrap */

/* mmdebstrap or dnf, or a stand-in (tests) */
static const char *bootstrap_tool_el(int el)
{
	const char *t = getenv(el ? "NODEFORGE_DNF" : "NODEFORGE_MMDEBSTRAP");

	return t && *t ? t : el ? "dnf" : "mmdebstrap";
}

static int bootstrap_el_flag;

static const char *bootstrap_tool(void)
{
	return bootstrap_tool_el(bootstrap_el_flag);
}

/* EL: dnf --installroot into a directory, stored as a plain tarball so
 * the rest of the pipeline is the same for both families.  Repos: the
 * mirror's BaseOS and AppStream (gpg checked), or one local directory
 * repo (--mirror DIR, a createrepo_c tree). */
static int bootstrap_dnf(struct build *b, char **pkgs, size_t npkgs,
			 const char *tmptar, const char *log)
{
	char dir[PATH_MAX + 128], reason[1024], rel[64], inst[PATH_MAX + 160];
	char r1[PATH_MAX + 64], r2[PATH_MAX + 64], g1[PATH_MAX + 64],
	     g2[PATH_MAX + 64];
	char *argv[64 + 256];
	size_t a = 0;
	int r, local = !strncmp(b->mirror, "file://", 7);

	if (npkgs > 256)
		return nf_fail(b->ctx, NF_E_LIMIT, "more than 256 packages");
	snprintf(dir, sizeof(dir), "%s.d", tmptar);
	nf_rm_tree_at(AT_FDCWD, dir);
	if ((r = mkdir_p(b->ctx, dir, 0755)))
		return r;
	snprintf(inst, sizeof(inst), "--installroot=%s", dir);
	snprintf(rel, sizeof(rel), "--releasever=%s", b->suite);
	argv[a++] = (char *)bootstrap_tool_el(1);
	argv[a++] = "-y";
	argv[a++] = inst;
	argv[a++] = rel;
	argv[a++] = "--setopt=reposdir=/dev/null";
	argv[a++] = "--setopt=install_weak_deps=False";
	argv[a++] = "--setopt=tsflags=nodocs";
	argv[a++] = "--setopt=cachedir=/var/cache/dnf";
	argv[a++] = "--nodocs";
	if (local) {
		snprintf(r1, sizeof(r1), "--repofrompath=local,%s", b->mirror);
		argv[a++] = r1;
		argv[a++] = "--setopt=local.gpgcheck=0";
	} else {
		snprintf(r1, sizeof(r1), "--repofrompath=baseos,%s/BaseOS/x86_64/os/",
			 b->mirror);
		snprintf(r2, sizeof(r2), "--repofrompath=appstream,%s/AppStream/"
			 "x86_64/os/", b->mirror);
		snprintf(g1, sizeof(g1), "--setopt=baseos.gpgkey=%s/"
			 "RPM-GPG-KEY-Rocky-9", b->mirror);
		snprintf(g2, sizeof(g2), "--setopt=appstream.gpgkey=%s/"
			 "RPM-GPG-KEY-Rocky-9", b->mirror);
		argv[a++] = r1;
		argv[a++] = r2;
		argv[a++] = g1;
		argv[a++] = g2;
		argv[a++] = "--setopt=baseos.gpgcheck=1";
		argv[a++] = "--setopt=appstream.gpgcheck=1";
	}
	argv[a++] = "install";
	for (size_t i = 0; i < npkgs; i++)
		argv[a++] = pkgs[i];
	argv[a] = NULL;
	r = run_tool(b->ctx, argv, log, NULL);
	if (r > 0) {
		log_reason(log, reason, sizeof(reason));
		nf_rm_tree_at(AT_FDCWD, dir);
		if (strstr(reason, "No match for argument") ||
		    strstr(reason, "Unable to find a match"))
			return nf_fail(b->ctx, NF_E_EXTERNAL,
				       "bootstrap of '%s' failed: %s: a package of "
				       "system.packages.install is not in the repos "
				       "at '%s'; ship it as an artifact or remove it",
				       b->role, reason, b->mirror);
		return nf_fail(b->ctx, NF_E_EXTERNAL, "bootstrap of '%s' with dnf "
			       "from '%s' failed (exit %d): %s", b->role, b->mirror,
			       r, reason);
	}
	if (r < 0) {
		nf_rm_tree_at(AT_FDCWD, dir);
		return r;
	}
	{
		struct nf_pack_opts po = { .format = NF_PACK_TAR,
					   .compressor = NF_COMP_NONE,
					   .level = -1, .epoch = b->epoch };
		char man[PATH_MAX + 160];

		r = nf_pack(b->ctx, dir, tmptar, &po);
		snprintf(man, sizeof(man), "%s.manifest.json", tmptar);
		unlink(man);
	}
	nf_rm_tree_at(AT_FDCWD, dir);
	return r;
}

static int stage_bootstrap(struct build *b, char **pkgs, size_t npkgs,
			   const char *bkey, char *tarpath, size_t tarsz,
			   int *cached)
{
	char dir[PATH_MAX + 16], tmp[PATH_MAX + 96], log[PATH_MAX + 96];
	char reason[1024], sde[64], include[8192];
	struct nf_buf inc = { 0 };
	char *argv[64];
	char src1[PATH_MAX + 64], src2[PATH_MAX + 64], src3[PATH_MAX + 64];
	char *env[] = { sde, NULL };
	size_t a = 0;
	int r;

	snprintf(dir, sizeof(dir), "%s/bootstrap", b->cache);
	if ((r = mkdir_p(b->ctx, dir, 0755)))
		return r;
	snprintf(tarpath, tarsz, "%s/%s.tar", dir, bkey);
	*cached = 0;
	if (!b->o->no_cache && file_exists(tarpath)) {
		*cached = 1;
		return 0;
	}
	if (b->o->offline)
		return nf_fail(b->ctx, NF_E_NOTFOUND,
			       "--offline: no cached bootstrap for this package "
			       "set ('%s'); build once with network or --mirror DIR",
			       tarpath);
	if (b->el) {
		snprintf(tmp, sizeof(tmp), "%s/.tmp-%s-%d.tar", dir, bkey,
			 (int)getpid());
		snprintf(log, sizeof(log), "%s/%s.log", dir, bkey);
		r = bootstrap_dnf(b, pkgs, npkgs, tmp, log);
		if (!r && rename(tmp, tarpath) < 0)
			r = nf_fail(b->ctx, -errno, "cannot store '%s': %s",
				    tarpath, strerror(errno));
		if (r)
			unlink(tmp);
		return r;
	}
	for (size_t i = 0; i < npkgs; i++)
		nf_buf_printf(&inc, "%s%s", i ? "," : "", pkgs[i]);
	if (inc.err || inc.len >= sizeof(include)) {
		nf_buf_free(&inc);
		return nf_fail(b->ctx, NF_E_LIMIT, "package list is too long");
	}
	snprintf(include, sizeof(include), "--include=%s", inc.s);
	nf_buf_free(&inc);
	snprintf(tmp, sizeof(tmp), "%s/.tmp-%s-%d.tar", dir, bkey, (int)getpid());
	snprintf(log, sizeof(log), "%s/%s.log", dir, bkey);
	snprintf(sde, sizeof(sde), "SOURCE_DATE_EPOCH=%lld", b->epoch);
	snprintf(src1, sizeof(src1), "deb %s %s main", b->mirror, b->suite);
	snprintf(src2, sizeof(src2), "deb %s %s-updates main", b->mirror, b->suite);
	snprintf(src3, sizeof(src3), "deb %s %s-security main", b->security,
		 b->suite);
	argv[a++] = (char *)bootstrap_tool();
	argv[a++] = "--mode=root";
	argv[a++] = "--variant=minbase";
	argv[a++] = "--architectures=amd64";
	argv[a++] = "--format=tar";
	argv[a++] = "--aptopt=Acquire::Languages \"none\"";
	argv[a++] = "--aptopt=Acquire::Retries \"3\"";
	char dopts[NF_ARRAY_SIZE(dpkg_opts)][128];

	for (size_t i = 0; i < NF_ARRAY_SIZE(dpkg_opts); i++) {
		snprintf(dopts[i], sizeof(dopts[i]), "--dpkgopt=%s", dpkg_opts[i]);
		argv[a++] = dopts[i];
	}
	argv[a++] = include;
	argv[a++] = b->suite;
	argv[a++] = tmp;
	argv[a++] = src1;
	if (strncmp(b->mirror, "file://", 7))
		argv[a++] = src2;
	if (*b->security)
		argv[a++] = src3;
	argv[a] = NULL;
	r = run_tool(b->ctx, argv, log, env);
	if (r < 0) {
		unlink(tmp);
		return r;
	}
	if (r > 0) {
		unlink(tmp);
		log_reason(log, reason, sizeof(reason));
		if (strstr(reason, "Unable to locate package"))
			return nf_fail(b->ctx, NF_E_EXTERNAL,
				       "bootstrap of '%s' failed: %s: a package of "
				       "system.packages.install is not in %s at '%s'; "
				       "ship it as an artifact (system.artifacts) or "
				       "remove it", b->role, reason, b->suite,
				       b->mirror);
		return nf_fail(b->ctx, NF_E_EXTERNAL, "bootstrap of '%s' with "
			       "mmdebstrap from '%s' failed (exit %d): %s",
			       b->role, b->mirror, r, reason);
	}
	if (rename(tmp, tarpath) < 0) {
		r = -errno;
		unlink(tmp);
		return nf_fail(b->ctx, r, "cannot store '%s': %s", tarpath,
			       strerror(-r));
	}
	return 0;
}

/* ------------------------------------------------------------ overlays */

struct ov_walk {
	struct build *b;
	struct nf_apply *a;
	const char *name;
	size_t prefix;
	const char *dest;   /* where the tree goes in the image ("" = /) */
	int raw;            /* artifact: modes kept, no templates */
};

static struct ov_walk *ov_cur;

/* Value of a dotted path ("site.cluster", "profile.slurm.conf.X", "role") */
static int tmpl_lookup(const json_t *prof, const char *role, const char *var,
		       char *out, size_t outsz)
{
	const json_t *v;
	char buf[256], *p, *save = NULL;

	if (!strcmp(var, "role")) {
		snprintf(out, outsz, "%s", role);
		return 0;
	}
	snprintf(buf, sizeof(buf), "%s", var);
	p = strtok_r(buf, ".", &save);
	if (!p)
		return -1;
	if (!strcmp(p, "site"))
		v = json_object_get(prof, "site");
	else if (!strcmp(p, "profile"))
		v = prof;
	else
		return -1;
	while ((p = strtok_r(NULL, ".", &save))) {
		char *end;

		if (json_is_array(v)) {
			unsigned long i = strtoul(p, &end, 10);

			if (*end)
				return -1;
			v = json_array_get(v, i);
		} else {
			v = json_object_get(v, p);
		}
		if (!v)
			return -1;
	}
	if (json_is_string(v))
		snprintf(out, outsz, "%s", json_string_value(v));
	else if (json_is_integer(v))
		snprintf(out, outsz, "%lld", (long long)json_integer_value(v));
	else if (json_is_real(v))
		snprintf(out, outsz, "%g", json_real_value(v));
	else if (json_is_boolean(v))
		snprintf(out, outsz, "%s", json_is_true(v) ? "true" : "false");
	else
		return -1;
	return 0;
}

int nf_template_render(struct nf_ctx *ctx, const json_t *prof, const char *role,
		       const char *file, const char *in, struct nf_buf *out)
{
	const char *p = in;

	while (*p) {
		const char *d = strstr(p, "${");
		char var[256], val[4096];
		const char *end;

		if (!d) {
			nf_buf_printf(out, "%s", p);
			break;
		}
		if (d > p && d[-1] == '$') {
			nf_buf_printf(out, "%.*s${", (int)(d - p - 1), p);
			p = d + 2;
			continue;
		}
		nf_buf_printf(out, "%.*s", (int)(d - p), p);
		end = strchr(d, '}');
		if (!end || (size_t)(end - d - 2) >= sizeof(var))
			return nf_fail(ctx, NF_E_PARSE, "template '%s': "
				       "unterminated or too long '${'", file);
		snprintf(var, sizeof(var), "%.*s", (int)(end - d - 2), d + 2);
		if (tmpl_lookup(prof, role, var, val, sizeof(val)))
			return nf_fail(ctx, NF_E_INVALID, "template '%s': "
				       "undefined variable '${%s}' (known: "
				       "${role}, ${site.KEY...}, ${profile.KEY...})",
				       file, var);
		nf_buf_printf(out, "%s", val);
		p = end + 1;
	}
	return out->err;
}

static int ov_copy_cb(const char *p, const struct stat *st, int flag,
		      struct FTW *f)
{
	struct ov_walk *w = ov_cur;
	const char *rel = p + w->prefix;
	char dest[PATH_MAX];
	size_t n;
	int r;

	(void)f;
	if (!*rel)
		return 0;
	if (flag == FTW_DNR || flag == FTW_NS)
		return nf_fail(w->b->ctx, -EACCES, "cannot read overlay '%s'", p);
	snprintf(dest, sizeof(dest), "%s%s", w->dest ? w->dest : "", rel);
	if (S_ISDIR(st->st_mode))
		return nf_apply_mkdir(w->a, dest, w->raw ? st->st_mode & 0755
				      : 0755, 0, 0);
	if (S_ISLNK(st->st_mode)) {
		char target[PATH_MAX];
		ssize_t k = readlink(p, target, sizeof(target) - 1);

		if (k < 0)
			return nf_fail(w->b->ctx, -errno, "cannot read link '%s'", p);
		target[k] = '\0';
		return nf_apply_symlink(w->a, dest, target);
	}
	if (!S_ISREG(st->st_mode))
		return nf_fail(w->b->ctx, NF_E_UNSUPPORTED, "overlay '%s': '%s' is "
			       "not a file, directory or symlink", w->name, rel);
	/* modes are declared: 0755 for executables, 0644 otherwise, root;
	 * artifacts keep theirs (setuid/setgid dropped) */
	unsigned mode = w->raw ? st->st_mode & 0777
			       : st->st_mode & 0111 ? 0755 : 0644;
	char *buf = NULL;
	size_t len = 0;

	if ((r = nf_read_file(w->b->ctx, p, NF_OVERLAY_FILE_MAX, &buf, &len)))
		return r;
	n = strlen(dest);
	if (!w->raw && n > 5 && !strcmp(dest + n - 5, ".tmpl")) {
		struct nf_buf o = { 0 };

		dest[n - 5] = '\0';
		r = nf_template_render(w->b->ctx, w->b->prof, w->b->role, p,
				       buf, &o);
		free(buf);
		if (r) {
			nf_buf_free(&o);
			return r;
		}
		return nf_apply_write_buf(w->a, dest, &o, mode, 0, 0);
	}
	r = nf_apply_write(w->a, dest, buf, len, mode, 0, 0);
	free(buf);
	return r;
}

static int stage_overlays(struct build *b, int rootfd)
{
	struct nf_apply a = { .ctx = b->ctx, .rootfd = rootfd,
			      .profile = b->profile, .prof = b->prof,
			      .role = b->role };
	char dir[PATH_MAX * 2];
	size_t i;
	json_t *n;
	int r;

	json_array_foreach(b->overlay_names, i, n) {
		struct ov_walk w = { .b = b, .a = &a, .name = json_string_value(n) };

		snprintf(dir, sizeof(dir), "%s/%s", b->overlays, w.name);
		w.prefix = strlen(dir);
		ov_cur = &w;
		r = nftw(dir, ov_copy_cb, 32, FTW_PHYS);
		ov_cur = NULL;
		if (r)
			return r < 0 ? r : nf_fail(b->ctx, NF_E_INVALID,
						   "cannot copy overlay '%s'",
						   w.name);
	}
	return 0;
}

/* The running nodeforge binary as /usr/bin/nodeforge: the verifier
 * units call it at first boot */
static int install_self(struct build *b, int rootfd)
{
	struct nf_apply a = { .ctx = b->ctx, .rootfd = rootfd };
	char *buf = NULL;
	size_t len = 0;
	int r;

	if ((r = nf_read_file(b->ctx, "/proc/self/exe", 256u << 20, &buf, &len)))
		return r;
	r = nf_apply_write(&a, "/usr/bin/nodeforge", buf, len, 0755, 0, 0);
	free(buf);
	return r;
}

/* ------------------------------------------------------ host identity */

static int stage_identity(struct build *b, int rootfd)
{
	static const char *const gone[] = {
		"var/lib/dbus/machine-id", "var/lib/systemd/random-seed",
		"var/log/dpkg.log", "var/log/alternatives.log",
		"var/log/apt/history.log", "var/log/apt/term.log",
		"var/log/apt/eipp.log.xz", "var/log/bootstrap.log",
		"var/cache/apt/pkgcache.bin", "var/cache/apt/srcpkgcache.bin",
		"var/cache/debconf/templates.dat-old",
		"var/cache/debconf/config.dat-old",
		"etc/ssh/sshd_config.ucf-old",
		"var/log/dnf.log", "var/log/dnf.rpm.log",
		"var/log/dnf.librepo.log", "var/log/hawkey.log",
	};
	struct nf_apply a = { .ctx = b->ctx, .rootfd = rootfd,
			      .profile = b->profile, .prof = b->prof,
			      .role = b->role };
	struct nf_buf u = { 0 };
	int r, fd;
	DIR *d;

	for (size_t i = 0; i < NF_ARRAY_SIZE(gone); i++)
		if (unlinkat(rootfd, gone[i], 0) < 0 && errno != ENOENT &&
		    errno != ENOTDIR)
			return nf_fail(b->ctx, -errno, "cannot remove '/%s' from "
				       "the image: %s", gone[i], strerror(errno));
	{
		char p[PATH_MAX + 32];

		snprintf(p, sizeof(p), "%s/var/cache/dnf", b->root);
		nf_rm_tree_at(AT_FDCWD, p);
	}
	/* apt lists: large, dated, and refreshed by any later apt update */
	fd = openat(rootfd, "var/lib/apt/lists", O_RDONLY | O_DIRECTORY |
		    O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0 && (d = fdopendir(fd))) {
		struct dirent *de;

		while ((de = readdir(d)))
			if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
			    strcmp(de->d_name, "partial") &&
			    strcmp(de->d_name, "lock"))
				unlinkat(dirfd(d), de->d_name, 0);
		closedir(d);
	} else if (fd >= 0) {
		close(fd);
	}
	/* boot-time initrds are rebuilt on a stateful install; the diskless
	 * initramfs is the whole image */
	fd = openat(rootfd, "boot", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0 && (d = fdopendir(fd))) {
		struct dirent *de;

		while ((de = readdir(d)))
			if (!strncmp(de->d_name, "initrd.img", 10))
				unlinkat(dirfd(d), de->d_name, 0);
		closedir(d);
	} else if (fd >= 0) {
		close(fd);
	}
	/* ssh host keys: every node makes its own at first start */
	fd = openat(rootfd, "etc/ssh", O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
	if (fd >= 0 && (d = fdopendir(fd))) {
		struct dirent *de;

		while ((de = readdir(d)))
			if (!strncmp(de->d_name, "ssh_host_", 9))
				unlinkat(dirfd(d), de->d_name, 0);
		closedir(d);
		nf_apply_header(&u, "#", "build");
		/* before the unit's own 'sshd -t', which fails without keys */
		nf_buf_printf(&u, "# host keys are removed from the image: each "
			      "node generates its own before sshd checks its "
			      "config\n[Service]\nExecStartPre=\n"
			      "ExecStartPre=/usr/bin/ssh-keygen -A\n"
			      "ExecStartPre=/usr/sbin/sshd -t\n");
		if ((r = nf_apply_write_buf(&a, "/etc/systemd/system/ssh.service.d/"
					    "nodeforge-hostkeys.conf", &u, 0644,
					    0, 0)))
			return r;
	} else if (fd >= 0) {
		close(fd);
	}
	/* empty machine-id: systemd generates one on each node's first boot */
	if ((r = nf_apply_write(&a, "/etc/machine-id", "", 0, 0444, 0, 0)))
		return r;
	if ((r = nf_apply_write(&a, "/etc/hostname", "localhost\n", 10, 0644,
				0, 0)))
		return r;
	/* the node's resolver comes from DHCP, not from the build host */
	struct stat st;

	if (fstatat(rootfd, "etc/resolv.conf", &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISREG(st.st_mode) &&
	    (r = nf_apply_write(&a, "/etc/resolv.conf", "", 0, 0644, 0, 0)))
		return r;
	/* the kernel starts systemd from the initramfs: it is the root */
	if (!nf_apply_exists(&a, "/init") &&
	    (r = nf_apply_symlink(&a, "/init", "/sbin/init")))
		return r;
	return 0;
}

/* ---------------------------------------------------------------- pack */

/* Newest /boot/vmlinuz-* by version order */
static int find_kernel(struct build *b, char *out, size_t outsz)
{
	char dir[PATH_MAX + 8];
	struct dirent **list = NULL;
	int n, found = 0;

	snprintf(dir, sizeof(dir), "%s/boot", b->root);
	n = scandir(dir, &list, NULL, versionsort);
	for (int i = n - 1; i >= 0; i--) {
		if (!found && !strncmp(list[i]->d_name, "vmlinuz-", 8)) {
			snprintf(out, outsz, "%s/%s", dir, list[i]->d_name);
			found = 1;
		}
		free(list[i]);
	}
	free(list);
	if (!found)
		return nf_fail(b->ctx, NF_E_NOTFOUND, "no kernel in the image "
			       "('%s/vmlinuz-*'): is the kernel package installed?",
			       dir);
	return 0;
}

static int copy_file(struct nf_ctx *ctx, const char *from, const char *to)
{
	char buf[1 << 16];
	int in, out, r = 0;
	ssize_t n;

	in = open(from, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (in < 0)
		return nf_fail(ctx, -errno, "cannot read '%s': %s", from,
			       strerror(errno));
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (out < 0) {
		r = -errno;
		close(in);
		return nf_fail(ctx, r, "cannot write '%s': %s", to, strerror(-r));
	}
	while ((n = read(in, buf, sizeof(buf))) > 0) {
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(out, buf + off, (size_t)(n - off));

			if (w < 0) {
				r = -errno;
				goto done;
			}
			off += w;
		}
	}
	if (n < 0)
		r = -errno;
	else if (fsync(out) < 0)
		r = -errno;
done:
	close(in);
	if (close(out) < 0 && !r)
		r = -errno;
	if (r)
		return nf_fail(ctx, r, "cannot copy '%s' to '%s': %s", from, to,
			       strerror(-r));
	return 0;
}

/* Rename a packed archive to its content-addressed name and rewrite its
 * manifest's archive.name to match; returns the manifest */
static int name_archive(struct build *b, const char *tmpname,
			const char *final, const char *manifest_final,
			char sha[NF_SHA256_HEX])
{
	char from[PATH_MAX * 2], to[PATH_MAX * 2], mfrom[PATH_MAX * 2];
	json_t *m = NULL, *arch;
	char *doc;
	int r;

	snprintf(from, sizeof(from), "%s/%s", b->stage, tmpname);
	snprintf(mfrom, sizeof(mfrom), "%s.manifest.json", from);
	if ((r = nf_manifest_load(b->ctx, mfrom, &m)))
		return r;
	arch = json_object_get(m, "archive");
	if (sha)
		snprintf(sha, NF_SHA256_HEX, "%s",
			 json_string_value(json_object_get(arch, "sha256")) ?: "");
	json_object_set_new(arch, "name", json_string(final));
	json_object_set_new(m, "role", json_string(b->role));
	doc = json_dumps(m, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
	json_decref(m);
	if (!doc)
		return -ENOMEM;
	snprintf(to, sizeof(to), "%s/%s", b->stage, manifest_final);
	r = nf_write_atomic(b->ctx, to, doc, strlen(doc), 0644);
	free(doc);
	if (r)
		return r;
	unlink(mfrom);
	snprintf(to, sizeof(to), "%s/%s", b->stage, final);
	if (rename(from, to) < 0)
		return nf_fail(b->ctx, -errno, "cannot rename '%s': %s", from,
			       strerror(errno));
	return 0;
}

/* -------------------------------------------------------------- publish */

static int fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	fsync(fd);
	close(fd);
	return 0;
}

static int publish(struct build *b, const char *const *names, size_t n,
		   struct nf_build_result *res, const char *ikey)
{
	char from[PATH_MAX * 2], to[PATH_MAX * 2], ptr[PATH_MAX + 64];
	json_t *j;
	char *doc;
	int r;

	for (size_t i = 0; i < n; i++) {
		snprintf(from, sizeof(from), "%s/%s", b->stage, names[i]);
		snprintf(to, sizeof(to), "%s/%s", b->out, names[i]);
		if (rename(from, to) < 0)
			return nf_fail(b->ctx, -errno, "cannot publish '%s': %s",
				       to, strerror(errno));
	}
	fsync_dir(b->out);
	j = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s}",
		      "role", b->role,
		      "kernel", res->kernel, "initramfs", res->initramfs,
		      "rootfs", res->rootfs, "rootfs_sha256", res->rootfs_sha256,
		      "manifest", res->manifest, "inputs_sha256", ikey);
	if (!j)
		return -ENOMEM;
	if (*b->liveimg &&
	    (json_object_set_new(j, "liveimg", json_string(b->liveimg)) ||
	     json_object_set_new(j, "liveimg_sha256",
				 json_string(b->liveimg_sha256)))) {
		json_decref(j);
		return -ENOMEM;
	}
	doc = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(j);
	if (!doc)
		return -ENOMEM;
	snprintf(ptr, sizeof(ptr), "%s/%s.current", b->out, b->role);
	size_t len = strlen(doc);
	char *full = nf_asprintf("%s\n", doc);

	free(doc);
	if (!full)
		return -ENOMEM;
	r = nf_write_atomic(b->ctx, ptr, full, len + 1, 0644);
	free(full);
	return r;
}

/* ------------------------------------------------------------- artifacts */

/* Copy an unpacked tree into the image under `dest` through the root's
 * dirfd: an artifact can no more escape the root than an overlay */
static int copy_tree_in(struct build *b, int rootfd, const char *tree,
			const char *dest, const char *name)
{
	struct nf_apply a = { .ctx = b->ctx, .rootfd = rootfd,
			      .profile = b->profile, .prof = b->prof,
			      .role = b->role };
	struct ov_walk w = { .b = b, .a = &a, .name = name, .raw = 1,
			     .prefix = strlen(tree) };
	char d[PATH_MAX];
	int r;

	snprintf(d, sizeof(d), "%s", dest && strcmp(dest, "/") ? dest : "");
	if (*d && d[strlen(d) - 1] == '/')
		d[strlen(d) - 1] = '\0';
	w.dest = d;
	if (*d && (r = nf_apply_mkdir(&a, d, 0755, 0, 0)))
		return r;
	ov_cur = &w;
	r = nftw(tree, ov_copy_cb, 32, FTW_PHYS);
	ov_cur = NULL;
	if (r > 0)
		r = nf_fail(b->ctx, NF_E_INVALID, "cannot install artifact '%s'",
			    name);
	return r;
}

/* Run `cmd` inside the image root */
static int in_root(struct build *b, const char *name, const char *cmd)
{
	char log[PATH_MAX + 64], reason[1024];
	char *argv[] = { "chroot", b->root, "/bin/sh", "-ec", (char *)cmd, NULL };
	char *env[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin",
			"DEBIAN_FRONTEND=noninteractive", "LC_ALL=C", NULL };
	int r;

	snprintf(log, sizeof(log), "%s/artifact-%s.log", b->work, name);
	r = run_tool(b->ctx, argv, log, env);
	if (r > 0) {
		log_reason(log, reason, sizeof(reason));
		return nf_fail(b->ctx, NF_E_EXTERNAL, "artifact '%s': '%s' failed "
			       "in the image (exit %d): %s", name, cmd, r, reason);
	}
	return r;
}

static int install_artifact(struct build *b, int rootfd, const json_t *art,
			    const char *file)
{
	const char *name = json_string_value(json_object_get(art, "name"));
	const char *kind = json_string_value(json_object_get(art, "kind"));
	const char *dest = json_string_value(json_object_get(art, "dest"));
	const char *bld = json_string_value(json_object_get(art, "build"));
	char tree[PATH_MAX + 64], cmd[PATH_MAX + 256], src[PATH_MAX + 64];
	int r;

	if (!strcmp(kind, "deb")) {
		struct nf_apply a = { .ctx = b->ctx, .rootfd = rootfd };
		char *buf = NULL;
		size_t len = 0;

		snprintf(src, sizeof(src), "/var/cache/nodeforge/%s.deb", name);
		if ((r = nf_read_file(b->ctx, file, 2ULL << 30, &buf, &len)))
			return r;
		r = nf_apply_write(&a, src, buf, len, 0644, 0, 0);
		free(buf);
		if (r)
			return r;
		/* its dependencies come from system.packages.install */
		snprintf(cmd, sizeof(cmd), "dpkg -i --force-confold '%s' && rm -f '%s'",
			 src, src);
		return in_root(b, name, cmd);
	}
	if (!strcmp(kind, "rpm"))
		return nf_fail(b->ctx, NF_E_UNSUPPORTED, "artifact '%s': kind "
			       "'rpm' needs an EL distro; this image is Debian "
			       "(set distro: on the artifact to skip it here)", name);
	/* tarball and source: unpacked safely, then copied in */
	snprintf(tree, sizeof(tree), "%s/artifact-%s", b->work, name);
	nf_rm_tree_at(AT_FDCWD, tree);
	{
		struct nf_unpack_opts uo = { 0 };

		if ((r = nf_unpack(b->ctx, file, tree, &uo)))
			return r;
	}
	if (!strcmp(kind, "tarball"))
		return copy_tree_in(b, rootfd, tree, dest ? dest : "/", name);
	/* source: built inside the image, against its own headers (pyxis
	 * against the image's Slurm), then the sources are removed */
	if (!bld)
		return nf_fail(b->ctx, NF_E_INVALID, "artifact '%s' of kind "
			       "'source' has no 'build' command", name);
	snprintf(src, sizeof(src), "/usr/src/nodeforge/%s", name);
	if ((r = copy_tree_in(b, rootfd, tree, src, name)))
		return r;
	snprintf(cmd, sizeof(cmd), "cd '%s' && { %s\n}", src, bld);
	if ((r = in_root(b, name, cmd)))
		return r;
	snprintf(src, sizeof(src), "%s/usr/src/nodeforge", b->root);
	nf_rm_tree_at(AT_FDCWD, src);
	return 0;
}

static void fetch_progress(void *data, unsigned long long now,
			   unsigned long long total)
{
	struct build *b = data;

	(void)total;
	if (b->o->progress)
		b->o->progress(b->o->progress_data, NF_BUILD_BYTES, b->cur_stage,
			       now_s() - stage_t0, now);
}

/* Pinned artifacts (system.artifacts): fetched into the content-addressed
 * cache (lib/fetch.c) and installed by kind.  One that cannot be fetched
 * stops the build unless the profile marks it optional. */
static int stage_artifacts(struct build *b, int rootfd)
{
	const json_t *arts = json_object_get(json_object_get(b->prof, "system"),
					     "artifacts");
	const char *distro = json_string_value(json_object_get(
		json_object_get(b->prof, "site"), "distro"));
	struct nf_fetch_opts fo = {
		.cache = b->cache,
		.mirror = b->o->artifact_mirror,
		.offline = b->o->offline,
		.progress = fetch_progress,
		.progress_data = b,
	};
	size_t i;
	json_t *a;
	int r;

	json_array_foreach(arts, i, a) {
		const char *name = json_string_value(json_object_get(a, "name"));
		const char *only = json_string_value(json_object_get(a, "distro"));
		char *file = NULL, msg[1200];

		if (only && distro && strncmp(distro, only, strlen(only)))
			continue;
		r = nf_fetch(b->ctx, name,
			     json_string_value(json_object_get(a, "url")),
			     json_string_value(json_object_get(a, "sha256")),
			     &fo, &file);
		if (r && json_is_true(json_object_get(a, "optional"))) {
			snprintf(msg, sizeof(msg), "optional artifact skipped: %s",
				 nf_errmsg(b->ctx));
			note(b, msg);
			b->ctx->errmsg[0] = '\0';
			continue;
		}
		if (r)
			return r;
		r = install_artifact(b, rootfd, a, file);
		free(file);
		if (r)
			return r;
	}
	return 0;
}

/* ----------------------------------------------------------------- main */

static int resolve(struct build *b, const struct nf_site *site)
{
	struct nf_diags d;
	int r;

	nf_diags_init(&d);
	r = nf_profile_resolve(b->ctx, b->role, site, &b->profile, &d);
	if (r || nf_diags_errors(&d)) {
		for (size_t i = 0; i < d.n; i++)
			if (d.v[i].severity == NF_SEV_ERROR) {
				r = nf_fail(b->ctx, r ? r : NF_E_INVALID,
					    "profile '%s': %s:%u:%u: %s", b->role,
					    d.v[i].file, d.v[i].line, d.v[i].col,
					    d.v[i].message);
				break;
			}
		if (!r)
			r = NF_E_INVALID;
	}
	nf_diags_free(&d);
	if (!r)
		b->prof = nf_profile_json(b->profile);
	return r;
}

/* --inventory: the cluster (controllers, nodes, partitions), baked into the
 * image as /etc/slurm/cluster.conf; the image's inputs' hash includes it.
 * Nodes fetch the current copy from the boot tree at every boot. */
static int resolve_nodes(struct build *b, const struct nf_site *site)
{
	if (!b->o->inventory)
		return 0;
	return nf_cluster_load(b->ctx, b->o->inventory, site, &b->nodes);
}

void nf_build_result_free(struct nf_build_result *res)
{
	if (!res)
		return;
	free(res->dir);
	free(res->kernel);
	free(res->initramfs);
	free(res->rootfs);
	free(res->manifest);
	memset(res, 0, sizeof(*res));
}

static int build_image(struct build *b, const struct nf_site *site,
		       struct nf_build_result *res)
{
	char bkey[NF_SHA256_HEX], ikey[NF_SHA256_HEX], tool[256];
	char tar[PATH_MAX + 96], kernel[PATH_MAX * 2], p[PATH_MAX * 3];
	char id[13], rootfs[256], initrd[256], vmlinuz[256], manifest[256],
	     imanifest[256], lmanifest[256] = "", sig[300],
	     pubout[PATH_MAX + 32];
	char **pkgs = NULL;
	size_t npkgs = 0;
	int rootfd = -1, cached = 0, r;

	stage_begin(b, "resolve");
	if ((r = resolve(b, site)) || (r = resolve_nodes(b, site)) ||
	    (r = setup_paths(b)))
		return r;
	if ((r = take_lock(b)))
		return r;
	clean_stale(b);
	res->dir = nf_strdup(b->out);
	if ((r = package_list(b, &pkgs, &npkgs)))
		return r;
	bootstrap_el_flag = b->el;
	if ((r = tool_version(b->ctx, bootstrap_tool(), tool, sizeof(tool))) < 0)
		goto out;
	if ((r = bootstrap_key(b, pkgs, npkgs, tool, bkey)) ||
	    (r = overlay_list(b)) || (r = inputs_key(b, bkey, ikey)))
		goto out;
	snprintf(res->inputs_sha256, sizeof(res->inputs_sha256), "%s", ikey);
	stage_end(b, 0);
	if (!b->o->no_cache && published_matches(b, ikey, res)) {
		res->unchanged = 1;
		res->bootstrap_cached = 1;
		note(b, "inputs unchanged: the published image is current");
		r = 0;
		goto out;
	}

	stage_begin(b, "bootstrap");
	if ((r = stage_bootstrap(b, pkgs, npkgs, bkey, tar, sizeof(tar), &cached)))
		goto out;
	res->bootstrap_cached = cached;
	if (cached)
		note(b, "cached");
	stage_end(b, 0);

	stage_begin(b, "unpack");
	snprintf(b->work, sizeof(b->work), "%s/work", b->cache);
	if ((r = mkdir_p(b->ctx, b->work, 0700)))
		goto out;
	snprintf(b->work, sizeof(b->work), "%s/work/%s-%d", b->cache, b->role,
		 (int)getpid());
	snprintf(b->root, sizeof(b->root), "%s/root", b->work);
	nf_rm_tree_at(AT_FDCWD, b->work);
	if ((r = mkdir_p(b->ctx, b->work, 0700)))
		goto out;
	{
		struct nf_unpack_opts uo = { .devices = 1 };

		if ((r = nf_unpack(b->ctx, tar, b->root, &uo)))
			goto out;
	}
	if ((r = nf_apply_open_root(b->ctx, b->root, &rootfd)))
		goto out;
	/* the image's / is 0755 root:root whatever the tarball said */
	if (fchmod(rootfd, 0755) < 0 || fchown(rootfd, 0, 0) < 0) {
		r = nf_fail(b->ctx, -errno, "cannot set the mode of '%s': %s",
			    b->root, strerror(errno));
		goto out;
	}
	stage_end(b, 0);

	stage_begin(b, "artifacts");
	if ((r = stage_artifacts(b, rootfd)))
		goto out;
	stage_end(b, 0);

	stage_begin(b, "overlays");
	if ((r = stage_overlays(b, rootfd)))
		goto out;
	stage_end(b, 0);

	stage_begin(b, "facets");
	if ((r = nf_apply_all_nodes(b->ctx, rootfd, b->profile, b->nodes)) ||
	    (r = install_self(b, rootfd)))
		goto out;
	stage_end(b, 0);

	stage_begin(b, "identity");
	if ((r = stage_identity(b, rootfd)))
		goto out;
	stage_end(b, 0);

	snprintf(b->stage, sizeof(b->stage), "%s/.tmp-%d", b->out, (int)getpid());
	if ((r = mkdir_p(b->ctx, b->stage, 0755)))
		goto out;
	{
		struct nf_pack_opts po = {
			.format = NF_PACK_TAR, .compressor = NF_COMP_ZSTD,
			.level = -1, .threads = 0, .epoch = b->epoch,
			.progress = pack_progress, .progress_data = b,
		};
		struct stat st;

		stage_begin(b, "pack rootfs");
		snprintf(p, sizeof(p), "%s/rootfs.tar.zst", b->stage);
		if ((r = nf_pack(b->ctx, b->root, p, &po)))
			goto out;
		stat(p, &st);
		stage_end(b, (unsigned long long)st.st_size);

		stage_begin(b, "pack initramfs");
		po.format = NF_PACK_CPIO;
		snprintf(p, sizeof(p), "%s/initramfs.cpio.zst", b->stage);
		if ((r = nf_pack(b->ctx, b->root, p, &po)))
			goto out;
		stat(p, &st);
		stage_end(b, (unsigned long long)st.st_size);

		if (b->el) {
			stage_begin(b, "pack liveimg");
			po.format = NF_PACK_TAR;
			po.compressor = NF_COMP_XZ;
			snprintf(p, sizeof(p), "%s/rootfs.tar.xz", b->stage);
			if ((r = nf_pack(b->ctx, b->root, p, &po)))
				goto out;
			stat(p, &st);
			stage_end(b, (unsigned long long)st.st_size);
		}
	}

	stage_begin(b, "sign");
	if ((r = find_kernel(b, kernel, sizeof(kernel))))
		goto out;
	snprintf(p, sizeof(p), "%s/rootfs.tar.zst.manifest.json", b->stage);
	{
		json_t *m = NULL;

		if ((r = nf_manifest_load(b->ctx, p, &m)))
			goto out;
		snprintf(res->rootfs_sha256, sizeof(res->rootfs_sha256), "%s",
			 json_string_value(json_object_get(json_object_get(m,
				"archive"), "sha256")) ?: "");
		json_decref(m);
	}
	snprintf(id, sizeof(id), "%.12s", res->rootfs_sha256);
	snprintf(rootfs, sizeof(rootfs), "%s-%s.rootfs.tar.zst", b->role, id);
	snprintf(initrd, sizeof(initrd), "%s-%s.initramfs.cpio.zst", b->role, id);
	snprintf(vmlinuz, sizeof(vmlinuz), "%s-%s.vmlinuz", b->role, id);
	snprintf(manifest, sizeof(manifest), "%s-%s.manifest.json", b->role, id);
	snprintf(imanifest, sizeof(imanifest), "%s-%s.initramfs.manifest.json",
		 b->role, id);
	if ((r = name_archive(b, "rootfs.tar.zst", rootfs, manifest, NULL)) ||
	    (r = name_archive(b, "initramfs.cpio.zst", initrd, imanifest, NULL)))
		goto out;
	if (b->el) {
		json_t *m = NULL;

		/* named by its own hash: the tree and caches hold a name
		 * forever, and xz's bytes may change with liblzma while the
		 * tar.zst's stay */
		snprintf(p, sizeof(p), "%s/rootfs.tar.xz.manifest.json",
			 b->stage);
		if ((r = nf_manifest_load(b->ctx, p, &m)))
			goto out;
		snprintf(b->liveimg_sha256, sizeof(b->liveimg_sha256), "%s",
			 json_string_value(json_object_get(json_object_get(m,
				"archive"), "sha256")) ?: "");
		json_decref(m);
		snprintf(b->liveimg, sizeof(b->liveimg), "%s-%.12s.rootfs.tar.xz",
			 b->role, b->liveimg_sha256);
		snprintf(lmanifest, sizeof(lmanifest),
			 "%s-%s.liveimg.manifest.json", b->role, id);
		if ((r = name_archive(b, "rootfs.tar.xz", b->liveimg, lmanifest,
				      NULL)))
			goto out;
		snprintf(p, sizeof(p), "%s/%s", b->stage, lmanifest);
		if ((r = nf_sign_file(b->ctx, p, b->key)))
			goto out;
	}
	snprintf(p, sizeof(p), "%s/%s", b->stage, vmlinuz);
	if ((r = copy_file(b->ctx, kernel, p)))
		goto out;
	snprintf(p, sizeof(p), "%s/%s", b->stage, manifest);
	if ((r = nf_sign_file(b->ctx, p, b->key)))
		goto out;
	snprintf(p, sizeof(p), "%s/%s", b->stage, imanifest);
	if ((r = nf_sign_file(b->ctx, p, b->key)))
		goto out;
	stage_end(b, 0);

	stage_begin(b, "publish");
	res->kernel = nf_strdup(vmlinuz);
	res->initramfs = nf_strdup(initrd);
	res->rootfs = nf_strdup(rootfs);
	res->manifest = nf_strdup(manifest);
	{
		char s1[300], s2[300], s3[300];
		/* the manifest the pointer names goes last */
		const char *names[] = { rootfs, initrd, vmlinuz, imanifest, s2,
					b->liveimg, lmanifest, s3, manifest,
					s1 };
		size_t n = 0;
		const char *list[NF_ARRAY_SIZE(names)];

		snprintf(s1, sizeof(s1), "%s.sig", manifest);
		snprintf(s2, sizeof(s2), "%s.sig", imanifest);
		snprintf(s3, sizeof(s3), "%s%s", lmanifest, *lmanifest ? ".sig"
									 : "");
		(void)sig;
		for (size_t i = 0; i < NF_ARRAY_SIZE(names); i++)
			if (*names[i])
				list[n++] = names[i];
		if ((r = publish(b, list, n, res, ikey)))
			goto out;
	}
	/* the public key beside the images, for 'nodeforge manifest verify' */
	{
		char *pub = NULL;
		size_t len = 0;
		const char *o = b->o->out && *b->o->out ? b->o->out : "out";

		snprintf(pubout, sizeof(pubout), "%s/signing.pub", o);
		if (!nf_read_file(b->ctx, b->pub, 64 << 10, &pub, &len)) {
			r = nf_write_atomic(b->ctx, pubout, pub, len, 0644);
			free(pub);
			if (r)
				goto out;
		} else {
			b->ctx->errmsg[0] = '\0';
		}
	}
	stage_end(b, 0);
	r = 0;
out:
	if (rootfd >= 0)
		close(rootfd);
	if (*b->work)
		nf_rm_tree_at(AT_FDCWD, b->work);
	if (*b->stage)
		nf_rm_tree_at(AT_FDCWD, b->stage);
	nf_strv_free(pkgs, npkgs);
	return r;
}

int nf_build(struct nf_ctx *ctx, const char *role, const struct nf_site *site,
	     const struct nf_build_opts *opts, struct nf_build_result *res)
{
	static const struct nf_build_opts defaults = { .epoch = -1 };
	struct build b = { .ctx = ctx, .o = opts ? opts : &defaults,
			   .role = role, .lockfd = -1 };
	int r;

	memset(res, 0, sizeof(*res));
	if (!role || !*role || strchr(role, '/') || role[0] == '.')
		return nf_fail(ctx, NF_E_INVALID, "role '%s' is not a role name",
			       role ? role : "");
	r = build_image(&b, site, res);
	if (b.lockfd >= 0)
		close(b.lockfd);
	json_decref(b.overlay_names);
	json_decref(b.nodes);
	nf_profile_free(b.profile);
	return r;
}
