/* SPDX-License-Identifier: MIT */
/*
 * EFI's private parts, shared by its files: lib/adapters/efi.c (boot entries,
 * BootOrder, BootNext, BootCurrent) and lib/adapters/efi_vars.c (the variable
 * store, opened and closed).
 */
#ifndef NF_EFI_INT_H
#define NF_EFI_INT_H

#include "internal.h"

#include <stddef.h>
#include <stdint.h>

#define NF_EFIVAR_MAX (64 * 1024)   /* no boot variable is larger */

struct nf_efivar_ops {
	/* *data is malloc'd; -ENOENT when the variable does not exist */
	int (*get)(struct nf_efi *efi, const char *name, const char *guid,
		   uint32_t *attrs, uint8_t **data, size_t *len);
	int (*set)(struct nf_efi *efi, const char *name, const char *guid,
		   uint32_t attrs, const uint8_t *data, size_t len);
	/* -ENOENT when absent */
	int (*del)(struct nf_efi *efi, const char *name, const char *guid);
	/* calls fn for every variable name of `guid` */
	int (*list)(struct nf_efi *efi, const char *guid,
		    int (*fn)(void *arg, const char *name), void *arg);
};

struct nf_efi {
	struct nf_ctx *ctx;
	const struct nf_efivar_ops *ops;
	char *dir;
	int efivarfs; /* dir is a real efivarfs mount */
};

#endif
