/* SPDX-License-Identifier: MIT */
/* libnodeforge's public API: gres render (first boot).  Included by nodeforge.h,
 * which every user includes; not meant to be included alone. */
#ifndef NF_GRES_H
#define NF_GRES_H

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

#endif
