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
#include "build_int.h"

#include <dirent.h>
#include <fcntl.h>
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

/* ------------------------------------------------------------ progress */

static void stage_begin(struct build *b, const char *name)
{
	b->cur_stage = name;
	b->stage_t0 = nf_now_s();
	nf_log(b->ctx, NF_LOG_DEBUG, "build: stage '%s'", name);
	if (b->o->progress)
		b->o->progress(b->o->progress_data, NF_BUILD_START, name, 0, 0);
}

static void stage_end(struct build *b, unsigned long long bytes)
{
	if (b->o->progress)
		b->o->progress(b->o->progress_data, NF_BUILD_DONE, b->cur_stage,
			       nf_now_s() - b->stage_t0, bytes);
}

void nf_bld_note(struct build *b, const char *msg)
{
	if (b->o->progress)
		b->o->progress(b->o->progress_data, NF_BUILD_NOTE, msg,
			       nf_now_s() - b->stage_t0, 0);
}

static void pack_progress(void *data, unsigned long long entries,
			  unsigned long long total, unsigned long long bytes)
{
	struct build *b = data;

	(void)entries;
	(void)total;
	if (b->o->progress)
		b->o->progress(b->o->progress_data, NF_BUILD_BYTES, b->cur_stage,
			       nf_now_s() - b->stage_t0, bytes);
}

/* ---------------------------------------------------------------- paths */

int nf_bld_mkdir_p(struct nf_ctx *ctx, const char *path, unsigned mode)
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

int nf_bld_file_exists(const char *p)
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

/* The work roots of builds that died without removing theirs (killed,
 * power lost): CACHE/work/ROLE-PID whose PID no longer runs.  A compute
 * root is gigabytes; every later build would otherwise keep them. */
static void clean_stale_work(struct build *b)
{
	char dir[PATH_MAX + 16];
	struct dirent *de;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/work", b->cache);
	if (!(d = opendir(dir)))
		return;
	while ((de = readdir(d))) {
		const char *dash = strrchr(de->d_name, '-');
		char *end;
		long pid;

		if (!dash || dash == de->d_name || !dash[1])
			continue;
		errno = 0;
		pid = strtol(dash + 1, &end, 10);
		if (*end || errno || pid <= 0 || pid == (long)getpid() ||
		    pid > INT_MAX)
			continue;
		if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		nf_log(b->ctx, NF_LOG_INFO, "removing the work root of build %ld, "
		       "which is gone: %s/%s", pid, dir, de->d_name);
		nf_rm_tree_at(dirfd(d), de->d_name);
	}
	closedir(d);
}

/* The directory of the logs of what runs in the root: CACHE/logs/ROLE,
 * emptied first.  Builds of one role with one cache may run side by side
 * (into different OUTs, or for two sites): the one holding
 * CACHE/logs/ROLE.lock owns that directory, another writes to
 * CACHE/logs/ROLE-PID instead of emptying the first one's logs. */
