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

#include <jansson.h>

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
/* Writes the JSON document (JSON mode); returns 0 or -errno */
int nf_emit_end(struct nf_emit *e);

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

/* Names of the roles (profiles that set `role: true`), sorted */
int nf_profile_list(struct nf_ctx *ctx, char ***names, size_t *n);
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
/* ============================================ boot: inventory, pxe, serve */

/* MAC addresses: "52:54:00:ab:cd:ef" (':' or '-' separated, any case);
 * multicast and all-zero addresses are refused */
int nf_mac_parse(const char *s, uint8_t mac[6]);
/* Lower-case hex with `sep` between bytes; out holds 18 bytes */
void nf_mac_format(const uint8_t mac[6], char sep, char out[18]);
/* IPv4 dotted quad, strict: four decimal parts 0-255, no leading zeros;
 * host byte order */
int nf_ipv4_parse(const char *s, uint32_t *ip);
void nf_ipv4_format(uint32_t ip, char out[16]);
/* "10.0.0.0/16"; host bits must be zero */
int nf_cidr_parse(const char *s, uint32_t *net, unsigned *prefix);
int nf_cidr_contains(uint32_t net, unsigned prefix, uint32_t ip);

/* One machine of the inventory (racks.yaml), after range expansion */
struct nf_node {
	char *name;
	char *role;
	char *rack;         /* "" when not given */
	uint8_t mac[6];
	uint32_t ip;        /* host byte order */
	uint32_t bmc;       /* BMC address; 0 when not given */
	const char *file;   /* where the node was declared (borrowed) */
	unsigned line, col;
};

struct nf_inventory;

#define NF_INVENTORY_MAX_NODES 100000

/*
 * Load and validate racks.yaml.  Every problem is appended to diags with
 * file:line:col; the call fails (NF_E_PARSE / NF_E_INVALID) when any error
 * was found.  Roles are checked against the profiles directory of ctx;
 * addresses against the site's provisioning network when site is given.
 */
int nf_inventory_load(struct nf_ctx *ctx, const char *path,
		      const struct nf_site *site, struct nf_inventory **out,
		      struct nf_diags *diags);
void nf_inventory_free(struct nf_inventory *inv);
const char *nf_inventory_path(const struct nf_inventory *inv);
size_t nf_inventory_count(const struct nf_inventory *inv);
const struct nf_node *nf_inventory_node(const struct nf_inventory *inv,
					size_t i);
const struct nf_node *nf_inventory_find(const struct nf_inventory *inv,
					const char *name);
/* Check every node's IP against a CIDR (diags at the node's `ip`) */
int nf_inventory_check_network(struct nf_ctx *ctx,
			       const struct nf_inventory *inv,
			       const char *cidr, struct nf_diags *diags);

/* The boot tree (lib/pxe.c; layout in docs/formats.md) */
struct nf_pxe_opts {
	const struct nf_inventory *inv;
	const struct nf_site *site;    /* may be NULL */
	const char *out_dir;           /* the tree, created when missing */
	const char *out_abs;           /* its absolute path (dnsmasq, nginx) */
	const char *server_url;        /* http://HOST[:PORT], no trailing / */
	const char *images_dir;        /* build output: DIR/ROLE/ROLE.current */
	const char *kickstart_dir;     /* ROLE.ks.tmpl / default.ks.tmpl;
					* NULL: no kickstarts */
	const char *network;           /* provisioning CIDR; NULL: the site's */
	const char *api_upstream;      /* nginx proxy_pass for /api/; or NULL */
	const char *ipxe_dir;          /* undionly.kpxe, ipxe.efi for tftp/;
					* NULL or missing files: not copied */
	const json_t *role_args;       /* role -> kernel arguments string */
	const char *cluster_conf;      /* nf_cluster_render(): cluster/slurm.conf */
	const char *cluster_hosts;     /* and cluster/hosts; NULL: none */
	int strict;                    /* a boot file dnsmasq.conf names that
					* the tree lacks is an error, not a
					* warning (nf_pxe_stats.missing) */
};

