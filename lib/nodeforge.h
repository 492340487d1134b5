/* SPDX-License-Identifier: MIT */
/*
 * libnodeforge: the one public header.
 *
 * Conventions: functions return 0 on success or a negative errno / negative
 * NF_E_* code on failure; nf_strerror() names every one of them.  Objects
 * come back through out-parameters.  The library never prints and never
 * exits: it records a message in the context (nf_errmsg) and logs only
 * through the caller's callback.  Nor does it read the environment: every
 * default that comes from a variable ($HOME, $XDG_CACHE_HOME,
 * $SOURCE_DATE_EPOCH, $TMPDIR, $NODEFORGE_*) is resolved by the command and
 * passed in the options structs.  lib/ calls getenv() once, for the PATH
 * search of a check's exec (lib/verify_exec.c); the tools it runs inherit
 * the environment, and libcurl reads its proxy variables where a request
 * does not turn them off.
 */
#ifndef NODEFORGE_H
#define NODEFORGE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* jansson's JSON value, which the API passes by pointer only: a command
 * that works on one includes <jansson.h> itself (C11 allows this typedef
 * to be repeated there) */
typedef struct json_t json_t;

#ifdef __cplusplus
extern "C" {
#endif

#ifndef NF_VERSION
#define NF_VERSION "0.1.0"
#endif

/* The commit nodeforge was built from (12 hex digits, or "unknown") */
extern const char nf_commit[];

/*
 * Error codes.  Negative, below the errno range.  Retired codes are never
 * renumbered; the table in lib/error.c is checked for completeness at
 * compile time.
 */
enum nf_error {
	NF_E_BASE = -4096,
	NF_E_USAGE = NF_E_BASE,   /* bad arguments to a library call */
	NF_E_PARSE,               /* malformed input (YAML, JSON, archive) */
	NF_E_INVALID,             /* well-formed input with a bad value */
	NF_E_NOTFOUND,            /* a named thing does not exist */
	NF_E_CYCLE,               /* inheritance cycle */
	NF_E_CONFLICT,            /* two values that cannot both hold */
	NF_E_UNSAFE,              /* a path or entry would escape its root */
	NF_E_CHECKSUM,            /* content does not match its recorded hash */
	NF_E_SIGNATURE,           /* signature missing or does not verify */
	NF_E_NETWORK,             /* transfer failed */
	NF_E_LIMIT,               /* an input exceeded a hard cap */
	NF_E_LOCKED,              /* another process holds the lock */
	NF_E_UNSUPPORTED,         /* feature or format not supported */
	NF_E_TIMEOUT,             /* an operation ran past its budget */
	NF_E_FINDINGS,            /* checks ran and found problems */
	NF_E_EXTERNAL,            /* an external tool failed */
	NF_E_NOHW,                /* hardware or firmware interface absent */
	NF_E_END                  /* not an error: end of the table */
};

const char *nf_strerror(int code);

/* The candidate closest to word by edit distance (a swap of two neighbours
 * counts one), when close enough to be a typo of it (at most a third of
 * the word's length, at least one); NULL otherwise.  For "did you mean". */
const char *nf_suggest(const char *word, const char *const *cands, size_t n);

/* Text that came from a node, a driver or a command, as it may be shown
 * to a person or handed to another program: a byte a terminal acts on
 * rather than shows (C0 controls, DEL, C1 controls, bidirectional
 * overrides) becomes \xNN.  nf_text_escape also doubles a backslash, so
 * the result reads back unambiguously (malloc'd; NULL on ENOMEM);
 * nf_text_defang rewrites buf in place, truncating to sz. */
char *nf_text_escape(const char *s);
void nf_text_defang(char *buf, size_t sz);

/* Whether an option's source is a URL (a scheme before "://": http://,
 * https://, file://) rather than a directory.  One rule for every option
 * that takes either: anything without a scheme is a path, and a relative
 * one is relative to the working directory. */
int nf_is_url(const char *s);

/* The program PROG as $PATH finds it (else /usr/bin:/bin), written into
 * BUF; PROG itself when it names a path; NULL when it is not there or
 * cannot be run */
const char *nf_which(const char *prog, char *buf, size_t sz);

/* Seconds on the monotonic clock: for durations (stage times, timeouts),
 * never for dates */
double nf_now_s(void);

/* Exit statuses shared by every command (docs/exit-codes.md). */
enum nf_exit {
	NF_EXIT_OK = 0,
	NF_EXIT_FAILURE = 1,
	NF_EXIT_USAGE = 2,
	NF_EXIT_FINDINGS = 3,
};

/* ------------------------------------------------------------------ ctx */

enum nf_log_level { NF_LOG_ERR = 0, NF_LOG_WARN, NF_LOG_INFO, NF_LOG_DEBUG };

typedef void (*nf_log_fn)(void *userdata, int level, const char *msg);

struct nf_ctx;

int nf_ctx_new(struct nf_ctx **out);
void nf_ctx_free(struct nf_ctx *ctx);
void nf_ctx_set_log(struct nf_ctx *ctx, nf_log_fn fn, void *userdata);
void nf_ctx_set_log_level(struct nf_ctx *ctx, int level);
/* The last error message recorded by a failing call, or "" */
const char *nf_errmsg(const struct nf_ctx *ctx);
/* What to say of a failure that returned CODE: the message recorded with
 * that code, else nf_strerror(CODE), never an earlier failure's message */
const char *nf_error_text(const struct nf_ctx *ctx, int code);
/* Forget the recorded message: what fails after this says its own, or its
 * code's */
void nf_clear_error(struct nf_ctx *ctx);
/* Directory that holds the role profiles (-C) */
int nf_ctx_set_profiles_dir(struct nf_ctx *ctx, const char *dir);
const char *nf_ctx_profiles_dir(const struct nf_ctx *ctx);
/* Sysroot for /proc and /sys reads ("" or NULL: the real ones) */
int nf_ctx_set_sysroot(struct nf_ctx *ctx, const char *dir);
const char *nf_ctx_sysroot(const struct nf_ctx *ctx);

/* --------------------------------------------------------- diagnostics */

enum nf_severity { NF_SEV_ERROR = 0, NF_SEV_WARNING };

/* One finding about an input file, with its position (1-based; 0: unknown) */
struct nf_diag {
	char *file;
	unsigned line;
	unsigned col;
	int severity;
	char *message;
};

struct nf_diags {
	struct nf_diag *v;
	size_t n, cap;
};

void nf_diags_init(struct nf_diags *d);
void nf_diags_free(struct nf_diags *d);
size_t nf_diags_errors(const struct nf_diags *d);
int nf_diag_add(struct nf_diags *d, const char *file, unsigned line,
		unsigned col, int severity, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));
