/* SPDX-License-Identifier: MIT */
/* Private declarations of libnodeforge. */
#ifndef NF_INTERNAL_H
#define NF_INTERNAL_H

#include "nodeforge.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#define NF_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

struct nf_ctx {
	nf_log_fn log_fn;
	void *log_data;
	int log_level;
	char *profiles_dir;
	char *sysroot;
	char errmsg[1024];
};

/* Record a message for the caller and return `code` */
int nf_fail(struct nf_ctx *ctx, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Forget the last error: a failure the caller handled (an optional file,
 * a user the image lacks yet) leaves no message behind */
void nf_clear_error(struct nf_ctx *ctx);
void nf_log(struct nf_ctx *ctx, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Checked allocation helpers: they return NULL only on ENOMEM */
char *nf_strdup(const char *s);
char *nf_asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The value of the last KEY=VALUE word of a kernel command line into out
 * (sz 0: only whether it is there); -ENOENT without one */
int nf_cmdline_find(const char *cmdline, const char *key, char *out,
		    size_t sz);
/* Read a whole file, at most `max` bytes (NF_E_LIMIT above); NUL-terminated */
int nf_read_file(struct nf_ctx *ctx, const char *path, size_t max, char **buf,
		 size_t *len);

/* Child processes (lib/spawn.c).  A struct nf_spawn, zeroed, then filled
 * in: argv[0] is looked up in PATH as execvp does (the PATH of `env` when
 * it sets one); stdin is `in` (inlen bytes) or /dev/null; stdout and
 * stderr each go to /dev/null, into the capture buffer (both: one stream)
 * or to `fd`.  A program that cannot be executed is told apart from one
 * that exits 127: start fails with its -errno and exec_errno says why. */
enum nf_spawn_to { NF_SPAWN_NULL, NF_SPAWN_CAPTURE, NF_SPAWN_FD };

/* its own process group: a deadline or a kill takes what it started too */
#define NF_SPAWN_PGROUP 0x1u
/* killed (SIGKILL) when the caller dies */
#define NF_SPAWN_PARENT_DEATH 0x2u
/* the capture keeps the last cap_max bytes, not the first */
#define NF_SPAWN_CAP_TAIL 0x4u

#define NF_SPAWN_CAP_DEFAULT (64u * 1024)

struct timespec;
struct nf_spawn {
	const char *const *argv;
	const char *const *env;	/* NAME=VALUE entries added (NULL: none) */
	const char *cwd;	/* NULL: the caller's */
	const char *in;		/* NULL: /dev/null */
	size_t inlen;
	enum nf_spawn_to out, err;
	int fd;			/* where NF_SPAWN_FD output goes */
	size_t cap_max;		/* 0: NF_SPAWN_CAP_DEFAULT */
	/* CLOCK_MONOTONIC; wait kills the child (its group) then */
	const struct timespec *deadline;
	unsigned flags;

	/* results: pid while it runs (-1 once reaped), waitpid's status,
	 * the capture (NUL-terminated, the caller frees it) */
	pid_t pid;
	int status;
	int exec_errno;
	char *cap;
	size_t caplen;

	/* a started child not yet waited for or killed: its pipes (the
	 * parent's ends) */
	bool started;
	int in_fd, cap_fd;
	size_t inoff;
};

/* Start the child: 0, or a negative errno (exec_errno set when the
 * program itself could not be executed) */
int nf_spawn_start(struct nf_spawn *s);
/* Feed stdin and collect output until the child has exited: 0 (status
 * set), NF_E_TIMEOUT at the deadline (killed), or a negative errno */
int nf_spawn_wait(struct nf_spawn *s);
/* Whether the child has exited (1: status set), without waiting */
int nf_spawn_poll(struct nf_spawn *s);
/* SIGTERM, SIGKILL after grace_ms (0: at once), and reap; nothing for
 * a struct that was never started */
void nf_spawn_kill(struct nf_spawn *s, unsigned grace_ms);
/* nf_spawn_start, then nf_spawn_wait */
int nf_spawn_run(struct nf_spawn *s);

/* Run argv in its own process group, stdin `in` or /dev/null, stdout and
 * stderr captured together (64 KiB kept); killed with its group at
 * `deadline`: NF_E_TIMEOUT.  *status is the exit status, 128+signal when
 * killed by one (lib/verify.c) */
int nf_spawn_capture(const char *const *argv, const char *in,
		     const struct timespec *deadline, char **out, int *status);

/* Escape text for XML (JUnit reports) */
void nf_xml_escape(FILE *f, const char *s);

/* One JUnit test case (lib/junit.c): pass and warn (a pass with its text
 * as system-out), skip (message), fail and hung (failure or error: message,
 * text the body) */
struct nf_junit_case {
	const char *classname, *name;
	int verdict;
	const char *message;
	const char *text;
	double secs;
};

int nf_junit_write(struct nf_ctx *ctx, const char *path, const char *suite,
		   const char *hostname, const struct nf_junit_case *v, size_t n,
		   double secs);

/* Write `len` bytes to `path` atomically: temp file in the same directory,
 * fsync, rename, fsync of the directory */
int nf_write_atomic(struct nf_ctx *ctx, const char *path, const void *buf,
		    size_t len, unsigned mode);

/* ---- YAML adapter (lib/adapters/yaml.c) ----
 * Parse a YAML document into a jansson tree.  Every node's position is
 * recorded in `locs` (object: dotted path -> [file, line, col]).  Scalars
 * become strings unless they are plain (unquoted) and read as an integer,
 * a real, true/false or null.  Duplicate keys, anchors/aliases, tags and
 * multiple documents are errors. */
int nf_yaml_load(struct nf_ctx *ctx, const char *path, json_t **out,
		 json_t *locs, struct nf_diags *diags);
int nf_yaml_load_buf(struct nf_ctx *ctx, const char *name, const char *buf,
		     size_t len, json_t **out, json_t *locs,
		     struct nf_diags *diags);

/* Position of a dotted path in a locs object; 0 when unknown */
int nf_locs_get(const json_t *locs, const char *path, const char **file,
		unsigned *line, unsigned *col);

/* ---- schema validation (lib/schema.c) ----
 * A small typed schema, declared by each facet, checked against a parsed
 * tree; every error names file:line:col via locs. */
enum nf_type {
	NF_T_ANY = 0,
	NF_T_STR,
	NF_T_INT,
	NF_T_BOOL,
	NF_T_NUM,       /* integer or real */
	NF_T_SIZE,      /* "64M", "1G" or an integer of bytes */
	NF_T_LIMIT,     /* integer or "unlimited" */
	NF_T_STRLIST,   /* list of strings */
	NF_T_OBJ,       /* object with its own fields */
	NF_T_OBJLIST,   /* list of objects with their own fields */
	NF_T_MAP,       /* free-form object: string keys, scalar values */
	NF_T_PATH,      /* absolute path */
	NF_T_MODE,      /* octal string such as "0400" */
};

struct nf_field {
	const char *name;
	int type;
	const struct nf_field *fields; /* NF_T_OBJ / NF_T_OBJLIST */
	const char *const *choices;    /* NF_T_STR: allowed values (NULL-ended) */
	bool required;
};

int nf_schema_check(const json_t *obj, const struct nf_field *fields,
		    const char *path, const json_t *locs,
		    struct nf_diags *diags);
/* Parse sizes such as "64M", "1G", "45G" (powers of 1024) */
int nf_parse_size(const char *s, unsigned long long *out);

/* ---- facets (lib/facets/) ---- */
struct nf_facet_lint {
	struct nf_ctx *ctx;
	const struct nf_profile *profile;
	struct nf_diags *diags;
};

/* Defined by the image builder (lib/build.c) and the verifier (lib/verify.c) */
struct nf_apply;
struct nf_checkset;

struct nf_facet {
	const char *name;     /* facet name, also its profile section */
	const char *summary;
	const struct nf_field *schema;
	/* Cross-field validation and best-practice lint of the resolved
	 * profile; diags carry positions */
	int (*lint)(struct nf_facet_lint *l, const json_t *section);
	/* Kernel arguments this facet adds to the boot artifacts */
	int (*boot_args)(const json_t *section, json_t *args);
	/* What the profile leaves to the site: fills SECTION from the site
	 * file's public part when the profile does not say */
	void (*from_site)(json_t *section, const json_t *site);
	/* What the image build writes into the image root for this facet */
	int (*apply)(struct nf_apply *a, const json_t *section);
	/* What the verifier checks on a live node or an image root */
	const struct nf_checkset *checks;
};

extern const struct nf_facet *const nf_facets[];
extern const size_t nf_nfacets;
const struct nf_facet *nf_facet_find(const char *name);
/* The definition of check ID in any facet, or NULL */
const struct nf_check_def *nf_check_find(const char *id);

/* Position helper for facet lint: diag at the value's location */
int nf_lint_at(struct nf_facet_lint *l, const char *path, int sev,
	       const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* The key of a kernel argument ("hugepages" of "hugepages=160", the whole
 * word without '=') into key; 1 if it has a value, 0 if not, NF_E_LIMIT
 * when keysz is too small (lib/profile.c) */
int nf_kargs_key(const char *arg, char *key, size_t keysz);

/* The site as profiles may carry it: no secret sources (lib/site.c) */
const json_t *nf_site_public(const struct nf_site *site);
/* The value at a dotted path of a resolved profile's objects
 * ("gpu.nvswitch"), or NULL */
const json_t *nf_profile_get(const json_t *prof, const char *path);
/* 1 when obj (an artifact) has no 'when', or the profile setting its
 * 'when' names is true: the role needs it */
int nf_profile_runs_when(const json_t *prof, const json_t *obj);
/* "10.0.0.0/16" -> host-order network and prefix length */
int nf_parse_cidr(const char *s, uint32_t *net, unsigned *prefix);

/* ---- image build: facet apply and build pipeline (lib/apply.c, lib/build.c) ---- */

/* What a facet's apply gets: everything is written relative to `rootfd`
 * through the nf_apply_* helpers (openat, O_NOFOLLOW, no "..") */
struct nf_apply {
	struct nf_ctx *ctx;
	int rootfd;                       /* the image root, O_DIRECTORY */
	const struct nf_profile *profile;
	const json_t *prof;               /* nf_profile_json(profile) */
	const json_t *site;               /* prof.site (public site) */
	const char *role;
	const char *distro;               /* "debian12", "rocky9", ... */
	int el;                           /* EL family (paths differ) */
	const json_t *cluster;            /* nf_cluster_load() or NULL */
};

/* Text buffer for rendering config files; grows up to a hard cap */
struct nf_buf {
	char *s;
	size_t len, cap;
	int err;
};
void nf_buf_printf(struct nf_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void nf_buf_free(struct nf_buf *b);

/* Write a systemd unit /etc/systemd/system/NAME from `b` (freed) and
 * enable it in multi-user.target.wants */
struct nf_apply;
int nf_apply_unit(struct nf_apply *a, const char *name, struct nf_buf *b);
/* Header line every generated file starts with (comment char `c`) */
void nf_apply_header(struct nf_buf *b, const char *c, const char *facet);
/* mkdir -p of an absolute path inside the root */
int nf_apply_mkdir(struct nf_apply *a, const char *path, unsigned mode,
		   uid_t uid, gid_t gid);
/* Replace `path` in the root with `len` bytes, mode and owner explicit;
 * parents are created 0755 root:root */
int nf_apply_write(struct nf_apply *a, const char *path, const void *data,
		   size_t len, unsigned mode, uid_t uid, gid_t gid);
int nf_apply_write_buf(struct nf_apply *a, const char *path,
		       struct nf_buf *b, unsigned mode, uid_t uid, gid_t gid);
/* Replace `path` with a symlink to `target` (target is not followed) */
int nf_apply_symlink(struct nf_apply *a, const char *path, const char *target);
/* Remove a file (or symlink) of the root; absent is fine */
int nf_apply_remove(struct nf_apply *a, const char *path);
/* Read a file of the root; -ENOENT when absent */
int nf_apply_read(struct nf_apply *a, const char *path, size_t max,
		  char **buf, size_t *len);
/* Does a regular file or symlink exist at `path` in the root? */
int nf_apply_exists(struct nf_apply *a, const char *path);
/* Numeric ids of a user/group of the image (its /etc/passwd, /etc/group);
 * -ENOENT when the image has no such user */
int nf_apply_user(struct nf_apply *a, const char *name, uid_t *uid, gid_t *gid);
/* Enable a systemd unit: symlink in multi-user.target.wants */
int nf_apply_enable(struct nf_apply *a, const char *unit);
/* Is `daemon` in the profile's slurm.daemons? */
int nf_apply_has_daemon(const struct nf_apply *a, const char *daemon);
/* Read fd to its end into a malloc'd, NUL-terminated buffer: 0, NF_E_LIMIT
 * when it holds more than max bytes, or -errno; fd stays open */
int nf_read_fd(int fd, size_t max, char **buf, size_t *len);
/* write(2) all of buf, through EINTR and short writes: 0 or -errno */
int nf_write_full(int fd, const void *buf, size_t len);
/* 1 when s is a sha256 as the pins write it: 64 lowercase hex digits */
int nf_is_sha256_hex(const char *s);

/* lib/elf.c: the program interpreter (PT_INTERP) of an ELF64 LE file in
 * buf: 1 with the path in out, 0 when it has none (static), -ENOEXEC
 * when it is not such an ELF file, -EINVAL when it is malformed */
int nf_elf_interp(const void *buf, size_t len, char *out, size_t outsz);

/* lib/rootdir.c: work inside a root directory (an image, a node's root,
 * a disk being installed).  Paths are relative to ROOTFD (a leading '/'
 * is allowed), walked one component at a time, never through a symlink;
 * empty, '.' and '..' components are refused before anything is made. */
#define NF_ROOT_CREATE 1 /* make missing directories, 0755 */
#define NF_ROOT_FSYNC 2  /* a written file and its directory reach disk */
/* Open directory DIR ("" or "/": the root itself); the fd or an error */
int nf_root_opendir(struct nf_ctx *ctx, int rootfd, const char *dir,
		    int flags);
/* Open the directory holding PATH; its last component into LEAF */
int nf_root_parent(struct nf_ctx *ctx, int rootfd, const char *path,
		   int flags, char *leaf, size_t leafsz);
/* Replace LEAF in the open directory DFD with DATA: a temporary file
 * beside it (created 0600), owner (uid/gid -1: unchanged) and mode set,
 * renamed over it; SHOWN names it in the error */
int nf_root_write_in(struct nf_ctx *ctx, int dfd, const char *leaf,
		     const char *shown, const void *data, size_t len,
		     unsigned mode, long uid, long gid, int flags);
/* nf_root_parent + nf_root_write_in */
int nf_root_write(struct nf_ctx *ctx, int rootfd, const char *path,
		  const void *data, size_t len, unsigned mode, long uid,
		  long gid, int flags);
/* The newest /boot/vmlinuz-VERSION of the root (version order) into
 * KERNEL as "/boot/vmlinuz-VERSION", and its initrd (initrd.img-VERSION
 * or initramfs-VERSION.img) into INITRD, "" if none; INITRD may be NULL */
int nf_root_find_kernel(struct nf_ctx *ctx, int rootfd, char *kernel,
			size_t ksz, char *initrd, size_t isz);
/* One entry of a walked tree: PATH is the walked directory's path with
 * REL appended, REL is relative to it (no leading '/') */
struct nf_walk_entry {
	const char *path;
	const char *rel;
	const struct stat *st;
};
typedef int (*nf_walk_fn)(void *data, const struct nf_walk_entry *e);
/* Every entry below DIR (not DIR itself): a directory before what it
 * holds, names in bytewise order, symlinks reported and never followed;
 * FN's non-zero return stops the walk and is returned */
int nf_walk_tree(struct nf_ctx *ctx, const char *dir, nf_walk_fn fn,
		 void *data);
/* Open REL inside the image root ROOTFD for reading (flags as open(2)):
 * every symlink, absolute or with "..", resolves inside the root
 * (openat2 RESOLVE_IN_ROOT); the fd, or -errno */
int nf_openat_root(int rootfd, const char *rel, int flags);
/* Open `path` (relative to cwd) as a root for apply */
int nf_apply_open_root(struct nf_ctx *ctx, const char *path, int *rootfd);
/* Run every facet's apply, then write the resolved profile and the
 * verifier's units */
int nf_apply_all(struct nf_ctx *ctx, int rootfd, const struct nf_profile *p);

/* Templates (lib/template.c): {{name}} replaced by LOOKUP's value (0, or
 * non-zero for an unknown name), \{{ a literal {{; an unknown name or an
 * unterminated {{ is an error at FILE:LINE, the names KNOWN listed */
typedef int (*nf_template_lookup)(void *data, const char *name, char *out,
				  size_t outsz);
int nf_template_render(struct nf_ctx *ctx, const char *file, const char *in,
		       nf_template_lookup lookup, void *data, const char *known,
		       struct nf_buf *out);
/* An overlay's *.tmpl (lib/build_root.c): {{role}}, {{site.A.B}},
 * {{profile.A.B}} (list items by index) */
int nf_overlay_render(struct nf_ctx *ctx, const json_t *prof, const char *role,
		      const char *file, const char *in, struct nf_buf *out);

/* libcurl's global set-up, once per process (lib/adapters/curl.c): 0, or
 * -ENOMEM when libcurl cannot start */
int nf_curl_init(void);

/* Pinned artifacts (lib/adapters/fetch.c, libcurl) */
struct nf_fetch_opts {
	const char *cache;          /* CACHE: files under CACHE/artifacts/ */
	const char *mirror;         /* URL prefix or directory: the url's
				     * file name is looked up there instead */
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

/* ---- end of image build ---- */

/* ---- pack, manifests, signatures (lib/pack.c, manifest.c, unpack.c;
 * lib/adapters/archive.c, crypto.c) ---- */

/* Streaming SHA-256 (OpenSSL EVP) */
struct nf_sha256;
int nf_sha256_new(struct nf_sha256 **out);
void nf_sha256_update(struct nf_sha256 *h, const void *buf, size_t len);
void nf_sha256_final_hex(struct nf_sha256 *h, char out[NF_SHA256_HEX]);
void nf_sha256_free(struct nf_sha256 *h);
/* sha256 of an open file's remaining content, capped at `max` bytes */
int nf_sha256_fd(struct nf_ctx *ctx, int fd, const char *name,
		 char out[NF_SHA256_HEX], unsigned long long *size);

/* One archive entry, independent of libarchive */
struct nf_aentry {
	const char *path;
	mode_t mode;                  /* type and permission bits */
	unsigned long uid, gid;
	long long size;
	long long mtime;
	unsigned long long ino;
	unsigned nlink;
	unsigned long rdev_major, rdev_minor;
	const char *symlink;          /* symlink target */
	const char *hardlink;         /* hard link to an earlier entry */
	size_t nxattr;
	const char *const *xattr_names;
	const void *const *xattr_values;
	const size_t *xattr_sizes;
};

/* Writer: the (compressed) stream goes to write_fn */
struct nf_awriter;
typedef int (*nf_awrite_fn)(void *data, const void *buf, size_t len);
int nf_awriter_new(struct nf_ctx *ctx, int format, int compressor, int level,
		   int threads, nf_awrite_fn fn, void *data,
		   struct nf_awriter **out);
int nf_awriter_header(struct nf_awriter *w, const struct nf_aentry *e);
int nf_awriter_data(struct nf_awriter *w, const void *buf, size_t len);
/* Flushes and ends the archive; frees w */
int nf_awriter_close(struct nf_awriter *w);
void nf_awriter_free(struct nf_awriter *w);

/* Reader (tar or cpio, zstd/gzip/none, detected); entry strings borrow
 * until the next call */
struct nf_areader;
int nf_areader_open_fd(struct nf_ctx *ctx, int fd, struct nf_areader **out);
int nf_areader_open_mem(struct nf_ctx *ctx, const void *buf, size_t len,
			struct nf_areader **out);
/* 1: an entry, 0: end, < 0: error */
int nf_areader_next(struct nf_areader *r, struct nf_aentry *e);
/* Bytes of the current entry's content: > 0, 0 at its end, < 0 error */
ssize_t nf_areader_data(struct nf_areader *r, void *buf, size_t len);
void nf_areader_free(struct nf_areader *r);

#define NF_MANIFEST_MAX (512ULL << 20)
/* nf_manifest_parse's checks without keeping the entries: the top-level
 * members other than "entries" as an object (lib/manifest.c) */
int nf_manifest_scan(struct nf_ctx *ctx, const char *buf, size_t len,
		     json_t **out);
#define NF_XATTR_VALUE_MAX 65536
#define NF_XATTR_MAX 64

/* A detached CMS (PKCS#7) signer: a PEM private key (KEY, KLEN bytes)
 * and the PEM certificate at CERT, which must match; WHAT prefixes the
 * messages, KEYNAME and CERTNAME say where each came from */
struct nf_cms_signer;
int nf_cms_signer_load(struct nf_ctx *ctx, const char *what, const void *key,
		       size_t klen, const char *keyname, const char *cert,
		       const char *certname, struct nf_cms_signer **out);
void nf_cms_signer_free(struct nf_cms_signer *s);
/* DER SignedData over DATA: SHA-256, issuer and serial, no certificates
 * and no signed attributes (reproducible); *sig is malloc'd */
int nf_cms_sign_detached(struct nf_ctx *ctx, const struct nf_cms_signer *s,
			 const char *name, const void *data, size_t len,
			 uint8_t **sig, size_t *siglen);
/* Ed25519 signature in `sigpath` over buf (lib/adapters/crypto.c) */
int nf_sig_present(struct nf_ctx *ctx, const char *name, const char *sigpath);
int nf_verify_buf(struct nf_ctx *ctx, const char *name, const void *buf,
		  size_t len, const char *sigpath, const char *pubkey);

/* Remove a tree below dirfd without following symlinks */
int nf_rm_tree_at(int dirfd, const char *name);

/* ---- end of pack, manifests, signatures ---- */

/* ---- secrets: sealing, munge keys, enrollment (lib/secrets.c,
 * enroll.c; lib/adapters/crypto.c, curl.c) ---- */

#define NF_X25519_LEN 32
/* Largest plaintext a sealed box carries */
#define NF_SEAL_MAX (64 * 1024)
/* Overhead of a sealed box: magic, ephemeral public key, tag */
#define NF_SEAL_OVERHEAD (4 + NF_X25519_LEN + 16)

int nf_random_bytes(struct nf_ctx *ctx, void *buf, size_t len);
/* Wipe memory the compiler may not optimise away (OPENSSL_cleanse) */
void nf_wipe(void *buf, size_t len);
void nf_wipe_free(void *buf, size_t len);
int nf_x25519_keypair(struct nf_ctx *ctx, uint8_t priv[NF_X25519_LEN],
		      uint8_t pub[NF_X25519_LEN]);
/* Seal `pt` to `pub` under `aad` (X25519 + HKDF-SHA256 +
 * ChaCha20-Poly1305); *blob is malloc'd */
int nf_seal(struct nf_ctx *ctx, const uint8_t pub[NF_X25519_LEN],
	    const void *aad, size_t aadlen, const void *pt, size_t len,
	    uint8_t **blob, size_t *bloblen);
/* Open a sealed box; NF_E_SIGNATURE when it was tampered with or sealed
 * for another key or AAD.  *pt is NUL-terminated (not counted in *len);
 * free it with nf_wipe_free(*pt, *len + 1) */
int nf_seal_open(struct nf_ctx *ctx, const uint8_t priv[NF_X25519_LEN],
		 const void *aad, size_t aadlen, const void *blob,
		 size_t bloblen, uint8_t **pt, size_t *len);
/* Standard base64 with padding; NULL on ENOMEM */
char *nf_b64_encode(const void *buf, size_t len);
/* Strict decoding, at most `max` bytes out: NF_E_PARSE, NF_E_LIMIT */
int nf_b64_decode(const char *s, size_t max, uint8_t **out, size_t *len);
int nf_hmac_sha256(const void *key, size_t keylen, const void *data,
		   size_t len, uint8_t out[32]);
/* Constant-time equality */
int nf_memeq_ct(const void *a, const void *b, size_t len);

/* Write a secret below an open root: nf_root_write with parents created
 * and the file on disk before it returns (the file is never readable by
 * others, not even as the temporary file) */
int nf_secret_write_at(struct nf_ctx *ctx, int rootfd, const char *rel,
		       const void *buf, size_t len, unsigned mode, long uid,
		       long gid);
/* A user's uid/gid from ROOT/etc/passwd (root "/" or NULL: the host's) */
int nf_root_user(struct nf_ctx *ctx, const char *root, const char *user,
		 long *uid, long *gid);
/* Read a secret file (at most max bytes) into a buffer that is wiped on
 * every path; the file must not be readable by group or others */
int nf_secret_read(struct nf_ctx *ctx, const char *path, size_t max,
		   uint8_t **buf, size_t *len);
/* Where the munge facet wants the node's key (lib/facets/munge.c): the
 * profile's munge.key_path, owner and mode, or /etc/munge/munge.key,
 * munge, 0400.  `sec`: a resolved profile's munge section, or NULL */
const char *nf_munge_key_path(const json_t *sec);
const char *nf_munge_key_owner(const json_t *sec);
unsigned nf_munge_key_mode(const json_t *sec);
/* The fabric manager's unit when the role runs one
 * (lib/facets/fabric_manager.c: enabled on NVSwitch GPUs), else NULL */
const char *nf_fabric_manager_unit(const json_t *prof);
/* nvidia-persistenced when the role's GPUs want persistence mode
 * (lib/facets/gpu.c enables it), else NULL */
const char *nf_gpu_persistence_unit(const json_t *prof);
/* The directory that the users of an enroot path setting share
 * (lib/facets/containers.c): the components before the first one enroot
 * expands per user ($(id -u), ${HOME}, ...), into out.  Returns 1 when it
 * is the parent of per-user directories, 2 when it is the path itself
 * (nothing expanded), 0 when there is none (the path starts with an
 * expansion), -ENAMETOOLONG */
#define NF_ENROOT_DIR_MAX 256
int nf_enroot_shared_dir(const char *v, char *out, size_t sz);

/* HTTP POST of a JSON body (libcurl); `bind`: local address or NULL.
 * The response body is capped at `max` bytes */
int nf_http_post(struct nf_ctx *ctx, const char *url, const char *bind,
		 const char *body, size_t len, size_t max, long timeout_s,
		 char **resp, size_t *resplen, long *status);

/* ---- end of secrets ---- */
/* ---- disks, EFI, install (lib/install.c; lib/adapters/blkid.c, efi.c)
 * ---- */

/* <sysroot> + the formatted path; caller frees */
char *nf_sr_path(const struct nf_ctx *ctx, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* A small /sys or /proc attribute under the sysroot, whitespace-trimmed;
 * NULL when absent or empty; caller frees */
char *nf_sr_read_attr(const struct nf_ctx *ctx, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Parse a Boot#### load option (the variable's data, without the
 * attributes); for the fuzz target */
int nf_efi_loadopt_parse(struct nf_ctx *ctx, const char *name,
			 const uint8_t *data, size_t len,
			 struct nf_efi_entry *e);
/* The mount holding clean absolute path `want` in mountinfo text `buf`
 * (modified in place); lib/mounts.c */
int nf_mountinfo_lookup(struct nf_ctx *ctx, char *buf, const char *want,
			struct nf_mount_info *out);

/* ---- boot server parsers (lib/adapters/http.c), exposed for tests and
 * fuzzing ---- */
/* A request path made of plain names: no "..", no dot files, no empty
 * segments, a small alphabet, at most 1024 bytes */
int nf_http_safe_path(const char *url);
/* One "bytes=" range against size: 0 ok, -1 ignore the header (serve the
 * whole file), -2 unsatisfiable */
int nf_http_parse_range(const char *h, uint64_t size, uint64_t *off,
			uint64_t *len);
/* NULL when v is an acceptable verdict for node `name`, else why not,
 * naming the values (written into buf) */
const char *nf_verdict_check(const json_t *v, const char *name, char *buf,
			     size_t sz);
/* s as an error message may quote it: at most 64 bytes, anything but
 * printable ASCII as '?' */
void nf_quote_value(const char *s, char *out, size_t sz);

/* ---- verifier (lib/verify.c) ---- */

/* The verifier's checks.
 * A facet's checks: a table of nf_check_def.  Each check function fills the
 * running check (expected, seen, remedy) and returns its verdict.  Checks
 * flagged NF_CHECK_PROBE may block (exec, sockets, NVML): they run in a
 * worker thread with a deadline and are abandoned, reported `hung`, when
 * they pass it. */
enum nf_check_flags {
	NF_CHECK_STATIC = 1 << 0, /* decidable on an unbooted image root */
	NF_CHECK_PROBE = 1 << 1,  /* may block: runs with a deadline */
};

struct nf_vcheck;

struct nf_check_def {
	const char *id;       /* "munge.key.mode" */
	const char *summary;
	const char *deps;     /* space-separated ids of checks it needs */
	unsigned flags;
	unsigned budget_ms;   /* 0: the default (2000 ms) */
	int (*fn)(struct nf_vcheck *c, const json_t *section);
	/* space-separated ids of checks whose failure also makes this one
	 * fail: such a failure is reported as their consequence (its cause
	 * set, not among the root causes) */
	const char *explained_by;
	/* what the check needs that not every machine has: "gpu",
	 * "nvswitch", "ib", "nvme", "disk" (an installed system disk),
	 * "hugepage-memory", "ntp" (the site's time servers), "cluster-key"
	 * (the cluster's munge key), "controller" (a cluster around it);
	 * NULL: nothing.  'nodeforge ci --boot' skips by environment what its
	 * VM lacks. */
	const char *needs;
};

struct nf_checkset {
	const struct nf_check_def *v;
	size_t n;
};

#define NF_CHECKSET(tbl) { (tbl), NF_ARRAY_SIZE(tbl) }

/* Where a path is read from: the node's files (--root) or /proc and /sys
 * (--sysroot) */
enum nf_vwhere { NF_VROOT = 0, NF_VSYS = 1 };

/* Result helpers; each returns the verdict so checks can `return` them */
void nf_v_expect(struct nf_vcheck *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void nf_v_seen(struct nf_vcheck *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void nf_v_remedy(struct nf_vcheck *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int nf_v_skip(struct nf_vcheck *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* The resolved profile (whole document) and the check's mode */
const json_t *nf_v_profile(const struct nf_vcheck *c);
/* the profile's role name, for remedies ("ROLE" when it has none) */
const char *nf_v_role(const struct nf_vcheck *c);
/* did this node boot from the network (nodeforge.server= on its
 * /proc/cmdline): its kernel arguments come from 'nodeforge pxe' */
int nf_v_netboot(struct nf_vcheck *c);
bool nf_v_static(const struct nf_vcheck *c);
/* The node's name, as its report names it: nodeforge.node= of the
 * kernel command line, else the short host name; caller frees */
char *nf_v_node(const struct nf_vcheck *c);
/* The running check's id */
const char *nf_v_id(const struct nf_vcheck *c);
/* Names in a directory of the node (NF_VROOT) or sysroot, sorted; at most
 * `max`; returns the count or -errno */
int nf_v_list(struct nf_vcheck *c, int where, const char *dir, char ***names,
	      size_t max);

/* Read a file of the node (NF_VROOT) or of /proc, /sys (NF_VSYS); at most
 * `max` bytes; returns 0 or -errno.  Paths never escape their root. */
int nf_v_read(struct nf_vcheck *c, int where, const char *path, size_t max,
	      char **buf, size_t *len);
int nf_v_stat(struct nf_vcheck *c, int where, const char *path,
	      struct stat *st);
/* Full host path of `path` under the root or sysroot */
const char *nf_v_path(struct nf_vcheck *c, int where, const char *path,
		      char *buf, size_t sz);
/* Run a program with the check's deadline; stdout+stderr captured (64 KiB
 * cap).  Returns 0 (exit status in *status), NF_E_TIMEOUT, or -errno */
int nf_v_exec(struct nf_vcheck *c, const char *const *argv, const char *in,
	      char **out, int *status);
/* nf_v_exec() as an unprivileged user (nobody, uid and gid 65534, no
 * supplementary groups, its own environment, through util-linux setpriv)
 * when the verifier is root, so a probe cannot leave root-owned files
 * behind; fixtures answer for argv itself and log the setpriv line */
#define NF_V_NOBODY 65534
int nf_v_exec_unprivileged(struct nf_vcheck *c, const char *const *argv,
			   char **out, int *status);
/* Shared answers between checks of one run (borrowed on get; put steals) */
const json_t *nf_v_cache_get(struct nf_vcheck *c, const char *key);
void nf_v_cache_put(struct nf_vcheck *c, const char *key, json_t *val);

/* Hardware answers (the ops table; tests replace it with a fixture) */
struct nf_timex {
	bool synced;
	double offset_ms;
	double maxerror_ms;
};
int nf_v_nvml(struct nf_vcheck *c, json_t **snapshot);
int nf_v_adjtimex(struct nf_vcheck *c, struct nf_timex *t);
int nf_v_cgroup2(struct nf_vcheck *c, const char *path);
/* `systemctl is-active UNIT`: 1 active, 0 not, <0 error */
int nf_v_service_active(struct nf_vcheck *c, const char *unit, char *state,
			size_t statesz);

/* Small parsing helpers shared by the facets */
/* Value of `key` in a "key = value" / "Key=Value" / "key value" text, last
 * one wins; case-insensitive key; NULL when absent.  Caller frees. */
char *nf_v_conf_get(const char *text, const char *key, const char *seps);
/* The profile value as a string for comparing with a config file */
int nf_v_json_str(const json_t *v, char *buf, size_t sz);

/* ---- image CI (lib/ci.c) ---- */
/* Installed Package -> Version of a dpkg status file (NUL-terminated) */
json_t *nf_ci_dpkg_packages(const char *text);
/* A "StoragePass=" line with a value in buf */
int nf_ci_has_storagepass(const char *buf, size_t len);
/* ---- end of image CI ---- */

/* ---- storage checks: disks and EFI from the verifier (lib/verify.c,
 * lib/adapters/blkid.c, lib/diskrule.c, lib/facets/storage.c) ---- */
/* A context whose sysroot is the run's, for library calls from a check
 * (nf_mount_find, nf_disk_scan_hw, nf_efi_open): the live node and a
 * fixture tree go through the same code.  Owned by the check; NULL on
 * ENOMEM; its nf_errmsg() holds the last library error */
struct nf_ctx *nf_v_ctx(struct nf_vcheck *c);
/* What <sysroot>/sys/block says about each disk (size, model, transport,
 * rotational, removable), without opening the devices: contents are not
 * probed (probe_error says so), so a failing disk cannot block a check */
int nf_disk_scan_hw(struct nf_ctx *ctx, struct nf_disks *out);
/* Drop the terms about a disk's contents (empty, pttype, fstype, label)
 * from a rule: they describe the disk before provisioning formats it.
 * Returns how many were dropped; their keys go to `dropped` */
int nf_diskrule_hardware_only(struct nf_diskrule *r, char *dropped,
			      size_t sz);
/* ---- end of storage checks ---- */

/* ---- gres render (lib/gres.c) ---- */
#define NF_PCI_ADDR_LEN 24     /* "0000:18:00.0" (VMD: 5-digit domain) */
#define NF_GRES_MAX_GPUS 64
#define NF_GRES_MAX_CPUS 8192
#define NF_GRES_CPULIST_MAX 4096

/* A PCI address in the kernel's form (domain:bus:dev.fn, lower-case hex,
 * 4-digit domain) from NVML's "00000000:18:00.0" or the kernel's own */
int nf_pci_addr_norm(const char *s, char out[NF_PCI_ADDR_LEN]);

/* One GPU of the node */
struct nf_gres_gpu {
	int minor;                            /* /dev/nvidiaN */
	char bus_id[NF_PCI_ADDR_LEN];
	char cpulist[NF_GRES_CPULIST_MAX];    /* its local_cpulist */
};

/* The node's GPUs, ordered by minor, and the NVLinks between them */
struct nf_gres_topo {
	size_t n;
	struct nf_gres_gpu gpu[NF_GRES_MAX_GPUS];
	int nvlink_known;                     /* NVML gave NVLink data */
	unsigned links[NF_GRES_MAX_GPUS][NF_GRES_MAX_GPUS]; /* i -> j */
};

/* "Device Minor:" and "Bus Location:" of a
 * /proc/driver/nvidia/gpus/BUS/information file */
int nf_gres_parse_information(const char *text, int *minor,
			      char bus_id[NF_PCI_ADDR_LEN]);
/* gres.auto.json: an array of gres objects {name, type, count, file,
 * cores, links}; validated, at most 64 KiB */
int nf_gres_auto_parse(struct nf_ctx *ctx, const char *buf, size_t len,
		       json_t **out);
/* NVLink counts between the topology's GPUs from an NVML snapshot (its
 * gpus[].pci_bus_id and nvlink_remote[]): a link to a peer GPU counts
 * for that peer, a link to an NVSwitch for every GPU on that switch */
int nf_gres_topo_links(struct nf_ctx *ctx, struct nf_gres_topo *t,
		       const json_t *nvml);
/* The gres.conf lines of one gres.auto.json entry: one per GPU it names
 * (its File= list, else every GPU), Cores= folded onto `ncores` cores,
 * Links= over all the node's GPUs (omitted when no GPU has an NVLink).
 * `nvlink_required`: refuse when there is no NVLink data */
int nf_gres_entry_lines(struct nf_ctx *ctx, const json_t *entry,
			const struct nf_gres_topo *t, unsigned ncores,
			int nvlink_required, struct nf_buf *out);
/* Replace the rendered block of gres.conf text `old` with `lines`;
 * the result in *out (caller frees) */
int nf_gres_merge(struct nf_ctx *ctx, const char *old, const char *lines,
		  char **out);

/* The NVML snapshot (libnvidia-ml via dlopen), or a hardware-ops
 * fixture's "nvml" object; NF_E_NOHW when there is none, with *snap
 * {"error", "missing": "software" (no libnvidia-ml) or "driver" (NVML
 * there, its kernel module not loaded)} when it can say why (the caller
 * frees it either way) */
int nf_nvml_snapshot(const json_t *fixture, json_t **snap);
/* Load a hardware-ops fixture (fixture.json, size-capped) */
int nf_hw_fixture_load(struct nf_ctx *ctx, const char *path, json_t **out);
/* ---- end of gres render ---- */

/* ---- The cluster of an inventory (lib/cluster.c) ----
 * Where every node keeps the cluster part of slurm.conf */
#define NF_CLUSTER_CONF "/etc/slurm/cluster.conf"
/*
 * {"cluster", "controllers": [{name, ip}] (inventory order), "dbd": {name,
 * ip} or null, "hosts": [{name, ip}], "roles": [{"role", "nodes": hostlist,
 * "node", "gres", "partitions", "conf": the role's slurm.conf settings,
 * "slurmd", "slurmctld", "slurmdbd"}] sorted by role}.  Fails when no role
 * runs slurmctld, when roles disagree on slurm.conf, or when the site names
 * controllers that are not the inventory's */
int nf_cluster_load(struct nf_ctx *ctx, const char *inventory,
		    const struct nf_site *site, json_t **out);
/* nodeforge ci, static stage: the image's own programs parse the files
 * nodeforge wrote into the unpacked `root` (lib/ci_daemons.c).  *out:
 * [{"id": "slurm.conf", "verdict": enum nf_verdict, "message"}]; a
 * cluster.conf is written into `root` first (the inventory's, or one
 * stand-in node of the role) */
int nf_ci_daemons(struct nf_ctx *ctx, const char *root, const char *inventory,
		  const struct nf_site *site, json_t **out);
/* The cluster part of slurm.conf (/etc/slurm/cluster.conf) */
int nf_cluster_slurm_conf(struct nf_ctx *ctx, const json_t *cluster,
			  struct nf_buf *b);
/* The /etc/hosts block of every node of the cluster */
int nf_cluster_hosts(const json_t *cluster, const char *domain, struct nf_buf *b);
/* nf_apply_all() that also writes the cluster part of slurm.conf (its
 * controllers, nodes and partitions) from CLUSTER (NULL: the image gets
 * it at boot from the boot server) */
int nf_apply_all_cluster(struct nf_ctx *ctx, int rootfd,
			 const struct nf_profile *p, const json_t *cluster);
/* ---- end of Slurm nodes ---- */

/* ---- zstd stream (lib/adapters/zstd.c) ---- */
/* Multi-threaded zstd (threads <= 0: one per CPU; the bytes do not depend
 * on it); compressed output goes to fn */
struct nf_zstd;
int nf_zstd_new(struct nf_ctx *ctx, int level, int threads, nf_awrite_fn fn,
		void *data, struct nf_zstd **out);
int nf_zstd_write(struct nf_zstd *z, const void *buf, size_t len);
/* Room for the next bytes of the stream (never empty): content read into
 * it and then passed to nf_zstd_write() is not copied again */
void *nf_zstd_buffer(struct nf_zstd *z, size_t *len);
/* Ends the frame and flushes it; frees z */
int nf_zstd_close(struct nf_zstd *z);
void nf_zstd_free(struct nf_zstd *z);
/* The writer's nf_zstd_buffer(), or NULL when it has none (not zstd): for
 * content passed to nf_awriter_data() unchanged */
void *nf_awriter_buffer(struct nf_awriter *w, size_t *len);
/* ---- end of zstd stream ---- */

#endif