/* A firmware boot file that dnsmasq.conf names and the tree lacks */
struct nf_pxe_missing {
	const char *path;    /* below the tree: tftp/undionly.kpxe */
	const char *client;  /* who loads it: "BIOS PXE clients" */
	const char *remedy;  /* how to provide it */
};

struct nf_pxe_stats {
	size_t files;      /* files the tree holds for this inventory */
	size_t written;    /* of which new or changed */
	size_t unchanged;
	size_t removed;    /* stale per-MAC and per-role files */
	size_t images;     /* image files placed into images/ */
	const struct nf_pxe_missing *missing[4]; /* static entries */
	size_t nmissing;
};

int nf_pxe_render(struct nf_ctx *ctx, const struct nf_pxe_opts *o,
		  struct nf_pxe_stats *st);

/* The embedded boot server (lib/adapters/http.c) */
typedef void (*nf_access_log_fn)(void *userdata, const char *line);

struct nf_serve_opts {
	const char *tree;        /* boot tree rendered by nf_pxe_render() */
	const char *state_dir;   /* node states (docs/formats.md) */
	const char *listen;      /* "ADDR:PORT"; port 0 picks a free one */
	unsigned threads;        /* worker threads; 0: one per CPU */
	nf_access_log_fn access_log; /* one line per request; may be NULL */
	void *log_data;
	struct nf_enroll *enroll;  /* answers /api/v1/enroll and /rotate
				    * (lib/enroll.c); NULL: not served */
	/* Proxies whose X-Real-IP header names the client (IPv4 or IPv6
	 * addresses); a request from any other peer is judged by the peer's
	 * own address.  At most NF_SERVE_TRUSTED_MAX. */
	const char *const *trusted_proxies;
	size_t ntrusted_proxies;
};
#define NF_SERVE_TRUSTED_MAX 16

struct nf_server;

/* Start serving in background threads; returns once listening */
int nf_server_start(struct nf_ctx *ctx, const struct nf_serve_opts *o,
		    struct nf_server **out);
/* "http://ADDR:PORT" actually bound */
const char *nf_server_url(const struct nf_server *s);
/* Stop, flush pending state writes, free */
void nf_server_stop(struct nf_server *s);

/* HTTP client (lib/adapters/curl.c): bounded transfers to memory,
 * http/https only */
struct nf_http_req {
	const char *url;
	const void *body;          /* NULL: GET; else POST of body_len bytes */
	size_t body_len;
	const char *content_type;  /* of body */
	size_t max_bytes;          /* response cap (NF_E_LIMIT); 0: 1 MiB */
	long timeout_ms;           /* whole transfer; 0: 30 s */
	const char *const *headers;/* extra "Name: value" lines, NULL-ended */
};

/* *body is NUL-terminated, caller frees; HTTP status >= 400 fails with
 * NF_E_NETWORK (status still set when given) */
int nf_http_request(struct nf_ctx *ctx, const struct nf_http_req *rq,
		    char **body, size_t *len, long *status);
int nf_http_get(struct nf_ctx *ctx, const char *url, size_t max,
		long timeout_ms, char **body, size_t *len);

/* ============================================ end boot section */

/* ================================================ disks, EFI, install
 * (lib/diskrule.c, lib/install.c, lib/mounts.c; lib/adapters/blkid.c,
 * efi.c) */

/* One partition of a disk; sizes in bytes.  Strings may be NULL. */
struct nf_part {
	unsigned number;
	unsigned long long start;
	unsigned long long size;
	char *type;     /* GPT type GUID, or MBR type as "0x83" */
	char *uuid;     /* PARTUUID */
	char *name;     /* PARTLABEL */
	char *fstype;   /* filesystem found on it ("ext4", "vfat", ...) */
	char *label;
	char *fsuuid;
};

