/* SPDX-License-Identifier: MIT */
/*
 * The package set of an image and its bootstrap: the distribution's own
 * tool (mmdebstrap for Debian, dnf --installroot for EL, chosen from a
 * table by the image's family) builds a minimal root with the packages,
 * stored as a tarball in the cache under the hash of everything that
 * affects it.
 */
#include "build_int.h"

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int cmp_str(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

/* Debian 12 packages of the libraries nodeforge links (Makefile PKGS) */
static const char *const self_libs[] = {
	"libyaml-0-2", "libjansson4", "libarchive13", "libcurl4", "libssl3",
	"libblkid1", "libefivar1", "libefiboot1", "libmicrohttpd12", "libzstd1",
	"libsystemd0",
};

/* the same libraries in Debian 13, renamed by the 64-bit time_t transition */
static const char *const self_libs_trixie[] = {
	"libyaml-0-2", "libjansson4", "libarchive13t64", "libcurl4t64",
	"libssl3t64", "libblkid1", "libefivar1t64", "libefiboot1t64",
	"libmicrohttpd12t64", "libzstd1", "libsystemd0",
};

/* The package list: the profile's (system.packages.install, and .build,
 * which the image holds only while its artifacts are built), plus the
 * kernel, sorted and unique */
int nf_bld_package_list(struct build *b, char ***out, size_t *n)
{
	const json_t *pk = json_object_get(json_object_get(b->prof, "system"),
					   "packages");
	const json_t *lists[] = { json_object_get(pk, "install"),
				  json_object_get(pk, "build") };
	static const char *const lname[] = { "install", "build" };
	size_t cap = json_array_size(lists[0]) + json_array_size(lists[1]) + 2 +
		     NF_ARRAY_SIZE(self_libs), k = 0, i;
	char **v = calloc(cap, sizeof(*v));
	json_t *p;

	if (!v)
		return -ENOMEM;
	for (size_t l = 0; l < 2; l++)
	json_array_foreach(lists[l], i, p) {
		const char *s = json_string_value(p);

		if (!nf_bld_package_name(s, b->el)) {
			nf_strv_free(v, k);
			return nf_fail(b->ctx, NF_E_INVALID,
				       "package name '%s' in system.packages.%s "
				       "is not a package name",
				       json_string_value(p) ? json_string_value(p) : "",
				       lname[l]);
		}
		v[k++] = nf_strdup(s);
	}
	/* what the image keeps cannot also be purged after the artifacts */
	for (const char *const *l = (const char *const[]){ "build", "remove", NULL };
	     *l; l++) {
		json_t *q;
		size_t j;

		json_array_foreach(json_object_get(pk, *l), i, p)
			json_array_foreach(lists[0], j, q)
				if (json_equal(p, q)) {
					nf_strv_free(v, k);
					return nf_fail(b->ctx, NF_E_CONFLICT,
						       "system.packages.%s: package "
						       "'%s' is also in system.packages."
						       "install: the image cannot keep "
						       "it and purge it", *l,
						       json_string_value(p));
				}
	}
	{
		const char *kp = json_string_value(json_object_get(
			json_object_get(b->prof, "kernel"), "package"));

		if (kp && !nf_bld_package_name(kp, b->el)) {
			nf_strv_free(v, k);
			return nf_fail(b->ctx, NF_E_INVALID, "kernel.package '%s' "
				       "is not a package name", kp);
		}
		v[k++] = nf_strdup(kp ? kp : b->el ? "kernel" : "linux-image-amd64");
	}
	/* the image carries nodeforge itself (the first-boot verifier that
	 * gates slurmd), the package built for its release: its shared
	 * libraries, so that dpkg -i needs no network */
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

/* The archive components of the image's sources (system.components;
 * lint checks the names): "main" unless the profile asks for more, such
 * as contrib and non-free for NVIDIA's driver packages */
static void components(const struct build *b, char *out, size_t sz)
{
	const json_t *l = json_object_get(json_object_get(b->prof, "system"),
					  "components");
	size_t i, n = 0;
	json_t *c;

	*out = '\0';
	json_array_foreach(l, i, c)
		if (json_is_string(c) && n < sz)
			n += (size_t)snprintf(out + n, sz - n, "%s%s", n ? " " : "",
					      json_string_value(c));
	if (!*out)
		snprintf(out, sz, "main");
}

int nf_bld_bootstrap_key(struct build *b, char **pkgs, size_t npkgs,
			 const char *tool, char out[NF_SHA256_HEX])
{
	struct nf_buf k = { 0 };
	char comp[256];

	nf_buf_printf(&k, "%s\nfamily=%s\nsuite=%s\nmirror=%s\nsecurity=%s\n"
		      "variant=minbase\narch=amd64\ntool=%s\nepoch=%lld\n",
		      NF_BOOTSTRAP_FORMAT, b->el ? "el" : "debian", b->suite,
		      b->mirror, b->security, tool, b->epoch);
	if (b->el)
		nf_buf_printf(&k, "rpmdb=/var/lib/rpm\n");
	else {
		components(b, comp, sizeof(comp));
		nf_buf_printf(&k, "components=%s\n", comp);
	}
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


/* ----------------------------------------------------------- bootstrap */

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
	char home[PATH_MAX + 96], macros[PATH_MAX + 128], henv[PATH_MAX + 128];
	char *env[] = { henv, NULL };
	size_t a = 0;
	int r, local = !strncmp(b->mirror, "file://", 7);

	if (npkgs > 256)
		return nf_fail(b->ctx, NF_E_LIMIT, "more than 256 packages");
	snprintf(dir, sizeof(dir), "%s.d", tmptar);
	nf_rm_tree_at(AT_FDCWD, dir);
	if ((r = nf_bld_mkdir_p(b->ctx, dir, 0755)))
		return r;
	snprintf(inst, sizeof(inst), "--installroot=%s", dir);
	snprintf(rel, sizeof(rel), "--releasever=%s", b->suite);
	argv[a++] = (char *)nf_bld_bootstrap_tool(b);
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
	/* rpm's database goes where EL's rpm looks for it on the node: a
	 * build host's rpm may default elsewhere (Debian's: the building
	 * user's ~/.rpmdb), so dnf runs with a HOME whose .rpmmacros says
	 * /var/lib/rpm, and nothing of the builder's home enters the image */
	snprintf(home, sizeof(home), "%s.home", tmptar);
	snprintf(macros, sizeof(macros), "%s/.rpmmacros", home);
	nf_rm_tree_at(AT_FDCWD, home);
	if ((r = nf_bld_mkdir_p(b->ctx, home, 0700)) ||
	    (r = nf_write_atomic(b->ctx, macros, "%_dbpath /var/lib/rpm\n", 22,
				 0644))) {
		nf_rm_tree_at(AT_FDCWD, dir);
		return r;
	}
	snprintf(henv, sizeof(henv), "HOME=%s", home);
	r = nf_bld_run_tool(b->ctx, argv, log, env);
	nf_rm_tree_at(AT_FDCWD, home);
	if (r > 0) {
		nf_bld_log_reason(log, reason, sizeof(reason));
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

/* What the bootstrap does not do (its root is the same without it):
 *
 * - fsync every file dpkg writes: the root is a tarball when the run
 *   ends, and a run that does not end is thrown away.  mmdebstrap's own
 *   eatmydata hooks, when the build host has them and eatmydata;
 * - make the kernel's boot-time initrd: nodeforge build removes it (the
 *   diskless initramfs is the whole image; a stateful install makes its
 *   own).  update-initramfs is diverted to a no-op while the packages
 *   are installed and put back before the root is packed. */
#define EATMYDATA_HOOKS "/usr/share/mmdebstrap/hooks/eatmydata"
#define NO_INITRD_DIVERT                                                 \
	"dpkg-divert --quiet --local --rename --divert "                  \
	"/usr/sbin/update-initramfs.nodeforge "
static const char no_initrd_on[] =
	"--essential-hook=mkdir -p \"$1/usr/sbin\" && "
	"chroot \"$1\" " NO_INITRD_DIVERT "--add /usr/sbin/update-initramfs && "
	"printf '#!/bin/sh\\nexit 0\\n' > \"$1/usr/sbin/update-initramfs\" && "
	"chmod 0755 \"$1/usr/sbin/update-initramfs\"";
static const char no_initrd_off[] =
	"--customize-hook=rm -f \"$1/usr/sbin/update-initramfs\" && "
	"chroot \"$1\" " NO_INITRD_DIVERT "--remove /usr/sbin/update-initramfs";

static int have_eatmydata(void)
{
	return !access(EATMYDATA_HOOKS "/extract.sh", R_OK) &&
	       !access("/usr/bin/eatmydata", X_OK);
}

/* Debian: mmdebstrap, minbase, straight to a tarball */
static int bootstrap_mmdebstrap(struct build *b, char **pkgs, size_t npkgs,
				const char *tmptar, const char *log)
{
	char reason[1024], sde[64], include[8192], comp[256];
	struct nf_buf inc = { 0 };
	char *argv[64];
	char src1[PATH_MAX + 64], src2[PATH_MAX + 64], src3[PATH_MAX + 64];
	char dopts[NF_ARRAY_SIZE(dpkg_opts)][128];
	char *env[] = { sde, NULL };
	size_t a = 0;
	int r;

	for (size_t i = 0; i < npkgs; i++)
		nf_buf_printf(&inc, "%s%s", i ? "," : "", pkgs[i]);
	if (inc.err || inc.len >= sizeof(include)) {
		nf_buf_free(&inc);
		return nf_fail(b->ctx, NF_E_LIMIT, "package list is too long");
	}
	snprintf(include, sizeof(include), "--include=%s", inc.s);
	nf_buf_free(&inc);
	snprintf(sde, sizeof(sde), "SOURCE_DATE_EPOCH=%lld", b->epoch);
	components(b, comp, sizeof(comp));
	snprintf(src1, sizeof(src1), "deb %s %s %s", b->mirror, b->suite, comp);
	snprintf(src2, sizeof(src2), "deb %s %s-updates %s", b->mirror, b->suite,
		 comp);
	snprintf(src3, sizeof(src3), "deb %s %s-security %s", b->security,
		 b->suite, comp);
	argv[a++] = (char *)nf_bld_bootstrap_tool(b);
	argv[a++] = "--mode=root";
	argv[a++] = "--variant=minbase";
	argv[a++] = "--architectures=amd64";
	argv[a++] = "--format=tar";
	argv[a++] = "--aptopt=Acquire::Languages \"none\"";
	argv[a++] = "--aptopt=Acquire::Retries \"3\"";
	for (size_t i = 0; i < NF_ARRAY_SIZE(dpkg_opts); i++) {
		snprintf(dopts[i], sizeof(dopts[i]), "--dpkgopt=%s", dpkg_opts[i]);
		argv[a++] = dopts[i];
	}
	if (have_eatmydata())
		argv[a++] = "--hook-dir=" EATMYDATA_HOOKS;
	argv[a++] = (char *)no_initrd_on;
	argv[a++] = (char *)no_initrd_off;
	argv[a++] = include;
	argv[a++] = b->suite;
	argv[a++] = (char *)tmptar;
	argv[a++] = src1;
	if (strncmp(b->mirror, "file://", 7))
		argv[a++] = src2;
	if (*b->security)
		argv[a++] = src3;
	argv[a] = NULL;
	r = nf_bld_run_tool(b->ctx, argv, log, env);
	if (r > 0) {
		nf_bld_log_reason(log, reason, sizeof(reason));
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
	return r;
}

/* One backend per distribution family; `opt` is the option that names a
 * stand-in tool (tests), `run` writes the root as a plain tarball to its
 * first path */
static const struct bootstrap_backend {
	const char *family;
	const char *tool;
	size_t opt;
	int (*run)(struct build *b, char **pkgs, size_t npkgs,
		   const char *tmptar, const char *log);
} backends[] = {
	{ "debian", "mmdebstrap", offsetof(struct nf_build_opts, mmdebstrap),
	  bootstrap_mmdebstrap },
	{ "el", "dnf", offsetof(struct nf_build_opts, dnf), bootstrap_dnf },
};

static const struct bootstrap_backend *backend(const struct build *b)
{
	return &backends[b->el ? 1 : 0];
}

const char *nf_bld_bootstrap_tool(const struct build *b)
{
	const char *t = *(const char *const *)((const char *)b->o +
					       backend(b)->opt);

	return t && *t ? t : backend(b)->tool;
}

/* A cache entry written as `tmp` (r: how that went) takes its name by
 * rename, or is removed: no half-written tarball is ever under `path` */
static int store(struct build *b, int r, const char *tmp, const char *path)
{
	if (!r && rename(tmp, path) < 0)
		r = nf_fail(b->ctx, -errno, "cannot store '%s': %s", path,
			    strerror(errno));
	if (r)
		unlink(tmp);
	return r;
}

/* Take `lock` for making the cache entry `path`; held by another build
 * of the same entry: say `note`, wait for it, and when it left `path`
 * behind, *have = 1 and the lock is let go.  *fd holds the lock
 * otherwise */
static int lock_or_wait(struct build *b, const char *lock, const char *note,
			const char *path, int *have, int *fd)
{
	int r;

	if ((r = nf_lock_path(b->ctx, lock, 0, fd)) <= 0)
		return r;
	nf_bld_note(b, note);
	if ((r = nf_lock_path(b->ctx, lock, 1, fd)))
		return r;
	if ((*have = !b->o->no_cache && nf_bld_file_exists(path))) {
		close(*fd);
		*fd = -1;
	}
	return 0;
}

int nf_bld_stage_bootstrap(struct build *b, char **pkgs, size_t npkgs,
			   const char *bkey, char *tarpath, size_t tarsz,
			   int *cached)
{
	char dir[PATH_MAX + 16], tmp[PATH_MAX + 96], log[PATH_MAX + 96];
	char lock[PATH_MAX + 96];
	int r, fd = -1;

	snprintf(dir, sizeof(dir), "%s/bootstrap", b->cache);
	if ((r = nf_bld_mkdir_p(b->ctx, dir, 0755)))
		return r;
	snprintf(tarpath, tarsz, "%s/%s.tar", dir, bkey);
	*cached = 0;
	if (!b->o->no_cache && nf_bld_file_exists(tarpath)) {
		*cached = 1;
		return 0;
	}
	if (b->o->offline)
		return nf_fail(b->ctx, NF_E_NOTFOUND,
			       "--offline: no cached bootstrap for this package "
			       "set ('%s'); build once with network or --mirror DIR",
			       tarpath);
	/* builds sharing the cache that need this package set at once: one
	 * bootstraps it, the others wait for it and take it from the cache */
	snprintf(lock, sizeof(lock), "%s/%s.lock", dir, bkey);
	if ((r = lock_or_wait(b, lock, "waiting for another build's bootstrap "
			      "of this package set", tarpath, cached, &fd)) ||
	    *cached)
		return r;
	snprintf(tmp, sizeof(tmp), "%s/.tmp-%s-%d.tar", dir, bkey, (int)getpid());
	snprintf(log, sizeof(log), "%s/%s.log", dir, bkey);
	r = backend(b)->run(b, pkgs, npkgs, tmp, log);
	r = store(b, r, tmp, tarpath);
	close(fd);
	return r;
}


/* ------------------------------------------ the root after the artifacts */

/* The root after the artifacts stage is a function of the bootstrap and
 * of what that stage does to it: the artifacts as the profile pins them
 * (each by sha256, with its patches and build line), the packages it
 * purges, and the site's distro (which picks an artifact's `distro:`).
 * Stored as CACHE/built/KEY.tar, it spares a rebuild whose artifacts did
 * not change (a new overlay, facet value or inventory) compiling them
 * again.  *path is "" when the profile gives that stage nothing to do. */
int nf_bld_built_path(struct build *b, const char *bkey, char *path,
		      size_t pathsz)
{
	const json_t *sys = json_object_get(b->prof, "system");
	const json_t *pk = json_object_get(sys, "packages");
	json_t *in, *arts = json_array(), *a;
	char *doc, key[NF_SHA256_HEX];
	struct nf_buf k = { 0 };
	size_t i;

	*path = '\0';
	/* what the stage builds: not the site's files (installed after it)
	 * nor the artifacts this role does not need */
	json_array_foreach(json_object_get(sys, "artifacts"), i, a)
		if (!json_object_get(a, "supplier") && nf_profile_runs_when(b->prof, a))
			json_array_append(arts, a);
	if (!json_array_size(arts) &&
	    !json_array_size(json_object_get(pk, "build")) &&
	    !json_array_size(json_object_get(pk, "remove"))) {
		json_decref(arts);
		return 0;
	}
	in = json_pack("{s:o,s:O?,s:O?,s:O?}",
		       "artifacts", arts,
		       "build", json_object_get(pk, "build"),
		       "remove", json_object_get(pk, "remove"),
		       "distro", json_object_get(json_object_get(b->prof, "site"),
						 "distro"));
	doc = in ? json_dumps(in, JSON_SORT_KEYS | JSON_COMPACT) : NULL;
	json_decref(in);
	if (!doc)
		return -ENOMEM;
	nf_buf_printf(&k, "nodeforge-built-v1\nbootstrap=%s\n%s\n", bkey, doc);
	free(doc);
	if (k.err) {
		nf_buf_free(&k);
		return -ENOMEM;
	}
	nf_sha256_hex(k.s, k.len, key);
	nf_buf_free(&k);
	if (snprintf(path, pathsz, "%s/built/%s.tar", b->cache, key) >= (int)pathsz)
		return nf_fail(b->ctx, NF_E_LIMIT, "cache path '%s' is too long",
			       b->cache);
	return 0;
}

int nf_bld_built_lock(struct build *b, const char *path, int *have, int *fd)
{
	char dir[PATH_MAX + 16], lock[PATH_MAX + 96];
	size_t n = strlen(path);
	int r;

	*fd = -1;
	if (!*path || *have || b->o->no_cache)
		return 0;
	snprintf(dir, sizeof(dir), "%s/built", b->cache);
	if ((r = nf_bld_mkdir_p(b->ctx, dir, 0755)))
		return r;
	/* KEY.tar -> KEY.lock */
	snprintf(lock, sizeof(lock), "%.*s.lock", (int)(n > 4 ? n - 4 : n), path);
	return lock_or_wait(b, lock, "waiting for another build's artifacts "
			    "stage on this bootstrap", path, have, fd);
}

/* Store the work root as `path` */
int nf_bld_built_store(struct build *b, const char *path)
{
	struct nf_pack_opts po = {
		.format = NF_PACK_TAR, .compressor = NF_COMP_NONE,
		.level = -1, .epoch = b->epoch,
	};
	char dir[PATH_MAX + 16], tmp[PATH_MAX + 64], man[PATH_MAX + 96];
	int r;

	snprintf(dir, sizeof(dir), "%s/built", b->cache);
	if ((r = nf_bld_mkdir_p(b->ctx, dir, 0755)))
		return r;
	snprintf(tmp, sizeof(tmp), "%s/.tmp-%d.tar", dir, (int)getpid());
	snprintf(man, sizeof(man), "%s.manifest.json", tmp);
	r = nf_pack(b->ctx, b->root, tmp, &po);
	unlink(man);
	return store(b, r, tmp, path);
}
