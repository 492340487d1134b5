/* SPDX-License-Identifier: MIT */
/* libnodeforge's public API: the image build.  Included by nodeforge.h,
 * which every user includes; not meant to be included alone. */
#ifndef NF_BUILD_H
#define NF_BUILD_H

/* ------------------------------------------------------- image build
 * nodeforge build ROLE: resolve -> bootstrap (cached) -> artifacts ->
 * overlays -> facets apply -> host identity removed -> pack -> sign ->
 * publish under OUT/ROLE/ with content-addressed names and ROLE.current */

enum nf_build_event { NF_BUILD_START = 0, NF_BUILD_DONE, NF_BUILD_BYTES,
		      NF_BUILD_NOTE };

struct nf_build_opts {
	const char *out;        /* output directory (default "out") */
	const char *cache;      /* cache directory, required (the command
				 * defaults it to $XDG_CACHE_HOME/nodeforge
				 * or ~/.cache/nodeforge) */
	const char *mirror;     /* distro mirror: URL or directory */
	const char *artifact_mirror; /* artifacts: URL prefix or directory */
	const char *overlays;   /* overlays directory (default: next to the
				 * profiles directory) */
	const char *key;        /* Ed25519 signing key (default: generated
				 * once under the cache) */
	int no_cache;           /* bootstrap again, ignore cached results */
	int offline;            /* nothing from the network: caches only */
	int prepare;            /* fill the cache (bootstrap, then the
				 * artifacts stage's root) and stop: nothing
				 * published, no self package needed */
	long long epoch;        /* < 0: the default, 2024-01-01 (the command
				 * passes $SOURCE_DATE_EPOCH) */
	/* Stage progress: event, stage name, seconds since the stage
	 * started, bytes so far (packing, downloads); may be NULL */
	void (*progress)(void *data, int event, const char *stage,
			 double secs, unsigned long long bytes);
	void *progress_data;
	const char *inventory;  /* racks.yaml: the controller's slurm.conf
				 * lists its nodes and partitions; or NULL */
	const char *self_package; /* the nodeforge package the image gets:
				 * a .deb/.rpm, a directory with one per
				 * distribution (DIR/<suite>/), or "host"
				 * (the running binary, for stand-in roots) */
	const char *mmdebstrap; /* the bootstrap tools to run (NULL or "":
				 * mmdebstrap */
	const char *dnf;        /* and dnf from PATH); stand-ins in tests */
};

struct nf_build_result {
	char *dir;              /* OUT/ROLE */
	char *kernel, *initramfs, *rootfs, *manifest; /* names in dir */
	char rootfs_sha256[NF_SHA256_HEX];
	char inputs_sha256[NF_SHA256_HEX];
	int bootstrap_cached;   /* the bootstrap came from the cache */
	int unchanged;          /* inputs unchanged: nothing rebuilt */
	int prepared;           /* --prepare: the cache holds the root the
				 * next build starts from */
};

int nf_build(struct nf_ctx *ctx, const char *role, const struct nf_site *site,
	     const struct nf_build_opts *opts, struct nf_build_result *res);
void nf_build_result_free(struct nf_build_result *res);

/* Pinned artifacts (lib/adapters/fetch.c, libcurl): what the build
 * fetches for system.artifacts, and nodeforge fetch */
struct nf_fetch_opts {
	const char *cache;          /* CACHE: files under CACHE/artifacts/ */
	const char *mirror;         /* URL prefix or directory: the url's
				     * file name is looked up there instead */
	const char *mirror_opt;     /* the option that named it, for messages
				     * (default "--mirror") */
	int offline;                /* cache (and a directory mirror) only */
	long connect_timeout_s;     /* default 15 */
	long stall_timeout_s;       /* no byte for this long: retry; def. 30 */
	int retries;                /* 0: default 3; < 0: none */
	long backoff_ms;            /* first retry delay, doubled; def. 500 */
	unsigned long long max_size;/* default 8 GiB */
	void (*progress)(void *data, unsigned long long now,
			 unsigned long long total);
	void *progress_data;
};
/* Fetch `url` pinned by `sha256` into the content-addressed cache;
 * *path: the cached file (caller frees) */
int nf_fetch(struct nf_ctx *ctx, const char *name, const char *url,
	     const char *sha256, const struct nf_fetch_opts *o, char **path);

/* --------------------------------------------------- end of image build */

/* ---------------------------------------------------- published images
 * OUT/ROLE/ROLE-<id>.*: the files one build published, grouped by id, the
 * first 12 hex digits of the rootfs sha256 (an EL build's liveimg tarball,
 * named by its own hash, goes with the image whose liveimg manifest names
 * it).  docs/nodeforge-image.md */

struct nf_image {
	char *role;
	char id[13];
	char **files;           /* names in OUT/ROLE, sorted */
	size_t nfiles;
	unsigned long long size; /* of all its files */
	long long built;        /* when its manifest was published (mtime,
				 * seconds), else its newest file's time */
	long long built_ns;     /* the same in nanoseconds: the order */
	long long newest;       /* its newest file's mtime, nanoseconds */
	int has_manifest;       /* ROLE-<id>.manifest.json is there */
	int is_signed;          /* and its .sig */
	int current;            /* ROLE.current names it */
	int booted;             /* a boot tree names one of its files */
	int pruned;             /* nf_images_prune removed it (or would) */
};

struct nf_images {
	struct nf_image *v;
	size_t n;
};

/* 1 when NAME is ROLE-<12 lower-case hex>.<kind>, with the id in ID */
int nf_image_file_id(const char *role, const char *name, char id[13]);
/* Append ROLE's images in OUT (newest first) to L: NF_E_NOTFOUND when
 * OUT/ROLE is not there */
int nf_images_scan(struct nf_ctx *ctx, const char *out, const char *role,
		   struct nf_images *l);
/* The roles of OUT: its directories D with a D/D.current, sorted */
int nf_images_roles(struct nf_ctx *ctx, const char *out, char ***roles,
		    size_t *n);
/* Mark the images of L whose file names the boot tree TREE names (its
 * nodes.json, ipxe/, ipxe/mac/, grub/, kickstart/); NF_E_NOTFOUND when
 * TREE has no nodes.json */
int nf_images_mark_booted(struct nf_ctx *ctx, struct nf_images *l,
			  const char *tree);
void nf_images_free(struct nf_images *l);

struct nf_image_prune_opts {
	size_t keep;            /* the newest images kept */
	const char *const *trees; /* boot trees whose images stay */
	size_t ntrees;
	int dry_run;            /* choose, remove nothing */
};
/* Under OUT/ROLE/.lock (a build's, NF_E_LOCKED while one runs): remove
 * every file of each image of ROLE but the KEEP newest, the current one
 * and those a boot tree names; ROLE's images are appended to L, the
 * removed ones marked pruned */
int nf_images_prune(struct nf_ctx *ctx, const char *out, const char *role,
		    const struct nf_image_prune_opts *o, struct nf_images *l);

/* ---------------------------------------------- end of published images */

#endif