/* One block device or disk image file */
struct nf_disk {
	char *name;       /* "nvme0n1", or the image file's base name */
	char *path;       /* "/dev/nvme0n1", or the path given */
	unsigned long long size;
	char *model;
	char *transport;  /* nvme, sata, usb, virtio, scsi, mmc, file, unknown */
	int rotational;   /* 1, 0, -1 unknown */
	int removable;    /* 1, 0, -1 unknown */
	char *pttype;     /* "gpt", "dos", NULL: no partition table */
	char *ptuuid;
	char *fstype;     /* a filesystem on the whole disk */
	char *label;
	char *fsuuid;
	char *probe_error; /* why the contents could not be probed, or NULL */
	struct nf_part *parts;
	size_t nparts;
};

struct nf_disks {
	struct nf_disk *v;
	size_t n;
};

/* Block devices under <sysroot>/sys/block (whole disks with a device;
 * loop, ram, zram, dm and md are left out); contents are probed from
 * <sysroot>/dev/NAME, sorted by name */
int nf_disk_scan(struct nf_ctx *ctx, struct nf_disks *out);
/* Probe one block device or image file and append it to `out` */
int nf_disk_probe(struct nf_ctx *ctx, const char *path, struct nf_disks *out);
void nf_disks_free(struct nf_disks *d);
/* No partition table and no filesystem signature */
int nf_disk_is_empty(const struct nf_disk *d);

/* Disk selection rules ("transport=nvme,removable=0,empty,smallest"),
 * documented in docs/nodeforge-disk.md */
struct nf_diskrule;

int nf_diskrule_parse(struct nf_ctx *ctx, const char *text,
		      struct nf_diskrule **out);
void nf_diskrule_free(struct nf_diskrule *r);
int nf_diskrule_match(const struct nf_diskrule *r, const struct nf_disk *d);
/* The one disk the rule selects (index into d->v); NF_E_NOTFOUND when
 * none matches, NF_E_CONFLICT when several match and nothing breaks the
 * tie */
int nf_disk_pick(struct nf_ctx *ctx, const struct nf_diskrule *r,
		 const struct nf_disks *d, size_t *idx);

/* Where a path lives: the mount holding it, from
 * <sysroot>/proc/self/mountinfo */
struct nf_mount_info {
	char *mountpoint;
	char *source;     /* "/dev/nvme0n1p1" */
	char *fstype;
	char *root;       /* root of the mount within its filesystem */
	unsigned major, minor;
	char *disk;       /* whole disk name from sysfs ("nvme0n1"), or NULL */
};

int nf_mount_find(struct nf_ctx *ctx, const char *path,
		  struct nf_mount_info *out);
void nf_mount_info_clear(struct nf_mount_info *m);

/* EFI boot entries.  Variables are read from and written to
 * <sysroot>/sys/firmware/efi/efivars (or a directory given to
 * nf_efi_open_dir); without /sys/firmware/efi: NF_E_NOHW. */
struct nf_efi;

struct nf_efi_entry {
	unsigned num;       /* Boot#### */
	int active;
	uint32_t attributes; /* load option attributes */
	char *description;
	char *device_path;  /* text form */
	int network;        /* the device path boots from the network */
};

int nf_efi_open(struct nf_ctx *ctx, struct nf_efi **out);
int nf_efi_open_dir(struct nf_ctx *ctx, const char *dir, struct nf_efi **out);
void nf_efi_free(struct nf_efi *efi);
/* Entries sorted by number */
int nf_efi_entries(struct nf_efi *efi, struct nf_efi_entry **v, size_t *n);
void nf_efi_entries_free(struct nf_efi_entry *v, size_t n);
/* BootOrder; *n = 0 when absent */
int nf_efi_boot_order(struct nf_efi *efi, unsigned **v, size_t *n);
/* BootCurrent / BootNext: -1 when absent */
int nf_efi_boot_current(struct nf_efi *efi, int *num);
int nf_efi_boot_next(struct nf_efi *efi, int *num);
int nf_efi_set_boot_next(struct nf_efi *efi, unsigned num);
int nf_efi_set_boot_order(struct nf_efi *efi, const unsigned *v, size_t n);
/* "0003", "Boot0003", "pxe" (the first network entry in boot order) or
 * an exact description; the entry must exist */