static int logs_dir(struct build *b)
{
	char dir[PATH_MAX + 16], lock[PATH_MAX + 32];
	int r;

	snprintf(dir, sizeof(dir), "%s/logs", b->cache);
	if ((r = nf_bld_mkdir_p(b->ctx, dir, 0700)))
		return r;
	snprintf(lock, sizeof(lock), "%s/%s.lock", dir, b->role);
	if ((r = nf_lock_path(b->ctx, lock, 0, &b->logsfd)) < 0)
		return r;
	if (r == 0) {
		snprintf(b->logs, sizeof(b->logs), "%s/%s", dir, b->role);
	} else {
		snprintf(b->logs, sizeof(b->logs), "%s/%s-%d", dir, b->role,
			 (int)getpid());
		nf_log(b->ctx, NF_LOG_INFO, "another build of '%s' uses this "
		       "cache: this one's logs are in %s", b->role, b->logs);
	}
	nf_rm_tree_at(AT_FDCWD, b->logs);
	return nf_bld_mkdir_p(b->ctx, b->logs, 0700);
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
	const char *m, *mopt;
	int r;

	if (snprintf(b->out, sizeof(b->out), "%s/%s", out, b->role) >=
	    (int)sizeof(b->out))
		return nf_fail(b->ctx, NF_E_LIMIT, "output path '%s' is too long",
			       out);
	if (!o->cache || !*o->cache)
		return nf_fail(b->ctx, NF_E_INVALID, "no cache directory: "
			       "set HOME or pass --cache DIR");
	/* absolute: tools that run elsewhere (patch in an artifact's tree,
	 * commands in the image root) are given paths in it */
	if (o->cache[0] != '/') {
		char cwd[PATH_MAX];

		if (!getcwd(cwd, sizeof(cwd)) ||
		    snprintf(b->cache, sizeof(b->cache), "%s/%s", cwd, o->cache) >=
		    (int)sizeof(b->cache))
			return nf_fail(b->ctx, NF_E_LIMIT, "cache path '%s' is too "
				       "long", o->cache);
	} else
		snprintf(b->cache, sizeof(b->cache), "%s", o->cache);
	if (o->overlays && *o->overlays)
		snprintf(b->overlays, sizeof(b->overlays), "%s", o->overlays);
	else
		snprintf(b->overlays, sizeof(b->overlays), "%s/../overlays",
			 nf_ctx_profiles_dir(b->ctx));
	if (!distro)
		distro = "debian13";
	if ((r = nf_profile_check_distro(b->ctx, b->profile, distro)) ||
	    (r = nf_bld_check_site_artifacts(b)) ||
	    (r = nf_bld_check_module_signing(b)))
		return r;
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
	/* named by --mirror, or the site's mirrors.* */
	mopt = o->mirror && *o->mirror ? "--mirror" : "the site's mirror";
	if (!nf_is_url(m)) {
		char *real = realpath(m, NULL);

		if (!real)
			return nf_fail(b->ctx, -errno, "%s '%s': %s", mopt, m,
				       errno == ENOENT ? "no such directory"
						       : strerror(errno));
		snprintf(b->mirror, sizeof(b->mirror), "file://%s", real);
		free(real);
	} else if (!strncmp(m, "http://", 7) || !strncmp(m, "https://", 8) ||
		   !strncmp(m, "file://", 7)) {
		snprintf(b->mirror, sizeof(b->mirror), "%s", m);
	} else {
		return nf_fail(b->ctx, NF_E_INVALID, "%s '%s': a URL is http://, "
			       "https:// or file://, else a directory", mopt, m);
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
		if (!nf_bld_file_exists(b->key)) {
			unsigned mark = nf_err_mark(b->ctx);

			if ((r = nf_bld_mkdir_p(b->ctx, b->cache, 0755)))
				return r;
			/* -EEXIST: a build beside this one made it first */
			if ((r = nf_keys_signing(b->ctx, kd)) == -EEXIST)
				nf_err_drop(b->ctx, mark);
			else if (r)
				return r;
		}
	}
	b->epoch = o->epoch >= 0 ? o->epoch : NF_DEFAULT_EPOCH;
	return 0;
}

static int take_lock(struct build *b)
{
	char path[PATH_MAX + 16];
	int r;

	if ((r = nf_bld_mkdir_p(b->ctx, b->out, 0755)))
		return r;
	snprintf(path, sizeof(path), "%s/.lock", b->out);
	if ((r = nf_lock_path(b->ctx, path, 0, &b->lockfd)) == 1)
		return nf_fail(b->ctx, NF_E_LOCKED,
			       "another build of '%s' is running (lock "
			       "'%s' is held); wait for it or stop it",
			       b->role, path);
	return r;
}


/* Digest of an overlay tree: paths, types, modes and contents */
/* An overlay's tree into the inputs' hash: each entry's path, mode and
 * content (a symlink's target), in the walk's bytewise order */
struct ov_hash {
	struct nf_ctx *ctx;
	struct nf_sha256 *h;
};

