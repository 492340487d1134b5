/* SPDX-License-Identifier: MIT */
/*
 * Fuzz the node side of enrollment: the response parser (JSON, base64,
 * the sealed box opener) and, raw, the sealed box opener itself.  The
 * first byte picks the target.  A box sealed with the fixed key is in the
 * seeds so the fuzzer also reaches the inner payload parser.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct nf_ctx *ctx;
	struct nf_enroll_claim c;
	struct nf_enroll_result res;
	uint8_t *pt;
	size_t len;

	if (!ctx && nf_ctx_new(&ctx))
		abort();
	if (size < 1)
		return 0;
	memset(&c, 0, sizeof(c));
	for (int i = 0; i < 32; i++)
		c.priv[i] = (uint8_t)(i + 1);
	strcpy(c.node, "gpu-01");
	if (data[0] & 1) {
		if (!nf_seal_open(ctx, c.priv, "aad", 3, data + 1, size - 1,
				  &pt, &len))
			nf_wipe_free(pt, len + 1);
	} else {
		/* root that does not exist: nothing is ever written */
		nf_enroll_claim_accept(ctx, &c, (const char *)data + 1,
				       size - 1, "/nonexistent-nf-fuzz", &res);
	}
	return 0;
}