int nf_efi_resolve(struct nf_efi *efi, const char *spec, unsigned *num);
/* Create a Boot#### entry for `loader` (a path on the ESP such as
 * "\\EFI\\BOOT\\BOOTX64.EFI") on GPT partition `partnum` of the disk,
 * at the partition's start/size (bytes) with its PARTUUID; returns its
 * number (the lowest free) */
int nf_efi_add(struct nf_efi *efi, const char *description, unsigned partnum,
	       unsigned long long part_start, unsigned long long part_size,
	       const char *partuuid, const char *loader, unsigned *num);
/* Parse "0003" / "Boot0003" */
int nf_efi_parse_num(const char *s, unsigned *num);

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
/* *yes = 1 when BootNext is set and names an active network entry (the
 * next reboot boots from the network); *num = that entry or -1 */
int nf_efi_next_boot_is_network(struct nf_efi *efi, int *yes, int *num);
/* Remove BootNext (no-op when absent) */
int nf_efi_clear_boot_next(struct nf_efi *efi);

/* Stateful install of a signed image onto a disk (lib/install.c):
 * verify, GPT (ESP + root), mkfs, unpack, fstab by UUID, GRUB for UEFI,
 * the installed manifest, EFI boot order.  docs/nodeforge-install.md */
struct nf_install_opts {
	const char *image;       /* archive; IMAGE.manifest.json (+ .sig) */
	const char *pubkey;      /* Ed25519 public key (PEM) */
	const char *disk;        /* a whole block device */
	int wipe;                /* allow erasing a disk that holds data */
	unsigned long long esp_size; /* bytes; 0: 512 MiB */
	const char *efivars;     /* EFI variables directory; NULL: the system's */
	int no_efi;              /* leave the boot variables alone */
	const char *label;       /* boot entry description; NULL: "nodeforge" */
	const char *kernel_args; /* appended to the kernel command line */
	/* Called at each step (may be NULL) */
	void (*progress)(void *data, const char *step);
	void *progress_data;
};

/* What install calls for the parts other modules own; tests may replace
 * them */
struct nf_install_ops {
	int (*verify)(struct nf_ctx *ctx, const char *manifest,
		      const char *pubkey);
	int (*unpack)(struct nf_ctx *ctx, const char *archive,
		      const char *dir);
};

extern const struct nf_install_ops nf_install_default_ops;

struct nf_install_result {
	char esp_dev[64], root_dev[64];
	char esp_uuid[64], root_uuid[64];
	int boot_entry;          /* Boot#### created, -1 when EFI was skipped */
};

int nf_install(struct nf_ctx *ctx, const struct nf_install_opts *o,
	       const struct nf_install_ops *ops, struct nf_install_result *res);
/* ============================================ secrets: munge keys, enrollment
 * Secrets reach a node at first boot through a sealed channel of the boot
 * server; images and boot trees carry only fingerprints (sha256:<hex>). */

#define NF_MUNGE_KEY_LEN 1024
#define NF_MUNGE_KEY_MIN 32
#define NF_MUNGE_KEY_MAX 1024
#define NF_PASSWORD_MAX 256
/* "sha256:" + 64 hex digits + NUL */
#define NF_FINGERPRINT_LEN 72

void nf_fingerprint(const void *buf, size_t len, char out[NF_FINGERPRINT_LEN]);
/* A new 1024-byte munge key from the CSPRNG at `path` (never replaces
 * one), mode 0400, owner `owner` (NULL: the caller); its fingerprint */
int nf_munge_key_new(struct nf_ctx *ctx, const char *path, const char *owner,
		     char fp[NF_FINGERPRINT_LEN]);
/* Fingerprint of a key file (refused when readable by group or others) */
int nf_munge_fingerprint_file(struct nf_ctx *ctx, const char *path,
			      char fp[NF_FINGERPRINT_LEN]);

