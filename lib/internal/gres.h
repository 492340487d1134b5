/* SPDX-License-Identifier: MIT */
/* libnodeforge's private declarations: gres render (lib/gres.c; its texts:
 * lib/gres_conf.c), the node's GPUs, their topology and the gres.conf
 * lines. */
#ifndef NF_INTERNAL_GRES_H
#define NF_INTERNAL_GRES_H

#include "internal.h"

#define NF_PCI_ADDR_LEN 24     /* "0000:18:00.0" (VMD: 5-digit domain) */
#define NF_GRES_MAX_GPUS 64
#define NF_GRES_MAX_CPUS 8192
#define NF_GRES_CPULIST_MAX 4096
#define NF_GRES_MINOR_MAX 255
#define NF_GRES_AUTO_JSON "/etc/nodeforge/gres.auto.json"
#define NF_GRES_AUTO_MAX (64u * 1024)
#define NF_GRES_CONF "/etc/slurm/gres.conf"

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
/* Whether any two of the topology's GPUs have an NVLink */
int nf_gres_any_link(const struct nf_gres_topo *t);
/* The topology indexes (*n of them into idx, NF_GRES_MAX_GPUS long)
 * that gres.auto.json entry `entry` covers: its File= list, else all */
int nf_gres_entry_gpus(struct nf_ctx *ctx, const json_t *entry,
		       const struct nf_gres_topo *t, size_t *idx, size_t *n);
/* Replace the rendered block of gres.conf text `old` with `lines`;
 * the result in *out (caller frees) */
int nf_gres_merge(struct nf_ctx *ctx, const char *old, const char *lines,
		  char **out);

#endif
