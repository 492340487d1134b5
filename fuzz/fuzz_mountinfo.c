/* SPDX-License-Identifier: MIT */
/* Fuzz the /proc/self/mountinfo parser. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct nf_ctx *ctx;
	struct nf_mount_info m;
	char *s;

	if (!ctx && nf_ctx_new(&ctx) < 0)
		return 0;
	s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	if (nf_mountinfo_lookup(ctx, s, "/var/lib/enroot/cache", &m) == 0)
		nf_mount_info_clear(&m);
	free(s);
	return 0;
}
