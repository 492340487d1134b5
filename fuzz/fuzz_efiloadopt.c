/* SPDX-License-Identifier: MIT */
/* Fuzz the Boot#### load option parser (variables come from firmware). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct nf_ctx *ctx;
	struct nf_efi_entry e;

	if (!ctx && nf_ctx_new(&ctx) < 0)
		return 0;
	memset(&e, 0, sizeof(e));
	nf_efi_loadopt_parse(ctx, "Boot0000", data, size, &e);
	free(e.description);
	free(e.device_path);
	return 0;
}
