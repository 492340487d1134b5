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

/* the library's JSON (nodeforge.h declares json_t alone) */
#include <jansson.h>

#define NF_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* The facets (lib/facets/registry.c), as the parts below them reach
 * them: through the context, never by name */
struct nf_facet;
struct nf_facet_table {
	const struct nf_facet *const *v;
	size_t n;
};

struct nf_ctx {
	nf_log_fn log_fn;
	void *log_data;
	int log_level;
	char *profiles_dir;
	char *sysroot;
	const struct nf_facet_table *facets; /* set by nf_ctx_new */
	char errmsg[1024];
	int errcode;            /* the code errmsg was recorded with */
	unsigned errseq;        /* errmsg's number (0: none) */
	unsigned nerr;          /* messages recorded so far */
	/* the message errmsg replaced, for nf_err_drop */
	char prevmsg[1024];
	int prevcode;
	unsigned prevseq;
};

/* A context without the facet table, for the library's own scratch
 * contexts (a check's file reads): nf_ctx_new, which the facets define,
 * is this and the table */
int nf_ctx_alloc(struct nf_ctx **out);
/* The context's facet table; NF_E_USAGE, with a message, for a context
 * that has none: a profile is never resolved or verified with no facets */
int nf_ctx_facets(struct nf_ctx *ctx, const struct nf_facet_table **out);

