/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the manifest parser, the diff over what it accepts,
 * and the streamed validation (manifest verify), which must accept exactly
 * what the parser accepts and read the same archive record. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct nf_ctx *ctx;
	json_t *m = NULL, *s = NULL, *changes;
	int pr, sr;

	if (!ctx && nf_ctx_new(&ctx))
		return 0;
	pr = nf_manifest_parse(ctx, (const char *)data, size, &m);
	sr = nf_manifest_scan(ctx, (const char *)data, size, &s);
	if (pr == -ENOMEM || sr == -ENOMEM)
		goto out;
	if (!pr != !sr)
		abort(); /* one accepted what the other refused */
	if (!pr && !json_equal(json_object_get(m, "archive"),
			       json_object_get(s, "archive")))
		abort();
	if (!pr) {
		changes = json_array();
		nf_manifest_diff(ctx, m, m, changes);
		json_decref(changes);
	}
out:
	json_decref(s);
	json_decref(m);
	return 0;
}
