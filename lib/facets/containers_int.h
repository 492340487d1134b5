/* SPDX-License-Identifier: MIT */
/*
 * The containers facet's parts in three files: the schema, lint and apply
 * (containers.c), the checks (containers_check.c), which use the same
 * enroot.conf settings and shared directories, and GPU containers
 * (containers_nvidia.c): enroot's NVIDIA hook, nvidia-container-cli and
 * libcuda on a GPU node.
 */
#ifndef NF_FACETS_CONTAINERS_INT_H
#define NF_FACETS_CONTAINERS_INT_H

#include "internal.h"

#define NF_ENROOT_TMPFILES "/etc/tmpfiles.d/nodeforge-enroot.conf"

/* enroot.conf's settings: the profile's key, enroot.conf's name, and
 * whether it is a directory each user needs their own of (containers.c) */
struct nf_enroot_key {
	const char *key, *conf;
	int kind;
};
#define NF_ENROOT_NKEYS 5
extern const struct nf_enroot_key nf_enroot_keys[NF_ENROOT_NKEYS];

/* The directories every user of enroot needs, 1777 root, sorted, without
 * duplicates and without /tmp and /var/tmp (the OS makes those).  Returns
 * how many, or NF_E_INVALID with the offending key in *bad. */
int nf_containers_shared_dirs(const json_t *sec,
			      char dirs[][NF_ENROOT_DIR_MAX], const char **bad);
/* The profile's pyxis arguments as plugstack.conf gets them: " k=v" each */
void nf_containers_pyxis_args(struct nf_buf *b, const json_t *px);

/* The facet's check table (containers_check.c) */
extern const struct nf_checkset nf_containers_checks;

/* containers_nvidia.c: containers.nvidia, and whether the image can
 * execute the ELF program at `path`: 0 when its loader is in the image
 * (`why` then names the loader, or is "" for a static program), 1 with
 * the reason in `why` when not */
int nf_containers_check_nvidia(struct nf_vcheck *c, const json_t *sec);
int nf_containers_elf_runs(struct nf_vcheck *c, const char *path, char *why,
			   size_t whysz);

#endif