/* For the verifier's munge facet: compare the key at `path` with the
 * site's fingerprint (profile.site.fingerprints.munge_key) and, after a
 * rotation, the previous one.  Returns a verdict (>= 0) or a negative
 * error; the message says what was seen, and the remedy text for the
 * verdict is nf_munge_fingerprint_remedy(verdict). */
enum nf_munge_fp_verdict {
	NF_MUNGE_FP_OK = 0,
	NF_MUNGE_FP_PREVIOUS,   /* still the key before the last rotation */
	NF_MUNGE_FP_OTHER,      /* a key the site does not know */
	NF_MUNGE_FP_MISSING,    /* no key file */
};
int nf_munge_fingerprint_verdict(struct nf_ctx *ctx, const char *path,
				 const char *expected, const char *previous,
				 char seen[NF_FINGERPRINT_LEN]);
const char *nf_munge_fingerprint_remedy(int verdict);

/* A password slurmdbd.conf can hold: printable, no '#', no edge spaces */
int nf_password_ok(const char *pw, size_t len);
/* Set StoragePass= in ROOT/rel (other lines kept), 0600, uid/gid (-1:
 * unchanged) */
int nf_slurmdbd_set_password(struct nf_ctx *ctx, int rootfd, const char *rel,
			     const char *pw, long uid, long gid);

/*
 * Enrollment, server side.  Transport-independent: the HTTP server hands
 * nf_enroll_claim() the peer address and the request body and sends back
 * the JSON and status it gets.  State (windows, claims, refusals) lives in
 * STATE_DIR/enroll.json (directory mode 0700, never under a served tree),
 * every change under a lock and published atomically.
 */
struct nf_enroll;

/* One machine the server may enroll (from the inventory) */
struct nf_enroll_node {
	const char *name;
	const char *role;
	const char *rack;        /* may be NULL */
	const char *mac;         /* "52:54:00:..."; NULL: not checked */
	uint32_t ip;             /* IPv4, host byte order */
};

struct nf_enroll_opts {
	const char *state_dir;
	const char *served_tree;   /* refuse a state dir inside it; or NULL */
	const char *munge_key;     /* path of the cluster's munge key */
	const char *slurmdbd_password;          /* path, or NULL */
	const char *slurmdbd_password_command;  /* or a command, or NULL */
};

#define NF_ENROLL_BODY_MAX 4096
#define NF_ENROLL_RESPONSE_MAX (128 * 1024)
#define NF_ENROLL_REFUSALS_KEPT 1000

int nf_enroll_new(struct nf_ctx *ctx, const struct nf_enroll_opts *o,
		  struct nf_enroll **out);
void nf_enroll_free(struct nf_enroll *e);
/* Nodes are copied */
int nf_enroll_add_node(struct nf_enroll *e, const struct nf_enroll_node *n);
/* Clock for tests (0: the real time) */
void nf_enroll_set_now(struct nf_enroll *e, long long now);
/* Arm windows of `seconds` for names; a claimed node is refused unless
 * `reenroll` (its claim is then dropped, and recorded) */
int nf_enroll_open(struct nf_enroll *e, char *const *names, size_t n,
		   long long seconds, int reenroll);
/* A claim: 200 with the sealed secrets, or 400/403/409/500 with
 * {"error", "reason"}; the refusal is recorded and logged at error level.
 * Returns 0 when a response was made (whatever its status) */
int nf_enroll_claim(struct nf_enroll *e, const char *peer_addr,
		    const void *body, size_t len, json_t **response,
		    int *http_status);
/* The state: {"windows": {...}, "claims": {...}, "refusals": [...]};
 * caller decrefs */
int nf_enroll_state(struct nf_enroll *e, json_t **out);

#define NF_ENROLL_STATE_DEFAULT "/var/lib/nodeforge"
/* An enrollment server for the site's secrets (secrets.munge_key.path,
 * secrets.slurmdbd_password.path|command) and the inventory's nodes;
 * state_dir NULL: the site's server.state_dir, else the default */
