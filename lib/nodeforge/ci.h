/* SPDX-License-Identifier: MIT */
/* libnodeforge's public API: image CI (nodeforge ci).  Included by nodeforge.h,
 * which every user includes; not meant to be included alone. */
#ifndef NF_CI_H
#define NF_CI_H

/* ---------------------------------------------------- image CI (lib/ci.c)
 * nodeforge ci ROLE: build (cache-aware) -> static verification of the
 * published rootfs (the verifier's offline checks, no secrets, no host
 * identity) -> boot (not in this version: reported skipped) -> diff
 * against a baseline manifest -> one verdict, one test case per check and
 * per stage. */

struct nf_ci_opts {
	struct nf_build_opts build;
	const char *baseline;   /* manifest of the last released image, or NULL */
	int boot;               /* stage 3 requested */
	const char *boot_accel; /* QEMU accelerator: "tcg" (default), "kvm" */
	unsigned boot_timeout;  /* seconds to wait for the node's verdict
				 * (0: 900) */
	unsigned boot_memory_mb; /* the VM's memory (0: 2048) */
	const char *tmpdir;     /* where the static stage unpacks (NULL or "":
				 * /tmp) */
	const char *qemu;       /* the emulator (NULL or "":
				 * qemu-system-x86_64 from PATH) */
};

/* One test case; verdict is an enum nf_verdict (NF_V_HUNG: the stage
 * could not run, a JUnit error) */
struct nf_ci_case {
	char *classname;        /* "ci.stage", "static.<facet>", "ci.static",
				 * "ci.diff" */
	char *name;             /* "stage.build", a check id, ... */
	int verdict;
	char *message;          /* fail: what was seen; skip: why; or NULL */
	char *detail;           /* fail: expected / seen / remedy, or NULL */
	double secs;
};

struct nf_ci;

/* Runs every stage it can; *out is set whenever it was allocated, also on
 * failure (the stages that ran, the failed one as an error case).
 * Returns 0, or the first runtime failure (findings are not failures:
 * see nf_ci_passed) */
int nf_ci_run(struct nf_ctx *ctx, const char *role, const struct nf_site *site,
	      const struct nf_ci_opts *o, struct nf_ci **out);
void nf_ci_free(struct nf_ci *ci);
size_t nf_ci_count(const struct nf_ci *ci);
const struct nf_ci_case *nf_ci_case(const struct nf_ci *ci, size_t i);
size_t nf_ci_tally(const struct nf_ci *ci, int verdict);
/* No failure and no error among the cases */
int nf_ci_passed(const struct nf_ci *ci);
/* Stage 4's summary ({baseline, packages, config, usr, kernel_args,
 * files_changed}), or NULL when it did not run; borrowed */
const json_t *nf_ci_diff(const struct nf_ci *ci);
/* One JUnit testsuite "nodeforge-ci.ROLE", written atomically */
int nf_ci_write_junit(struct nf_ctx *ctx, const struct nf_ci *ci,
		      const char *role, const char *path);

/* ---------------------------------------------------- end of image CI */

#endif
