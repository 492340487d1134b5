/* SPDX-License-Identifier: MIT */
/*
 * The slurm facet's GRES checks (slurm_gres.c): gres.conf against the
 * profile's GPUs, the PCI bus and the GPUs' NUMA-local CPUs.  The facet's
 * check table (slurm.c) names them.
 */
#ifndef NF_FACETS_SLURM_INT_H
#define NF_FACETS_SLURM_INT_H

#include "internal.h"

int nf_slurm_check_gres(struct nf_vcheck *c, const json_t *sec);
int nf_slurm_check_hardware(struct nf_vcheck *c, const json_t *sec);
int nf_slurm_check_cores(struct nf_vcheck *c, const json_t *sec);

#endif