int nf_enroll_from_site(struct nf_ctx *ctx, const struct nf_site *site,
			const struct nf_inventory *inv, const char *state_dir,
			const char *served_tree, struct nf_enroll **out);
const char *nf_enroll_state_dir(const struct nf_enroll *e);

/* Enrollment, node side */
struct nf_enroll_client_opts {
	const char *server;     /* http://HOST[:PORT] */
	const char *node;
	const char *mac;        /* NULL: from the kernel cmdline or /sys */
	const char *root;       /* target root; NULL or "/": this system */
	const char *bind;       /* local address to send from; or NULL */
	long timeout_s;         /* per attempt */
	long retry_s;           /* keep retrying transport failures this long */
};

struct nf_enroll_result {
	char role[64];
	char munge_fingerprint[NF_FINGERPRINT_LEN];
	int slurmdbd_password;  /* 1 when StoragePass was written */
};

/* A claim in progress: the node's key pair and nonce */
struct nf_enroll_claim {
	uint8_t priv[32];
	uint8_t pub[32];
	uint8_t nonce[16];
	char node[256];
};

/* Make the key pair and the request body (caller frees *body) */
int nf_enroll_claim_make(struct nf_ctx *ctx, struct nf_enroll_claim *c,
			 const char *node, const char *mac, char **body);
/* Open a response to the claim and write the secrets below `root`; wipes
 * the private key whatever happens */
int nf_enroll_claim_accept(struct nf_ctx *ctx, struct nf_enroll_claim *c,
			   const char *resp, size_t len, const char *root,
			   struct nf_enroll_result *res);
/* The whole node side: claim, POST, accept */
int nf_enroll_client(struct nf_ctx *ctx, const struct nf_enroll_client_opts *o,
		     struct nf_enroll_result *res);
/* The cluster of an inventory (lib/cluster.c): the cluster part of
 * slurm.conf (controllers, nodes, partitions: /etc/slurm/cluster.conf) and
 * the /etc/hosts block of every node; checks that the inventory has a
 * controller, that the roles agree on slurm.conf and that the site's
 * controllers, if it names any, are the inventory's (-ENOENT: no node
 * runs slurmctld).  Caller frees both */
int nf_cluster_render(struct nf_ctx *ctx, const char *inventory,
		      const struct nf_site *site, char **slurm_conf, char **hosts);
/* On a node: fetch SERVER/cluster/slurm.conf and SERVER/cluster/hosts and
 * install them (ROOT/etc/slurm/cluster.conf; the marked block of
 * ROOT/etc/hosts), each atomically; `root` NULL is / */
int nf_cluster_fetch(struct nf_ctx *ctx, const char *server, const char *root);
/* `key=` of a kernel command line (sysroot-relative /proc/cmdline);
 * caller frees; -ENOENT when absent */
int nf_cmdline_get(struct nf_ctx *ctx, const char *key, char **out);

/* Whether a resolved profile's role runs a Slurm daemon (slurm.daemons:
 * slurmd, slurmctld, slurmdbd): the one answer every facet uses */
int nf_profile_runs(const json_t *prof, const char *daemon);

/* lib/distro.c: the distributions images are built for */
struct nf_distro {
	const char *name;   /* as in the site file: debian13, rocky9 */
	const char *suite;  /* mmdebstrap suite, or the EL release */
	int el;             /* dnf --installroot, EL paths */
};
const struct nf_distro *nf_distro_find(const char *name);
int nf_distro_is_el(const char *name);
/* The distros a site file (and a profile's distros:) may name: the ones
 * the shipped profiles are made and tested for, each in the table */
extern const char *const nf_site_distros[];

/*
 * Munge key rotation (lib/enroll.c; docs/nodeforge-keys.md).  The server
 * stages a new key in the state directory and a plan of groups
 * (controllers, then racks); nodes poll with nf_rotate_client and get the
 * new key sealed to a fresh key pair, proving they hold the current key;
 * a group switches when the driver lets it (nf_rotate_go).
 */
