/* SPDX-License-Identifier: MIT */
/* Fuzz the disk selection rule parser and matcher. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nodeforge.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct nf_ctx *ctx;
	struct nf_diskrule *r = NULL;
	struct nf_disk v[2] = {
		{ .name = (char *)"nvme0n1", .path = (char *)"/dev/nvme0n1",
		  .transport = (char *)"nvme", .size = 1920383410176ULL,
		  .model = (char *)"SAMSUNG MZQL21T9", .rotational = 0,
		  .removable = 0 },
		{ .name = (char *)"sda", .path = (char *)"/dev/sda",
		  .transport = (char *)"sata", .size = 1920383410176ULL,
		  .fstype = (char *)"ext4", .rotational = -1, .removable = 1 },
	};
	struct nf_disks d = { v, 2 };
	char *s;
	size_t idx;

	if (!ctx && nf_ctx_new(&ctx) < 0)
		return 0;
	s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	if (nf_diskrule_parse(ctx, s, &r) == 0) {
		nf_diskrule_match(r, &v[0]);
		nf_disk_pick(ctx, r, &d, &idx);
		nf_diskrule_free(r);
	}
	free(s);
	return 0;
}
