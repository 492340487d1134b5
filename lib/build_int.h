/* SPDX-License-Identifier: MIT */
/*
 * The image pipeline's private parts, shared by its files: lib/build.c
 * (the pipeline, its progress, tools and paths, the inputs' hash),
 * lib/build_bootstrap.c (the package set, the bootstrap backends and
 * their cache), lib/build_root.c (artifacts, overlays and templates,
 * nodeforge itself, host identity removed) and lib/build_publish.c (the
 * kernel copied out, archives named by content, published atomically).
 */
#ifndef NF_BUILD_INT_H
#define NF_BUILD_INT_H

#include "internal.h"

#include <limits.h>
#include <time.h>

#define NF_DEFAULT_EPOCH 1704067200LL   /* 2024-01-01T00:00:00Z */
#define NF_TOOL_OUT_MAX (64u << 10)
#define NF_OVERLAY_FILE_MAX (16u << 20)
/* a file of an artifact's tree (a driver's precompiled objects are tens
 * of MB) */
#define NF_ARTIFACT_FILE_MAX (1u << 30)
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
	char logs[PATH_MAX + 32]; /* CACHE/logs/ROLE[-PID]: kept after a failure */
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
	int logsfd;               /* flock of CACHE/logs/ROLE.lock, or -1 */
	struct timespec t0;
	const char *cur_stage;
	double stage_t0;          /* when cur_stage began (monotonic s) */
	json_t *overlay_names;
	char liveimg[256];        /* EL: ROLE-<its sha12>.rootfs.tar.xz */
	char liveimg_sha256[NF_SHA256_HEX];
	json_t *nodes;            /* --inventory: nf_cluster_load() */
	char self_pkg[PATH_MAX];  /* the nodeforge package for the image */
	int self_host;            /* --self-package host: the running binary */
	char modkey[PATH_MAX];    /* the site's secrets.module_signing_key.path */
	char modcert[NF_SHA256_HEX]; /* sha256 of module_signing.cert, or "" */
};


/* progress, tools and paths (lib/build.c) */
void nf_bld_note(struct build *b, const char *msg);
/* A package name for the bootstrap or apt (letters, digits, + - . : _,
 * upper case on Debian only), optionally pinned as NAME=VERSION: the
 * length of NAME, or 0 when it is none */
size_t nf_bld_package_name(const char *s, int el);
int nf_bld_run_tool(struct nf_ctx *ctx, char *const argv[], const char *log,
		    char *const env[]);
void nf_bld_log_reason(const char *log, char *out, size_t outsz);
/* The first line `tool --version` prints, into out (build_tools.c) */
int nf_bld_tool_version(struct nf_ctx *ctx, const char *tool, char *out,
			size_t outsz);
int nf_bld_mkdir_p(struct nf_ctx *ctx, const char *path, unsigned mode);
int nf_bld_file_exists(const char *p);

/* the inputs' hash (lib/build_inputs.c) */
/* b->overlay_names: common, the role's own, system.overlays, those that
 * are there */
int nf_bld_overlay_list(struct build *b);
/* The hash of everything the image depends on, over the bootstrap's BKEY */
int nf_bld_inputs_key(struct build *b, const char *bkey,
		      char out[NF_SHA256_HEX]);
/* 1 when ROLE.current names IKEY and its files are there, filling res
 * with their names; else 0 */
int nf_bld_published_matches(struct build *b, const char *ikey,
			     struct nf_build_result *res);

/* the package set and the bootstrap backends (lib/build_bootstrap.c) */
int nf_bld_package_list(struct build *b, char ***out, size_t *n);
int nf_bld_bootstrap_key(struct build *b, char **pkgs, size_t npkgs,
			 const char *tool, char out[NF_SHA256_HEX]);
/* the tool that bootstraps b's family (its --version is in the key) */
const char *nf_bld_bootstrap_tool(const struct build *b);
int nf_bld_stage_bootstrap(struct build *b, char **pkgs, size_t npkgs,
			   const char *bkey, char *tarpath, size_t tarsz,
			   int *cached);
/* CACHE/built/KEY.tar: the root after the artifacts stage ("" when the
 * profile gives that stage nothing to do), and storing it */
int nf_bld_built_path(struct build *b, const char *bkey, char *path,
		      size_t pathsz);
int nf_bld_built_store(struct build *b, const char *path);
/* builds sharing the cache that would make the same root at once: the
 * first runs the stage, the others wait on *fd (held by the caller until
 * the root is stored or the build failed) and take it (*have = 1) */
int nf_bld_built_lock(struct build *b, const char *path, int *have, int *fd);

/* what goes into the work root (lib/build_root.c) */
int nf_bld_stage_overlays(struct build *b, int rootfd);
int nf_bld_self_resolve(struct build *b);
int nf_bld_self_sha256(struct build *b, char out[NF_SHA256_HEX]);
int nf_bld_install_self(struct build *b, int rootfd);
int nf_bld_install_trust(struct build *b, int rootfd);
int nf_bld_stage_identity(struct build *b, int rootfd);
int nf_bld_stage_artifacts(struct build *b, int rootfd);
/* Copy an unpacked tree into the image under `dest` (modes kept, no
 * templates), through the root's dirfd; run `cmd` inside the image root
 * (chroot, sh -e), logged to CACHE/logs/ROLE/artifact-NAME.log
 * (build_root.c) */
int nf_bld_copy_tree_in(struct build *b, int rootfd, const char *tree,
			const char *dest, const char *name);
int nf_bld_in_root(struct build *b, const char *name, const char *cmd);
/* Artifacts the site supplies (supplier: site, pinned in the site file):
 * the check before anything is fetched, and their install after the
 * cached artifacts stage */
int nf_bld_check_site_artifacts(struct build *b);
/* kernel.built_modules signed as the site's module_signing says
 * (build_sign.c): the check before anything is fetched, and the signing
 * after the artifacts */
int nf_bld_check_module_signing(struct build *b);
int nf_bld_sign_modules(struct build *b, int rootfd);
int nf_bld_stage_site_artifacts(struct build *b, int rootfd);
int nf_bld_stage_purge(struct build *b);

/* kernel, archives and their publication (lib/build_publish.c) */
int nf_bld_copy_file(struct nf_ctx *ctx, const char *from, const char *to);
int nf_bld_name_archive(struct build *b, const char *tmpname,
			const char *final, const char *manifest_final,
			char sha[NF_SHA256_HEX]);
int nf_bld_publish(struct build *b, const char *const *names, size_t n,
		   struct nf_build_result *res, const char *ikey);

#endif