int nf_rotate_begin(struct nf_enroll *e, char fp[NF_FINGERPRINT_LEN]);
int nf_rotate_go(struct nf_enroll *e, int group);
int nf_rotate_finish(struct nf_enroll *e);
/* The plan (rotation.json); caller decrefs */
int nf_rotate_status(struct nf_enroll *e, json_t **out);
/* A verdict POST for `name`: 1 when the node is not enrolled (its
 * address is all there is), 0 when time (unix seconds, within 300 s of
 * the server's clock) and proof (base64 nf_verdict_proof) hold with the
 * cluster's munge key (or the other key of a rotation under way),
 * NF_E_SIGNATURE (message set) otherwise */
/* The context the enrollment state reports its errors in */
struct nf_ctx *nf_enroll_ctx(const struct nf_enroll *e);
int nf_enroll_verdict_auth(struct nf_enroll *e, const char *name,
			   const char *time, const char *proof,
			   const void *body, size_t len);
/* A node's poll: same contract as nf_enroll_claim */
int nf_rotate_poll(struct nf_enroll *e, const char *peer_addr,
		   const void *body, size_t len, json_t **response,
		   int *http_status);

struct nf_rotate_client_opts {
	const char *server;
	const char *node;
	const char *root;
	const char *bind;
	const char *restart_cmd;  /* run after switching; NULL: none */
	long timeout_s;           /* per request */
	long wait_s;              /* give up after this long */
	long poll_ms;             /* between polls */
};

struct nf_rotate_result {
	int staged;
	int switched;
	char munge_fingerprint[NF_FINGERPRINT_LEN];  /* the key held */
};

int nf_rotate_client(struct nf_ctx *ctx, const struct nf_rotate_client_opts *o,
		     struct nf_rotate_result *res);

/* ============================================ end of secrets section */

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

/* ---------------------------------------- gres render (lib/gres.c)
 * First boot: gres.conf's GPU lines whose Cores=/Links= depend on the
 * node's topology are kept by the build in /etc/nodeforge/gres.auto.json;
 * nf_gres_render() writes them into /etc/slurm/gres.conf from the node's
 * GPUs (/proc/driver/nvidia), their NUMA-local CPUs (/sys) and NVLinks
 * (NVML).  docs/nodeforge-gres.md */

/* Fold a CPU list ("0-63,128-191") onto Slurm core ids (cpu % ncores: a
 * hyperthread sibling counts as its core), OR-ed into `cores` (nbits
 * bits); the verifier's Cores= check and the renderer share it */
int nf_cpulist_fold_cores(const char *cpulist, unsigned ncores,
			  uint8_t *cores, size_t nbits);

struct nf_gres_opts {
	const char *root;       /* the node's root (NULL or "/": this one);
				 * /proc and /sys come from ctx's sysroot */
	const char *fixture;    /* hardware-ops fixture (NVML) or NULL */
	int dry_run;            /* render and compare, write nothing */
};

struct nf_gres_result {
	char *conf;             /* gres.conf as rendered */
	char *lines;            /* the rendered GPU lines alone */
	size_t ngpu;            /* GPUs seen */
	int nvlink;             /* Links= came from NVLink data */
	int changed;            /* differs from the file (written unless
				 * dry_run) */
};

int nf_gres_render(struct nf_ctx *ctx, const struct nf_gres_opts *o,
		   struct nf_gres_result *res);
void nf_gres_result_free(struct nf_gres_result *res);

/* Names back into a Slurm hostlist, sorted, duplicates dropped:
 * {gpu-001, gpu-002, gpu-004, login-01} -> "gpu-[001-002,004],login-01"
 * (names with a different digit count stay in separate groups, so
 * nf_hostlist_expand() gives the same names back); caller frees */
int nf_hostlist_compress(char *const *names, size_t n, char **out);

/* ------------------------------------------------- end of gres render */

#ifdef __cplusplus
}
#endif
#endif
