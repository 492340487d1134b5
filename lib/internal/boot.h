/* SPDX-License-Identifier: MIT */
/* libnodeforge's private declarations: disks and install, the boot server's parsers, the cluster of an inventory.
 * Included by internal.h; not meant to be included alone. */
#ifndef NF_INTERNAL_BOOT_H
#define NF_INTERNAL_BOOT_H

/* ---- disks, EFI, install (lib/install.c; lib/adapters/blkid.c, efi.c)
 * ---- */

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

/* ---- The cluster of an inventory (lib/cluster.c) ----
 * Where every node keeps the cluster part of slurm.conf */
#define NF_CLUSTER_CONF "/etc/slurm/cluster.conf"
/* The public key an image trusts (the one it was signed with): the boot
 * tree's cluster files must be signed by it */
#define NF_TRUST_PUB "/etc/nodeforge/signing.pub"
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
/* The same with RUN for each program a facet's daemon_checks names
 * (nf_ci_daemons: chrooted in the image, a case each into the array DATA) */
int nf_ci_daemons_run(struct nf_ctx *ctx, const char *root, const char *inventory,
		      const struct nf_site *site,
		      int (*run)(struct nf_daemon_ci *d, const char *host,
				 const char *id, const char *const *argv,
				 long grace_ms, int rc_counts, const char *want),
		      void *data);
/* The cluster part of slurm.conf (/etc/slurm/cluster.conf) */
int nf_cluster_slurm_conf(struct nf_ctx *ctx, const json_t *cluster,
			  struct nf_buf *b);
/* The NodeName= line of node `host` in a cluster.conf (its hostlist names
 * it): its start and length, NULL when none */
const char *nf_cluster_conf_node_line(const char *conf, const char *host,
				      size_t *len);
/* KEY=VALUE on that line (a key in any case): 1 and out set, else 0 */
int nf_cluster_conf_node_value(const char *conf, const char *host,
			       const char *key, char *out, size_t outsz);
/* The GPU type cluster.conf declares for node `host`: TYPE of the first
 * Gres=gpu:TYPE:N on the NodeName= line whose hostlist names it.  1 and
 * out set when it has one, else 0 (out untouched) */
int nf_cluster_conf_gpu_type(const char *conf, const char *host, char *out,
			     size_t outsz);
/* The node's own name, without its domain: nodeforge.node= on the
 * kernel command line under `sysroot`, else the kernel's host name;
 * caller frees */
char *nf_node_name(const char *sysroot);
/* The /etc/hosts block of every node of the cluster */
int nf_cluster_hosts(const json_t *cluster, const char *domain, struct nf_buf *b);
/* nf_apply_all() that also writes the cluster part of slurm.conf (its
 * controllers, nodes and partitions) from CLUSTER (NULL: the image gets
 * it at boot from the boot server) */
int nf_apply_all_cluster(struct nf_ctx *ctx, int rootfd,
			 const struct nf_profile *p, const json_t *cluster);
/* ---- end of Slurm nodes ---- */

#endif
