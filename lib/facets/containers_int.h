/* SPDX-License-Identifier: MIT */
/*
 * The containers facet's parts in other files.  GPU containers
 * (containers_nvidia.c): enroot's NVIDIA hook, nvidia-container-cli and
 * libcuda on a GPU node; the facet's check table (containers.c) names
 * the check.
 */
#ifndef NF_FACETS_CONTAINERS_INT_H
#define NF_FACETS_CONTAINERS_INT_H

#include "internal.h"

int nf_containers_check_nvidia(struct nf_vcheck *c, const json_t *sec);
/* Can the image execute the ELF program at `path`: 0 when its loader
 * is in the image (`why` then names the loader, or is "" for a static
 * program), 1 with the reason in `why` when not */
int nf_containers_elf_runs(struct nf_vcheck *c, const char *path, char *why,
			   size_t whysz);

#endif