/* Sort by file, line, column (stable) */
void nf_diags_sort(struct nf_diags *d);

/* -------------------------------------------------------------- emitter */

/*
 * One emitter renders either text or JSON from the same calls, so the two
 * outputs cannot drift apart.  In JSON mode everything is collected into a
 * jansson tree and written by nf_emit_end(); in text mode the fmt strings
 * are printed as the calls come (fmt NULL: nothing printed in text mode).
 */
struct nf_emit;

int nf_emit_new(struct nf_emit **out, FILE *fp, int json);
void nf_emit_free(struct nf_emit *e);
int nf_emit_is_json(const struct nf_emit *e);
void nf_emit_obj_open(struct nf_emit *e, const char *key);
void nf_emit_obj_close(struct nf_emit *e);
void nf_emit_arr_open(struct nf_emit *e, const char *key);
void nf_emit_arr_close(struct nf_emit *e);
void nf_emit_str(struct nf_emit *e, const char *key, const char *fmt,
		 const char *val);
/* A string from outside (a node, a server, an archive, a file name): the
 * text shows it through nf_text_escape, JSON keeps it as it is */
void nf_emit_ext(struct nf_emit *e, const char *key, const char *fmt,
		 const char *val);
void nf_emit_int(struct nf_emit *e, const char *key, const char *fmt,
		 long long val);
void nf_emit_bool(struct nf_emit *e, const char *key, const char *fmt, int val);
void nf_emit_real(struct nf_emit *e, const char *key, const char *fmt,
		  double val);
/* A whole jansson value: JSON mode stores it (borrowed, increfs); text
 * mode prints it as indented JSON */
