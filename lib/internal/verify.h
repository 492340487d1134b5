/* SPDX-License-Identifier: MIT */
/* libnodeforge's private declarations: the verifier's check engine (the
 * checks' table, what a check reads and runs, the hardware ops).  Image
 * CI, the storage checks and gres render have theirs in internal/ci.h,
 * internal/storage.h and internal/gres.h.  Included by internal.h; not
 * meant to be included alone. */
#ifndef NF_INTERNAL_VERIFY_H
#define NF_INTERNAL_VERIFY_H

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
	/* a family: one check per key of the facet's section (a mapping),
	 * its id the definition's up to its last '.' and then the key
	 * ("sysctl.KEY" -> "sysctl.vm.max_map_count"); nf_v_id() names the
	 * member that runs */
	NF_CHECK_FAMILY = 1 << 2,
	/* what the machine as a whole stands on (its identity, its init):
	 * as a root cause it comes before any other (the rest keep the
	 * facets' order, the kernel first) */
	NF_CHECK_BASE = 1 << 3,
};
#define NF_CHECK_ID_MAX 192

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
	 * "hugepage-memory", "cpus" (the node's CPUs, those the kernel
	 * isolates), "ntp" (the site's time servers), "cluster-key"
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
/* The node's running kernel command line (its sysroot's /proc/cmdline),
 * split by nf_cmdline_new; 0 or -errno */
int nf_v_cmdline(struct nf_vcheck *c, struct nf_cmdline **out);
/* The node's memory: MemTotal of its /proc/meminfo in KiB; 0 when that
 * cannot be read */
unsigned long long nf_v_mem_total_kb(struct nf_vcheck *c);
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
/* `systemctl is-active UNIT`: 1 active, 0 not, <0 error; asked over the
 * service manager's bus (nf_unit_active_state), else of systemctl (the
 * fixture answers for it) */
int nf_v_service_active(struct nf_vcheck *c, const char *unit, char *state,
			size_t statesz);
/* lib/adapters/sdbus.c: a unit's ActiveState into `state` ("UNIT" without
 * a type is UNIT.service), within `deadline` (CLOCK_MONOTONIC): 1 active,
 * 0 not, NF_E_TIMEOUT, or -errno (no service manager to ask) */
int nf_unit_active_state(const char *unit, const struct timespec *deadline,
			 char *state, size_t statesz);

/* Small parsing helpers shared by the facets */
/* Value of `key` in a "key = value" / "Key=Value" / "key value" text, last
 * one wins; case-insensitive key; NULL when absent.  Caller frees. */
char *nf_v_conf_get(const char *text, const char *key, const char *seps);
/* The profile value as a string for comparing with a config file */
int nf_v_json_str(const json_t *v, char *buf, size_t sz);

/* A context whose sysroot is the run's, for library calls from a check
 * (nf_mount_find, nf_disk_scan_hw, nf_efi_open): the live node and a
 * fixture tree go through the same code.  Owned by the check; NULL on
 * ENOMEM; its nf_errmsg() holds the last library error */
struct nf_ctx *nf_v_ctx(struct nf_vcheck *c);
/* The NVML snapshot (libnvidia-ml via dlopen), or a hardware-ops
 * fixture's "nvml" object; NF_E_NOHW when there is none, with *snap
 * {"error", "missing": "software" (no libnvidia-ml) or "driver" (NVML
 * there, its kernel module not loaded)} when it can say why (the caller
 * frees it either way) */
int nf_nvml_snapshot(const json_t *fixture, json_t **snap);
/* Load a hardware-ops fixture (fixture.json, size-capped) */
int nf_hw_fixture_load(struct nf_ctx *ctx, const char *path, json_t **out);

/* ---- end of verifier ---- */

#endif
