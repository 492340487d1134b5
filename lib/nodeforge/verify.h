/* SPDX-License-Identifier: MIT */
/* libnodeforge's public API: the first-boot verifier.  Included by nodeforge.h,
 * which every user includes; not meant to be included alone. */
#ifndef NF_VERIFY_H
#define NF_VERIFY_H

/* --------------------------------------------------------------- verify */

/*
 * The first-boot verifier: runs every facet's checks for a resolved
 * profile.  `root` holds the node's files (an image tree: only the checks
 * decidable offline run, the others are skipped "static mode" unless a
 * sysroot is given too); `sysroot` holds /proc and /sys (a recorded tree in
 * tests; without --root, the node's files are read from it as well).
 * `fixture` is a JSON file answering the hardware ops (NVML, adjtimex,
 * cgroup2 test, external commands) instead of the real node: tests only.
 */
/* NF_V_WARN: worth telling the operator, never a failure (the gate lets
 * slurmd start) */
enum nf_verdict { NF_V_PASS = 0, NF_V_FAIL, NF_V_SKIP, NF_V_HUNG, NF_V_WARN };

struct nf_verify_opts {
	const char *root;     /* NULL: "/" */
	const char *sysroot;  /* NULL: the real /proc and /sys */
	const char *fixture;  /* NULL: real hardware ops */
	unsigned budget_ms;   /* whole run; 0: 10000 */
	const char *only;     /* NULL, or a facet name / check id prefix */
};

struct nf_check_result {
	const char *id;
	const char *facet;
	const char *summary;
	int verdict;
	const char *expected;
	const char *seen;
	const char *remedy;
	const char *reason;   /* skip/hung: why */
	const char *cause;    /* skipped because this check failed, or NULL */
	unsigned elapsed_us;
};

struct nf_verify;

int nf_verify_run(struct nf_ctx *ctx, const struct nf_profile *p,
		  const struct nf_verify_opts *o, struct nf_verify **out);
void nf_verify_free(struct nf_verify *v);
/* Results, root causes first */
size_t nf_verify_count(const struct nf_verify *v);
const struct nf_check_result *nf_verify_result(const struct nf_verify *v,
						size_t i);
/* Number of checks with the verdict */
size_t nf_verify_tally(const struct nf_verify *v, int verdict);
/* 1 when every check passed or was skipped for a reason other than a
 * failure */
int nf_verify_passed(const struct nf_verify *v);
const char *nf_verdict_name(int verdict);
/* The verdict document (verdict.json, --json); new reference */
json_t *nf_verify_json(const struct nf_verify *v);
/* JUnit XML for image CI, written atomically */
int nf_verify_write_junit(struct nf_ctx *ctx, const struct nf_verify *v,
			  const char *path);
/* "nodeforge.server=URL" from the (sysroot's) /proc/cmdline; caller frees;
 * NF_E_NOTFOUND when absent */
int nf_verify_server_url(struct nf_ctx *ctx, const char *sysroot, char **url);
/* Health mode: drain this node through scontrol with the root cause on a
 * failure; resume it on a pass when its drain reason starts with
 * "nodeforge:".  *action: "drain", "resume" or "none" */
int nf_verify_health(struct nf_ctx *ctx, const struct nf_verify *v,
		     const struct nf_verify_opts *o, const char **action);

/* Gate mode: write the verdict document to `verdict_path` (NULL:
 * ROOT/run/nodeforge/verdict.json), a login banner line to
 * ROOT/run/motd.d/nodeforge, and POST it to the nodeforge.server= URL of
 * the kernel command line (best effort: a failure is logged) */
int nf_verify_publish(struct nf_ctx *ctx, const struct nf_verify *v,
		      const struct nf_verify_opts *o, const char *verdict_path);

/* POST a JSON document (lib/report.c, libcurl); best effort, bounded by
 * timeout_ms.  With a key (the node's munge key), the request carries
 * X-Nodeforge-Time and X-Nodeforge-Proof (nf_verdict_proof) for `name` */
int nf_http_post_json(struct nf_ctx *ctx, const char *url, const json_t *doc,
		      unsigned timeout_ms, const char *name,
		      const uint8_t *key, size_t klen);
/* HMAC-SHA256 with key over "nodeforge-verdict-v1" NUL name NUL time NUL
 * body: how an enrolled node signs its verdict */
int nf_verdict_proof(const uint8_t *key, size_t klen, const char *name,
		     const char *time, const void *body, size_t len,
		     uint8_t out[32]);

#endif
