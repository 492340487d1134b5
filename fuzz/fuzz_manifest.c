/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the manifest parser and the diff over what it accepts. */
#include <stddef.h>
#include <stdint.h>

#include "nodeforge.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct nf_ctx *ctx;
	json_t *m = NULL, *changes;

	if (!ctx && nf_ctx_new(&ctx))
		return 0;
	if (nf_manifest_parse(ctx, (const char *)data, size, &m))
		return 0;
	changes = json_array();
	nf_manifest_diff(ctx, m, m, changes);
	json_decref(changes);
	json_decref(m);
	return 0;
}
