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

/* One image on its way through the stages */
struct pipeline {
	struct build *b;
	const struct nf_site *site;
	struct nf_build_result *res;
	char **pkgs;                     /* the bootstrap's package set */
	size_t npkgs;
	char bkey[NF_SHA256_HEX];        /* the bootstrap's key */
	char ikey[NF_SHA256_HEX];        /* the inputs' hash ("" --prepare) */
	char built[PATH_MAX + 96];       /* the cached root after the
					  * artifacts stage, "" none */
	char tar[PATH_MAX + 96];         /* the root to unpack */
	int have_built, builtfd, rootfd;
	int done;                        /* nothing more to do: unchanged, or
					  * all --prepare caches */
	/* the published names, ROLE-ID.* */
	char id[13], rootfs[256], initrd[256], vmlinuz[256], manifest[256],
	     imanifest[256], lmanifest[256];
};

/* The package set, the bootstrap's key and the inputs' hash */
static int inputs(struct pipeline *pl)
{
	struct build *b = pl->b;
	char tool[256];
	int r;

	if ((r = nf_bld_package_list(b, &pl->pkgs, &pl->npkgs)))
		return r;
	if ((r = nf_bld_tool_version(b->ctx, nf_bld_bootstrap_tool(b), tool, sizeof(tool))) < 0)
		return r;
	/* --prepare publishes nothing: no inputs key to compare */
	if ((r = nf_bld_bootstrap_key(b, pl->pkgs, pl->npkgs, tool, pl->bkey)) ||
	    (r = nf_bld_built_path(b, pl->bkey, pl->built, sizeof(pl->built))) ||
	    (!b->o->prepare &&
	     ((r = nf_bld_overlay_list(b)) ||
	      (r = nf_bld_inputs_key(b, pl->bkey, pl->ikey)))))
		return r;
	pl->have_built = *pl->built && !b->o->no_cache &&
			 nf_bld_file_exists(pl->built);
	return 0;
}

