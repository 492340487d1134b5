/* SPDX-License-Identifier: MIT */
/*
 * Image CI's private parts, shared by its files: lib/ci.c (the run, the
 * static stage, reports), lib/ci_boot.c (the boot stage in a VM) and
 * lib/ci_diff.c (the diff against a baseline).
 */
#ifndef NF_CI_INT_H
#define NF_CI_INT_H

#include "internal.h"

#include <time.h>

struct nf_ci {
	struct nf_ci_case *v;
	size_t n, cap;
	json_t *diff;           /* summary of stage 4, or NULL */
	char *rootfs;           /* published rootfs name */
	char *rootfs_sha256;
	double elapsed;
};

/* lib/ci.c: one test case; a stage's case, timed from t0; a failed
 * stage's case, carrying the library's message (returns err) */
int nf_ci_add_case(struct nf_ci *ci, const char *cls, const char *name,
		   int verdict, const char *message, const char *detail,
		   double secs);
int nf_ci_stage_case(struct nf_ci *ci, const char *name, int verdict,
		     const char *msg, double t0);
int nf_ci_stage_error(struct nf_ctx *ctx, struct nf_ci *ci, const char *name,
		      int err, double t0);

/* lib/ci.c: no secrets and no host identity in the unpacked image ROOT,
 * one case each; what the scan cannot read fails the secret cases */
int nf_ci_secret_scan(struct nf_ctx *ctx, struct nf_ci *ci, const char *root);

/* lib/ci_boot.c: stage 3, its stage case and one case per check of the
 * booted node's verdict; tmpdir is the run's directory, the unpacked
 * image in tmpdir/root */
int nf_ci_boot_stage(struct nf_ctx *ctx, struct nf_ci *ci, const char *role,
		     const struct nf_site *site, const struct nf_ci_opts *o,
		     const char *tmpdir);

/* lib/ci_diff.c: stage 4, the image (its manifest, the unpacked root)
 * against the baseline archive and its manifest; ci->diff gets the
 * summary */
int nf_ci_diff_stage(struct nf_ctx *ctx, struct nf_ci *ci,
		     const char *baseline, const char *manifest,
		     const char *root);

#endif