static int ov_hash_cb(void *data, const struct nf_walk_entry *e)
{
	struct ov_hash *oh = data;
	struct nf_sha256 *h = oh->h;
	char link[PATH_MAX];
	char hex[NF_SHA256_HEX];
	char line[PATH_MAX + 128];
	unsigned long long sz;

	snprintf(line, sizeof(line), "/%s\n%o\n", e->rel, e->st->st_mode);
	nf_sha256_update(h, line, strlen(line));
	if (S_ISLNK(e->st->st_mode)) {
		ssize_t n = readlinkat(e->dfd, e->name, link, sizeof(link) - 1);

		if (n >= 0)
			nf_sha256_update(h, link, (size_t)n);
	} else if (S_ISREG(e->st->st_mode)) {
		int fd = openat(e->dfd, e->name, O_RDONLY | O_NOFOLLOW |
				O_CLOEXEC);
		int r;

		if (fd < 0)
			return nf_fail(oh->ctx, -errno, "cannot read overlay "
				       "'%s': %s", e->path, strerror(errno));
		r = nf_sha256_fd(oh->ctx, fd, e->path, hex, &sz);
		close(fd);
		if (r)
			return r;
		nf_sha256_update(h, hex, strlen(hex));
	}
	return 0;
}

static const struct nf_walk_ops ov_hash_ops = { .enter = ov_hash_cb };

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
	if (nf_bld_file_exists(p))
		json_array_append_new(b->overlay_names, json_string("common"));
	snprintf(p, sizeof(p), "%s/%s", b->overlays, b->role);
	if (nf_bld_file_exists(p))
		json_array_append_new(b->overlay_names, json_string(b->role));
	json_array_foreach(names, i, n) {
		const char *s = json_string_value(n);

		if (!s || !*s || strchr(s, '/') || !strcmp(s, ".") ||
		    !strcmp(s, ".."))
			return nf_fail(b->ctx, NF_E_UNSAFE, "overlay name '%s' "
				       "must be a plain directory name", s ? s : "");
		snprintf(p, sizeof(p), "%s/%s", b->overlays, s);
		if (!nf_bld_file_exists(p))
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
	struct nf_sha256 *ov_hash = NULL;

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
	/* the certificate the modules are signed with (its key with it) */
	if (*b->modcert) {
		nf_sha256_update(ov_hash, "modcert=", 8);
		nf_sha256_update(ov_hash, b->modcert, strlen(b->modcert));
	}
	/* nodeforge itself goes into the image */
	{
		char hex[NF_SHA256_HEX];
		int r2 = nf_bld_self_sha256(b, hex);

		if (r2) {
			nf_sha256_free(ov_hash);
			return r2;
		}
		const char *tag = b->self_host ? "self=host:" : "self=pkg:";

		nf_sha256_update(ov_hash, tag, strlen(tag));
		nf_sha256_update(ov_hash, hex, strlen(hex));
	}
	/* the signing key's public half: another key, another image */
	if (!nf_read_file(b->ctx, b->pub, 64 << 10, &doc, NULL)) {
		nf_sha256_update(ov_hash, doc, strlen(doc));
		free(doc);
	}
	json_array_foreach(b->overlay_names, i, n) {
		struct ov_hash oh = { b->ctx, ov_hash };

		snprintf(line, sizeof(line), "%s/%s", b->overlays,
			 json_string_value(n));
		nf_sha256_update(ov_hash, json_string_value(n),
				 strlen(json_string_value(n)) + 1);
		if ((r = nf_walk_tree(b->ctx, line, &ov_hash_ops, &oh)))
			break;
	}
	nf_sha256_final_hex(ov_hash, out);
	nf_sha256_free(ov_hash);
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
			if (!v || strchr(v, '/') || !nf_bld_file_exists(f))
				ok = 0;
		}
		if (b->el) {
			const char *v = json_string_value(json_object_get(j,
								"liveimg"));

			snprintf(f, sizeof(f), "%s/%s", b->out, v ? v : "");
			if (!v || strchr(v, '/') || !nf_bld_file_exists(f))
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
	if (!r && site) {
		const char *mk = json_string_value(json_object_get(json_object_get(
			json_object_get(nf_site_json(site), "secrets"),
			"module_signing_key"), "path"));

		snprintf(b->modkey, sizeof(b->modkey), "%s", mk ? mk : "");
	}
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
	char bkey[NF_SHA256_HEX], ikey[NF_SHA256_HEX] = "", tool[256];
	char tar[PATH_MAX + 96], kernel[PATH_MAX * 2], p[PATH_MAX * 3];
	char built[PATH_MAX + 96];
	char id[13], rootfs[256], initrd[256], vmlinuz[256], manifest[256],
	     imanifest[256], lmanifest[256] = "", sig[300],
	     pubout[PATH_MAX + 32];
	char **pkgs = NULL;
	size_t npkgs = 0;
	int rootfd = -1, cached = 0, have_built = 0, builtfd = -1, r;

	stage_begin(b, "resolve");
	if ((r = resolve(b, site)) || (r = resolve_nodes(b, site)) ||
	    (r = setup_paths(b)) ||
	    (!b->o->prepare && (r = nf_bld_self_resolve(b))))
		return r;
	/* --prepare writes only the cache, under the cache's own locks: a
	 * build of the role may publish beside it */
	if (!b->o->prepare) {
		if ((r = take_lock(b)))
			return r;
		clean_stale(b);
	}
	clean_stale_work(b);
	res->dir = nf_strdup(b->out);
	if ((r = nf_bld_package_list(b, &pkgs, &npkgs)))
		return r;
	if ((r = nf_bld_tool_version(b->ctx, nf_bld_bootstrap_tool(b), tool, sizeof(tool))) < 0)
		goto out;
	/* --prepare publishes nothing: no inputs key to compare */
	if ((r = nf_bld_bootstrap_key(b, pkgs, npkgs, tool, bkey)) ||
	    (r = nf_bld_built_path(b, bkey, built, sizeof(built))) ||
	    (!b->o->prepare &&
	     ((r = overlay_list(b)) || (r = inputs_key(b, bkey, ikey)))))
		goto out;
	have_built = *built && !b->o->no_cache && nf_bld_file_exists(built);
	snprintf(res->inputs_sha256, sizeof(res->inputs_sha256), "%s", ikey);
	stage_end(b, 0);
	if (!b->o->no_cache && !b->o->prepare && published_matches(b, ikey, res)) {
		res->unchanged = 1;
		res->bootstrap_cached = 1;
		nf_bld_note(b, "inputs unchanged: the published image is current");
		r = 0;
		goto out;
	}

	stage_begin(b, "bootstrap");
	if ((r = nf_bld_built_lock(b, built, &have_built, &builtfd)))
		goto out;
	if (have_built) {
		/* the root after the artifacts stage is cached: the
		 * bootstrap under it is not needed */
		snprintf(tar, sizeof(tar), "%s", built);
		cached = 1;
	} else if ((r = nf_bld_stage_bootstrap(b, pkgs, npkgs, bkey, tar,
					       sizeof(tar), &cached)))
		goto out;
	res->bootstrap_cached = cached;
	if (cached)
		nf_bld_note(b, "cached");
	stage_end(b, 0);
	/* --prepare: nothing more to cache when the stage after the
	 * bootstrap has nothing to do or its root is cached already */
	if (b->o->prepare && (!*built || have_built || b->o->no_cache)) {
		res->prepared = 1;
		goto out;
	}

	stage_begin(b, "unpack");
	snprintf(b->work, sizeof(b->work), "%s/work", b->cache);
	if ((r = nf_bld_mkdir_p(b->ctx, b->work, 0700)))
		goto out;
	snprintf(b->work, sizeof(b->work), "%s/work/%s-%d", b->cache, b->role,
		 (int)getpid());
	snprintf(b->root, sizeof(b->root), "%s/root", b->work);
	nf_rm_tree_at(AT_FDCWD, b->work);
	if ((r = nf_bld_mkdir_p(b->ctx, b->work, 0700)))
		goto out;
	/* the logs of what ran in the root outlive the work directory, so
	 * the path a failure names is there to read */
	if ((r = logs_dir(b)))
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
	if (have_built)
		nf_bld_note(b, "cached (built on this bootstrap before)");
	else if ((r = nf_bld_stage_artifacts(b, rootfd)) ||
		 (r = nf_bld_stage_purge(b)) ||
		 (*built && !b->o->no_cache && (r = nf_bld_built_store(b, built))))
		goto out;
	if (builtfd >= 0) {
		close(builtfd);
		builtfd = -1;
	}
	if (b->o->prepare) {
		stage_end(b, 0);
		res->prepared = 1;
		goto out;
	}
	if ((r = nf_bld_stage_site_artifacts(b, rootfd)) ||
	    (r = nf_bld_sign_modules(b, rootfd)))
		goto out;
	stage_end(b, 0);

	stage_begin(b, "overlays");
	if ((r = nf_bld_stage_overlays(b, rootfd)))
		goto out;
	stage_end(b, 0);

	stage_begin(b, "facets");
	if ((r = nf_apply_all_cluster(b->ctx, rootfd, b->profile, b->nodes)) ||
	    (r = nf_bld_install_self(b, rootfd)) ||
	    (r = nf_bld_install_trust(b, rootfd)))
		goto out;
	stage_end(b, 0);

	stage_begin(b, "identity");
	if ((r = nf_bld_stage_identity(b, rootfd)))
		goto out;
	stage_end(b, 0);

	snprintf(b->stage, sizeof(b->stage), "%s/.tmp-%d", b->out, (int)getpid());
	if ((r = nf_bld_mkdir_p(b->ctx, b->stage, 0755)))
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
	if ((r = nf_root_find_kernel(b->ctx, rootfd, p, sizeof(p), NULL, 0)))
		goto out;
	snprintf(kernel, sizeof(kernel), "%s%s", b->root, p);
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
	if ((r = nf_bld_name_archive(b, "rootfs.tar.zst", rootfs, manifest, NULL)) ||
	    (r = nf_bld_name_archive(b, "initramfs.cpio.zst", initrd, imanifest, NULL)))
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
		if ((r = nf_bld_name_archive(b, "rootfs.tar.xz", b->liveimg, lmanifest,
				      NULL)))
			goto out;
		snprintf(p, sizeof(p), "%s/%s", b->stage, lmanifest);
		if ((r = nf_sign_file(b->ctx, p, b->key)))
			goto out;
	}
	snprintf(p, sizeof(p), "%s/%s", b->stage, vmlinuz);
	if ((r = nf_bld_copy_file(b->ctx, kernel, p)))
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
		if ((r = nf_bld_publish(b, list, n, res, ikey)))
			goto out;
	}
	/* the public key beside the images, for 'nodeforge manifest verify' */
	{
		char *pub = NULL;
		size_t len = 0;
		const char *o = b->o->out && *b->o->out ? b->o->out : "out";
		unsigned m;

		snprintf(pubout, sizeof(pubout), "%s/signing.pub", o);
		m = nf_err_mark(b->ctx);
		if (!nf_read_file(b->ctx, b->pub, 64 << 10, &pub, &len)) {
			r = nf_write_atomic(b->ctx, pubout, pub, len, 0644);
			free(pub);
			if (r)
				goto out;
		} else {
			nf_err_drop(b->ctx, m);
		}
	}
	stage_end(b, 0);
	r = 0;
out:
	if (rootfd >= 0)
		close(rootfd);
	if (builtfd >= 0)
		close(builtfd);
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
			   .role = role, .lockfd = -1,
			   .logsfd = -1 };
	int r;

	memset(res, 0, sizeof(*res));
	if (!role || !*role || strchr(role, '/') || role[0] == '.')
		return nf_fail(ctx, NF_E_INVALID, "role '%s' is not a role name",
			       role ? role : "");
	r = build_image(&b, site, res);
	if (b.lockfd >= 0)
		close(b.lockfd);
	if (b.logsfd >= 0)
		close(b.logsfd);
	json_decref(b.overlay_names);
	json_decref(b.nodes);
	nf_profile_free(b.profile);
	return r;
}