static int stage_resolve(struct pipeline *pl)
{
	struct build *b = pl->b;
	struct nf_build_result *res = pl->res;
	int r;

	stage_begin(b, "resolve");
	if ((r = resolve(b, pl->site)) || (r = resolve_nodes(b, pl->site)) ||
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
	if ((r = inputs(pl)))
		return r;
	snprintf(res->inputs_sha256, sizeof(res->inputs_sha256), "%s", pl->ikey);
	stage_end(b, 0);
	if (!b->o->no_cache && !b->o->prepare &&
	    nf_bld_published_matches(b, pl->ikey, res)) {
		res->unchanged = 1;
		res->bootstrap_cached = 1;
		nf_bld_note(b, "inputs unchanged: the published image is current");
		pl->done = 1;
	}
	return 0;
}

static int stage_bootstrap(struct pipeline *pl)
{
	struct build *b = pl->b;
	int cached = 0, r;

	stage_begin(b, "bootstrap");
	if ((r = nf_bld_built_lock(b, pl->built, &pl->have_built, &pl->builtfd)))
		return r;
	if (pl->have_built) {
		/* the root after the artifacts stage is cached: the
		 * bootstrap under it is not needed */
		snprintf(pl->tar, sizeof(pl->tar), "%s", pl->built);
		cached = 1;
	} else if ((r = nf_bld_stage_bootstrap(b, pl->pkgs, pl->npkgs, pl->bkey,
					       pl->tar, sizeof(pl->tar),
					       &cached))) {
		return r;
	}
	pl->res->bootstrap_cached = cached;
	if (cached)
		nf_bld_note(b, "cached");
	stage_end(b, 0);
	/* --prepare: nothing more to cache when the stage after the
	 * bootstrap has nothing to do or its root is cached already */
	if (b->o->prepare && (!*pl->built || pl->have_built || b->o->no_cache)) {
		pl->res->prepared = 1;
		pl->done = 1;
	}
	return 0;
}

/* The bootstrap (or the cached root) into a fresh work root */
static int stage_unpack(struct pipeline *pl)
{
	struct build *b = pl->b;
	struct nf_unpack_opts uo = { .devices = 1 };
	int r;

	stage_begin(b, "unpack");
	snprintf(b->work, sizeof(b->work), "%s/work", b->cache);
	if ((r = nf_bld_mkdir_p(b->ctx, b->work, 0700)))
		return r;
	snprintf(b->work, sizeof(b->work), "%s/work/%s-%d", b->cache, b->role,
		 (int)getpid());
	snprintf(b->root, sizeof(b->root), "%s/root", b->work);
	nf_rm_tree_at(AT_FDCWD, b->work);
	if ((r = nf_bld_mkdir_p(b->ctx, b->work, 0700)))
		return r;
	/* the logs of what ran in the root outlive the work directory, so
	 * the path a failure names is there to read */
	if ((r = logs_dir(b)) || (r = nf_unpack(b->ctx, pl->tar, b->root, &uo)) ||
	    (r = nf_apply_open_root(b->ctx, b->root, &pl->rootfd)))
		return r;
	/* the image's / is 0755 root:root whatever the tarball said */
	if (fchmod(pl->rootfd, 0755) < 0 || fchown(pl->rootfd, 0, 0) < 0)
		return nf_fail(b->ctx, -errno, "cannot set the mode of '%s': %s",
			       b->root, strerror(errno));
	stage_end(b, 0);
	return 0;
}

static int stage_artifacts(struct pipeline *pl)
{
	struct build *b = pl->b;
	int r;

	stage_begin(b, "artifacts");
	if (pl->have_built)
		nf_bld_note(b, "cached (built on this bootstrap before)");
	else if ((r = nf_bld_stage_artifacts(b, pl->rootfd)) ||
		 (r = nf_bld_stage_purge(b)) ||
		 (*pl->built && !b->o->no_cache &&
		  (r = nf_bld_built_store(b, pl->built))))
		return r;
	if (pl->builtfd >= 0) {
		close(pl->builtfd);
		pl->builtfd = -1;
	}
	if (b->o->prepare) {
		stage_end(b, 0);
		pl->res->prepared = 1;
		pl->done = 1;
		return 0;
	}
	if ((r = nf_bld_stage_site_artifacts(b, pl->rootfd)) ||
	    (r = nf_bld_sign_modules(b, pl->rootfd)))
		return r;
	stage_end(b, 0);
	return 0;
}

/* A stage that is one call on the root */
static int root_stage(struct pipeline *pl, const char *name,
		      int (*fn)(struct build *b, int rootfd))
{
	int r;

	stage_begin(pl->b, name);
	if ((r = fn(pl->b, pl->rootfd)))
		return r;
	stage_end(pl->b, 0);
	return 0;
}

static int stage_overlays(struct pipeline *pl)
{
	return root_stage(pl, "overlays", nf_bld_stage_overlays);
}

static int stage_facets(struct pipeline *pl)
{
	struct build *b = pl->b;
	int r;

	stage_begin(b, "facets");
	if ((r = nf_apply_all_cluster(b->ctx, pl->rootfd, b->profile, b->nodes)) ||
	    (r = nf_bld_install_self(b, pl->rootfd)) ||
	    (r = nf_bld_install_trust(b, pl->rootfd)))
		return r;
	stage_end(b, 0);
	return 0;
}

/* the host's identity removed */
static int stage_identity(struct pipeline *pl)
{
	return root_stage(pl, "identity", nf_bld_stage_identity);
}

/* One archive of the root into the staging directory, its size the
 * stage's */
static int pack_one(struct build *b, const char *stage, const char *name,
		    const struct nf_pack_opts *po)
{
	char p[PATH_MAX * 3];
	struct stat st;
	int r;

	stage_begin(b, stage);
	snprintf(p, sizeof(p), "%s/%s", b->stage, name);
	if ((r = nf_pack(b->ctx, b->root, p, po)))
		return r;
	stat(p, &st);
	stage_end(b, (unsigned long long)st.st_size);
	return 0;
}

static int stage_pack(struct pipeline *pl)
{
	struct build *b = pl->b;
	struct nf_pack_opts po = {
		.format = NF_PACK_TAR, .compressor = NF_COMP_ZSTD,
		.level = -1, .threads = 0, .epoch = b->epoch,
		.progress = pack_progress, .progress_data = b,
	};
	int r;

	snprintf(b->stage, sizeof(b->stage), "%s/.tmp-%d", b->out, (int)getpid());
	if ((r = nf_bld_mkdir_p(b->ctx, b->stage, 0755)) ||
	    (r = pack_one(b, "pack rootfs", "rootfs.tar.zst", &po)))
		return r;
	po.format = NF_PACK_CPIO;
	if ((r = pack_one(b, "pack initramfs", "initramfs.cpio.zst", &po)))
		return r;
	if (!b->el)
		return 0;
	po.format = NF_PACK_TAR;
	po.compressor = NF_COMP_XZ;
	return pack_one(b, "pack liveimg", "rootfs.tar.xz", &po);
}

/* The sha256 of the archive a manifest in the staging directory names */
static int archive_sha256(struct build *b, const char *manifest, char *out,
			  size_t outsz)
{
	char p[PATH_MAX * 3];
	json_t *m = NULL;
	int r;

	snprintf(p, sizeof(p), "%s/%s", b->stage, manifest);
	if ((r = nf_manifest_load(b->ctx, p, &m)))
		return r;
	snprintf(out, outsz, "%s", json_string_value(json_object_get(
		 json_object_get(m, "archive"), "sha256")) ?: "");
	json_decref(m);
	return 0;
}

static int sign_staged(struct build *b, const char *name)
{
	char p[PATH_MAX * 3];

	snprintf(p, sizeof(p), "%s/%s", b->stage, name);
	return nf_sign_file(b->ctx, p, b->key);
}

/* EL's rootfs.tar.xz, named by its own hash: the tree and caches hold a
 * name forever, and xz's bytes may change with liblzma while the
 * tar.zst's stay */
static int name_liveimg(struct pipeline *pl)
{
	struct build *b = pl->b;
	int r;

	if ((r = archive_sha256(b, "rootfs.tar.xz.manifest.json",
				b->liveimg_sha256, sizeof(b->liveimg_sha256))))
		return r;
	snprintf(b->liveimg, sizeof(b->liveimg), "%s-%.12s.rootfs.tar.xz",
		 b->role, b->liveimg_sha256);
	snprintf(pl->lmanifest, sizeof(pl->lmanifest),
		 "%s-%s.liveimg.manifest.json", b->role, pl->id);
	if ((r = nf_bld_name_archive(b, "rootfs.tar.xz", b->liveimg,
				     pl->lmanifest, NULL)))
		return r;
	return sign_staged(b, pl->lmanifest);
}

/* The archives named by the rootfs' hash, the kernel copied out beside
 * them, the manifests signed */
static int stage_sign(struct pipeline *pl)
{
	struct build *b = pl->b;
	struct nf_build_result *res = pl->res;
	char kernel[PATH_MAX * 2], p[PATH_MAX * 3];
	int r;

	stage_begin(b, "sign");
	if ((r = nf_root_find_kernel(b->ctx, pl->rootfd, p, sizeof(p), NULL, 0)))
		return r;
	snprintf(kernel, sizeof(kernel), "%s%s", b->root, p);
	if ((r = archive_sha256(b, "rootfs.tar.zst.manifest.json",
				res->rootfs_sha256, sizeof(res->rootfs_sha256))))
		return r;
	snprintf(pl->id, sizeof(pl->id), "%.12s", res->rootfs_sha256);
	snprintf(pl->rootfs, sizeof(pl->rootfs), "%s-%s.rootfs.tar.zst", b->role, pl->id);
	snprintf(pl->initrd, sizeof(pl->initrd), "%s-%s.initramfs.cpio.zst", b->role, pl->id);
	snprintf(pl->vmlinuz, sizeof(pl->vmlinuz), "%s-%s.vmlinuz", b->role, pl->id);
	snprintf(pl->manifest, sizeof(pl->manifest), "%s-%s.manifest.json", b->role, pl->id);
	snprintf(pl->imanifest, sizeof(pl->imanifest), "%s-%s.initramfs.manifest.json",
		 b->role, pl->id);
	if ((r = nf_bld_name_archive(b, "rootfs.tar.zst", pl->rootfs,
				     pl->manifest, NULL)) ||
	    (r = nf_bld_name_archive(b, "initramfs.cpio.zst", pl->initrd,
				     pl->imanifest, NULL)) ||
	    (b->el && (r = name_liveimg(pl))))
		return r;
	snprintf(p, sizeof(p), "%s/%s", b->stage, pl->vmlinuz);
	if ((r = nf_bld_copy_file(b->ctx, kernel, p)) ||
	    (r = sign_staged(b, pl->manifest)) ||
	    (r = sign_staged(b, pl->imanifest)))
		return r;
	stage_end(b, 0);
	return 0;
}

/* The public key beside the images, for 'nodeforge manifest verify' */
static int publish_pubkey(struct build *b)
{
	char pubout[PATH_MAX + 32], *pub = NULL;
	const char *o = b->o->out && *b->o->out ? b->o->out : "out";
	size_t len = 0;
	unsigned m = nf_err_mark(b->ctx);
	int r;

	snprintf(pubout, sizeof(pubout), "%s/signing.pub", o);
	if (nf_read_file(b->ctx, b->pub, 64 << 10, &pub, &len)) {
		nf_err_drop(b->ctx, m);
		return 0;
	}
	r = nf_write_atomic(b->ctx, pubout, pub, len, 0644);
	free(pub);
	return r;
}

static int stage_publish(struct pipeline *pl)
{
	struct build *b = pl->b;
	struct nf_build_result *res = pl->res;
	char s1[300], s2[300], s3[300];
	/* the manifest the pointer names goes last */
	const char *names[] = { pl->rootfs, pl->initrd, pl->vmlinuz,
				pl->imanifest, s2, b->liveimg, pl->lmanifest,
				s3, pl->manifest, s1 };
	const char *list[NF_ARRAY_SIZE(names)];
	size_t n = 0;
	int r;

	stage_begin(b, "publish");
	res->kernel = nf_strdup(pl->vmlinuz);
	res->initramfs = nf_strdup(pl->initrd);
	res->rootfs = nf_strdup(pl->rootfs);
	res->manifest = nf_strdup(pl->manifest);
	snprintf(s1, sizeof(s1), "%s.sig", pl->manifest);
	snprintf(s2, sizeof(s2), "%s.sig", pl->imanifest);
	snprintf(s3, sizeof(s3), "%s%s", pl->lmanifest,
		 *pl->lmanifest ? ".sig" : "");
	for (size_t i = 0; i < NF_ARRAY_SIZE(names); i++)
		if (*names[i])
			list[n++] = names[i];
	if ((r = nf_bld_publish(b, list, n, res, pl->ikey)) ||
	    (r = publish_pubkey(b)))
		return r;
	stage_end(b, 0);
	return 0;
}

static int build_image(struct build *b, const struct nf_site *site,
		       struct nf_build_result *res)
{
	static int (*const stages[])(struct pipeline *) = {
		stage_resolve, stage_bootstrap, stage_unpack, stage_artifacts,
		stage_overlays, stage_facets, stage_identity, stage_pack,
		stage_sign, stage_publish,
	};
	struct pipeline pl = { .b = b, .site = site, .res = res,
			       .builtfd = -1, .rootfd = -1 };
	int r = 0;

	for (size_t i = 0; !r && !pl.done && i < NF_ARRAY_SIZE(stages); i++)
		r = stages[i](&pl);
	if (pl.rootfd >= 0)
		close(pl.rootfd);
	if (pl.builtfd >= 0)
		close(pl.builtfd);
	if (*b->work)
		nf_rm_tree_at(AT_FDCWD, b->work);
	if (*b->stage)
		nf_rm_tree_at(AT_FDCWD, b->stage);
	nf_strv_free(pl.pkgs, pl.npkgs);
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
