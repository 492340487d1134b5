/* SPDX-License-Identifier: MIT */
/*
 * The slurm facet's parts in other files.  GRES checks (slurm_gres.c):
 * gres.conf against the profile's GPUs, the PCI bus and the GPUs'
 * NUMA-local CPUs; the facet's check table (slurm.c) names them.  What a
 * node needs around its daemons (slurm_node.c): the facet's hooks.
 */
#ifndef NF_FACETS_SLURM_INT_H
#define NF_FACETS_SLURM_INT_H

#include "internal.h"

int nf_slurm_check_gres(struct nf_vcheck *c, const json_t *sec);
int nf_slurm_check_hardware(struct nf_vcheck *c, const json_t *sec);
int nf_slurm_check_cores(struct nf_vcheck *c, const json_t *sec);
/* The node's CPUs and memory against its NodeName= line (slurm_shape.c) */
int nf_slurm_check_shape(struct nf_vcheck *c, const json_t *sec);
/* The Prolog and Epilog slurm.conf names can run (slurm_prolog.c) */
int nf_slurm_check_scripts(struct nf_vcheck *c, const json_t *sec);

/* tmpfiles.d lines for the directories the role's daemons write */
int nf_slurm_apply_dirs(struct nf_apply *a);
int nf_slurm_apply_plugstack(struct nf_apply *a, const json_t *sec);
size_t nf_slurm_gate_units(const struct nf_apply *a, const json_t *sec,
			   struct nf_gate_unit *out, size_t max);
size_t nf_slurm_durable_dirs(const struct nf_apply *a, const json_t *sec,
			     const char **out, size_t max);
int nf_slurm_daemon_checks(struct nf_daemon_ci *d, const json_t *sec);

#endif