void nf_emit_json(struct nf_emit *e, const char *key, json_t *val);
/* Text-only output (ignored in JSON mode) */
void nf_emit_text(struct nf_emit *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Text-only: s from column col on, wrapped at words to width, continuation
 * lines indented by ind, at most max lines (0: all; a cut ends " ...").
 * shell: s is a command, broken only outside quotes with " \" line ends
 * (or "# " inside its comment), so that it works as pasted */
void nf_emit_wrap(struct nf_emit *e, const char *s, int col, int ind,
		  int width, int max, int shell);
/* Writes the JSON document (JSON mode); returns 0 or -errno */
int nf_emit_end(struct nf_emit *e);

/* A JSON document as block YAML for people (lib/adapters/yaml.c): a
 * string that would read back as anything else is double-quoted */
int nf_yaml_write(struct nf_ctx *ctx, const json_t *doc, FILE *fp);

/* ------------------------------------------------------------- profiles */

/*
 * A site: what differs per cluster.  Kept as the validated JSON tree;
 * accessors borrow.
 */
struct nf_site;

/* What 'nodeforge init' asks for a site file of one's own */
struct nf_site_init {
	const char *cluster;            /* NULL: "cluster" */
	const char *distro;             /* NULL: "debian13" */
	const char *network;            /* the provisioning CIDR (required) */
	const char *gateway;            /* or NULL */
	const char *domain;             /* or NULL */
	const char *const *dns;
	size_t ndns;
	const char *const *ntp;         /* at least one */
	size_t nntp;
	const char *server;             /* the boot server URL (required) */
	const char *munge_key;          /* where the key is; its fingerprint
					 * is recorded when it can be read */
	const char *password;           /* slurmdbd password file */
	int force;                      /* replace an existing file */
};

/* Write a site file at path from o, validated as nf_site_load() would
 * (diags), published atomically; an existing file is kept unless force */
int nf_site_init(struct nf_ctx *ctx, const struct nf_site_init *o,
		 const char *path, struct nf_diags *diags);

int nf_site_load(struct nf_ctx *ctx, const char *path, struct nf_site **out,
		 struct nf_diags *diags);
void nf_site_free(struct nf_site *site);
const json_t *nf_site_json(const struct nf_site *site);
const char *nf_site_path(const struct nf_site *site);

/*
 * A resolved profile: a role's profile after inheritance and with the site
 * applied.  `json` is the document written to /etc/nodeforge/profile.json.
 */
struct nf_profile;

/* Names of the profiles of the profiles directory, sorted */
int nf_profile_list(struct nf_ctx *ctx, char ***names, size_t *n);
/* Names of the roles: the profiles that are not partial (abstract: true),
 * sorted */
int nf_profile_roles(struct nf_ctx *ctx, char ***names, size_t *n);
void nf_strv_free(char **v, size_t n);

int nf_profile_resolve(struct nf_ctx *ctx, const char *name,
		       const struct nf_site *site, struct nf_profile **out,
		       struct nf_diags *diags);
void nf_profile_free(struct nf_profile *p);
const json_t *nf_profile_json(const struct nf_profile *p);
const char *nf_profile_name(const struct nf_profile *p);
/* A role that inherits a profile made for other distros (its distros:)
 * cannot be built for `distro`: NF_E_CONFLICT naming the profile */
int nf_profile_check_distro(struct nf_ctx *ctx, const struct nf_profile *p,
			    const char *distro);
/* Where a value came from, by its dotted path ("kernel.args[2]"); borrows */
int nf_profile_where(const struct nf_profile *p, const char *path,
		     const char **file, unsigned *line, unsigned *col);
/* Load an already resolved profile (profile.json written by a build) */
int nf_profile_load_json(struct nf_ctx *ctx, const char *path,
			 struct nf_profile **out);

/* The kernel command line the facets require, space-separated; caller
 * frees */
int nf_profile_kernel_args(struct nf_ctx *ctx, const struct nf_profile *p,
			   char **out);

/* Best-practice lint of a resolved profile: appends to diags */
int nf_profile_lint(struct nf_ctx *ctx, const struct nf_profile *p,
		    struct nf_diags *diags);

/* ------------------------------------------------------------- hostlist */

/* Expand a Slurm hostlist ("gpu-[01-04,07],cp-01") into names */
int nf_hostlist_expand(const char *expr, char ***names, size_t *n,
		       size_t max);

/* --------------------------------------------------------------- cpulist */

/* Parse "0-3,8,10-11" into a bitmap of `nbits` bits (bytes: nbits/8) */
int nf_cpulist_parse(const char *s, uint8_t *bits, size_t nbits,
		     unsigned *maxcpu);
/* Format a bitmap back to the canonical list form; caller frees */
char *nf_cpulist_format(const uint8_t *bits, size_t nbits);

/* ---------------------------------------------------------------- sha256 */

#define NF_SHA256_HEX 65
void nf_sha256_hex(const void *data, size_t len, char out[NF_SHA256_HEX]);


/* ------------------------------------------ pack, manifests, signatures
 * Deterministic image archives (tar or cpio newc, zstd/xz/gzip/none), the
 * manifest written in the same pass, Ed25519 signatures, drift checks,
 * diffs and a safe unpacker.  Manifests are jansson trees. */

enum nf_pack_format { NF_PACK_TAR = 0, NF_PACK_CPIO };
enum nf_pack_comp { NF_COMP_NONE = 0, NF_COMP_GZIP, NF_COMP_ZSTD, NF_COMP_XZ };

struct nf_pack_opts {
	int format;             /* enum nf_pack_format */
	int compressor;         /* enum nf_pack_comp */
	int level;              /* < 0: the compressor's default */
	int threads;            /* zstd/xz workers; <= 0: one per CPU */
	long long epoch;        /* mtimes above it are clamped to it */
	/* Called now and then while packing (may be NULL) */
	void (*progress)(void *data, unsigned long long entries,
			 unsigned long long total, unsigned long long bytes);
	void *progress_data;
};

/* Format and compressor from an output name's suffix (.tar.zst, .cpio.gz,
 * .tar, ...) or from a --format value ("tar.zst"); NF_E_INVALID if none */
int nf_pack_parse_format(const char *name, int *format, int *compressor);
const char *nf_pack_format_name(int format, int compressor);

/* Pack the tree under `root` into `out` and write `out`.manifest.json;
 * both are published atomically */
int nf_pack(struct nf_ctx *ctx, const char *root, const char *out,
	    const struct nf_pack_opts *opts);

/* Load and validate a manifest (size-capped) */
int nf_manifest_load(struct nf_ctx *ctx, const char *path, json_t **out);
int nf_manifest_parse(struct nf_ctx *ctx, const char *buf, size_t len,
		      json_t **out);
/* The manifest's signature (path.sig) against `pubkey` (PEM), then the
 * archive next to the manifest against its recorded sha256 and size */
int nf_manifest_verify(struct nf_ctx *ctx, const char *path,
		       const char *pubkey);
/* Compare a live tree with a manifest; appends one object per difference
 * to `drift` ({path, change, expected, seen}) */
int nf_manifest_check(struct nf_ctx *ctx, const json_t *manifest,
		      const char *root, json_t *drift);
/* Differences between two manifests, appended to `changes` */
int nf_manifest_diff(struct nf_ctx *ctx, const json_t *a, const json_t *b,
		     json_t *changes);

/* Ed25519: DIR/signing.key (0600) and DIR/signing.pub, PEM */
int nf_keys_signing(struct nf_ctx *ctx, const char *dir);
/* Sign a file: writes path.sig */
int nf_sign_file(struct nf_ctx *ctx, const char *path, const char *key);
int nf_verify_file(struct nf_ctx *ctx, const char *path, const char *sig,
		   const char *pubkey);

struct nf_unpack_opts {
	int devices;                      /* create device nodes */
	int skip_devices;                 /* leave device nodes out (not an
					   * error); for a tree only read */
	unsigned long long max_size;      /* total content cap; 0: default */
	unsigned long long max_entries;   /* 0: default */
};

/* Unpack `archive` into `dir` (must not exist, or be empty) */
int nf_unpack(struct nf_ctx *ctx, const char *archive, const char *dir,
	      const struct nf_unpack_opts *opts);
/* Same, from memory into an open directory (fuzzing, tests) */
int nf_unpack_mem(struct nf_ctx *ctx, const void *buf, size_t len, int dirfd,
		  const struct nf_unpack_opts *opts);

/* -------------------------------------- end of pack, manifests, signatures */

/* The API by part (lib/nodeforge/) */
#include "nodeforge/boot.h"
#include "nodeforge/disk.h"
#include "nodeforge/verify.h"
#include "nodeforge/verdict.h"
#include "nodeforge/build.h"
#include "nodeforge/secrets.h"
#include "nodeforge/power.h"
#include "nodeforge/reimage.h"
#include "nodeforge/ci.h"
#include "nodeforge/gres.h"

#ifdef __cplusplus
}
#endif
#endif