/* Record a message for the caller and return `code` */
int nf_fail(struct nf_ctx *ctx, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A failure the caller handles (an optional file, a user the image lacks
 * yet, a probe whose "no" is an answer) leaves no message behind for a
 * later failure to borrow: take a mark before the call, and drop what was
 * recorded since when it is handled.  The message before the mark (the
 * failure being reported, when a cleanup probes) comes back */
unsigned nf_err_mark(const struct nf_ctx *ctx);
void nf_err_drop(struct nf_ctx *ctx, unsigned mark);
/* 1 when a message was recorded since the mark */
bool nf_err_since(const struct nf_ctx *ctx, unsigned mark);
void nf_log(struct nf_ctx *ctx, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Checked allocation helpers: they return NULL only on ENOMEM */
char *nf_strdup(const char *s);
char *nf_asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The kernel command line (lib/cmdline.c), split as the kernel splits
 * it: white space outside double quotes separates parameters, each `key`
 * or `key=value`; one pair of quotes is removed ("k=\"a b\"" and
 * "\"k=a b\"" are both k, "a b"); a bare `--` ends them */
struct nf_karg {
	char *key;
	char *val;              /* NULL: `key` without '=' */
};
struct nf_cmdline {
	struct nf_karg *v;
	size_t n, cap;
	char *buf;
};
/* Split LEN bytes of TEXT (up to a NUL, up to a `--`); NF_E_LIMIT past
 * 64 KiB or 4096 parameters */
int nf_cmdline_new(const char *text, size_t len, struct nf_cmdline **out);
void nf_cmdline_free(struct nf_cmdline *c);
/* The value of the last KEY=VALUE (borrowed), or NULL */
const char *nf_cmdline_value(const struct nf_cmdline *c, const char *key);
/* SYSROOT/proc/cmdline, split: every reader of the running kernel's
 * command line (the verifier's through nf_v_cmdline) */
int nf_cmdline_read(struct nf_ctx *ctx, const char *sysroot, struct nf_cmdline **out);
/* The value of KEY in SYSROOT/proc/cmdline (a copy), -ENOENT without
 * it (nf_cmdline_get: the context's sysroot) */
int nf_cmdline_get_at(struct nf_ctx *ctx, const char *sysroot, const char *key, char **out);
/* 1 when the one parameter ARG ("key=value", "flag", "k=\"a b\"") is
 * one of C's: the same key ('-' and '_' alike, as the kernel compares
 * names) and the same value, once unquoted */
int nf_cmdline_has(const struct nf_cmdline *c, const char *arg);
/* The same for a parameter already split */
int nf_cmdline_has_karg(const struct nf_cmdline *c, const struct nf_karg *a);
/* A parameter as it is written, its value quoted when it would not read
 * back whole without */
void nf_karg_format(const struct nf_karg *a, char *out, size_t sz);
/* The running system's /proc, /sys and /dev under a sysroot
 * (lib/sysroot.c): every path --sysroot moves is built by these, none by
 * hand.  SYSROOT "" or NULL is the system itself; the path is absolute
 * ("/proc/cmdline").  The allocating ones return NULL on ENOMEM; caller
 * frees */
char *nf_sysroot_path(const char *sysroot, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* The same into BUF (SZ bytes, cut short as snprintf does); returns BUF */
const char *nf_sysroot_path_buf(const char *sysroot, char *buf, size_t sz,
				const char *path);
/* Under the context's sysroot (nf_ctx_set_sysroot) */
char *nf_sr_path(const struct nf_ctx *ctx, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* A small /sys or /proc attribute under the context's sysroot,
 * whitespace-trimmed; NULL when absent or empty */
char *nf_sr_read_attr(const struct nf_ctx *ctx, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Read a whole file, at most `max` bytes (NF_E_LIMIT above); NUL-terminated */
int nf_read_file(struct nf_ctx *ctx, const char *path, size_t max, char **buf,
		 size_t *len);
/* The same for a file that may be absent: -ENOENT then records nothing */
int nf_read_optional(struct nf_ctx *ctx, const char *path, size_t max,
		     char **buf, size_t *len);

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
/* The same, telling WATCH of the child's process group while it may be
 * alive: watch(arg, pgid, 1) once started, watch(arg, pgid, 0) once it
 * was reaped (so that what abandons the caller can kill the group) */
int nf_spawn_capture_watched(const char *const *argv, const char *in,
			     const struct timespec *deadline,
			     void (*watch)(void *arg, pid_t pgid, int alive),
			     void *arg, char **out, int *status);

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

/* An flock on `path` (created 0600 when missing, never through a
 * symlink) for processes that share a directory: 0 when *fd holds it;
 * with `wait` 0, 1 when another holds it (*fd stays open: call again
 * with `wait` 1 to wait for it); < 0 on an error, said, *fd closed. */
int nf_lock_path(struct nf_ctx *ctx, const char *path, int wait, int *fd);

/* ---- shared helpers: text buffers, file descriptors, roots, templates */
/* Text buffer for rendering config files; grows up to a hard cap */
struct nf_buf {
	char *s;
	size_t len, cap;
	int err;
};
void nf_buf_printf(struct nf_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void nf_buf_free(struct nf_buf *b);
/* S as an error message may quote it: at most 64 bytes, anything but
 * printable ASCII as '?' */
void nf_quote_value(const char *s, char *out, size_t sz);

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
/* Walking a tree (lib/walk.c), the one walker: each directory opened
 * from its parent's fd with O_NOFOLLOW (a symlink is an entry, never
 * followed), its names sorted bytewise before any is visited (a directory
 * is followed directly by what it holds: "a", "a/b", "a-c").
 * NF_WALK_DEPTH is the one depth limit of every walk, and of what
 * unpacking creates: what holds entries more than NF_WALK_DEPTH
 * directories below the top is an error, like a directory that cannot
 * be opened or read. */
#define NF_WALK_DEPTH 256
/* enter() returns it: walk on, but not into this directory */
#define NF_WALK_SKIP 1
/* One entry: PATH is the top's shown name, '/' and REL (REL alone when
 * the top is shown as ""); NAME is its last component, in the directory
 * open at DFD (for the *at calls); DEPTH is 1 for the top's entries.
 * In error(), ST is NULL when the entry could not be stat'ed, and the
 * top itself (when it cannot be read) has REL and NAME "", DFD -1. */
struct nf_walk_entry {
	const char *path;
	const char *rel;
	const char *name;
	int dfd;
	int depth;
	const struct stat *st;
};
struct nf_walk_ops {
	/* every entry, a directory before what it holds: 0 walks on,
	 * NF_WALK_SKIP does not descend, anything else stops the walk and
	 * is returned */
	int (*enter)(void *data, const struct nf_walk_entry *e);
	/* optional: a directory after what it holds (also when error() let
	 * the walk go on past it) */
	int (*leave)(void *data, const struct nf_walk_entry *e);
	/* optional: E could not be walked (ERR: -errno or NF_E_LIMIT; WHY
	 * says it without the path; nf_errmsg has "cannot read 'PATH':
	 * WHY"): 0 walks on past it, anything else stops the walk and is
	 * returned.  Without it, the first error stops the walk. */
	int (*error)(void *data, const struct nf_walk_entry *e, int err,
		     const char *why);
};
/* Every entry below the directory open at DFD (not closed), shown as
 * SHOWN in paths and messages */
int nf_walk_fd(struct nf_ctx *ctx, int dfd, const char *shown,
	       const struct nf_walk_ops *ops, void *data);
/* The same below DIR (which may be a symlink: the caller names it) */
int nf_walk_tree(struct nf_ctx *ctx, const char *dir,
		 const struct nf_walk_ops *ops, void *data);
/* Open REL inside the image root ROOTFD for reading (flags as open(2)):
 * every symlink, absolute or with "..", resolves inside the root
 * (openat2 RESOLVE_IN_ROOT); the fd, or -errno */
int nf_openat_root(int rootfd, const char *rel, int flags);

/* Templates (lib/template.c): {{name}} replaced by LOOKUP's value (0, or
 * non-zero for an unknown name), \{{ a literal {{; an unknown name or an
 * unterminated {{ is an error at FILE:LINE, the names KNOWN listed */
typedef int (*nf_template_lookup)(void *data, const char *name, char *out,
				  size_t outsz);
int nf_template_render(struct nf_ctx *ctx, const char *file, const char *in,
		       nf_template_lookup lookup, void *data, const char *known,
		       struct nf_buf *out);
/* libcurl's global set-up, once per process (lib/adapters/curl.c): 0, or
 * -ENOMEM when libcurl cannot start */
int nf_curl_init(void);

/* By subsystem (lib/internal/); internal/ci.h, storage.h and gres.h are
 * included by the files that use them */
#include "internal/profile.h"
#include "internal/build.h"
#include "internal/pack.h"
#include "internal/secrets.h"
#include "internal/boot.h"
#include "internal/verify.h"

#endif
