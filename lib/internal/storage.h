/* SPDX-License-Identifier: MIT */
/* libnodeforge's private declarations: the storage checks, disks as the
 * verifier sees them (lib/facets/storage.c, lib/adapters/blkid.c,
 * lib/diskrule.c). */
#ifndef NF_INTERNAL_STORAGE_H
#define NF_INTERNAL_STORAGE_H

#include "internal.h"

/* What <sysroot>/sys/block says about each disk (size, model, transport,
 * rotational, removable), without opening the devices: contents are not
 * probed (probe_error says so), so a failing disk cannot block a check */
int nf_disk_scan_hw(struct nf_ctx *ctx, struct nf_disks *out);
/* Drop the terms about a disk's contents (empty, pttype, fstype, label)
 * from a rule: they describe the disk before provisioning formats it.
 * Returns how many were dropped; their keys go to `dropped` */
int nf_diskrule_hardware_only(struct nf_diskrule *r, char *dropped,
			      size_t sz);

#endif
