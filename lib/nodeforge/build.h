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
};

int nf_build(struct nf_ctx *ctx, const char *role, const struct nf_site *site,
	     const struct nf_build_opts *opts, struct nf_build_result *res);
void nf_build_result_free(struct nf_build_result *res);

/* --------------------------------------------------- end of image build */

#endif
