/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the inventory parser (racks.yaml). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "nodeforge.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char path[64];
	struct nf_ctx *ctx;
	struct nf_inventory *inv = NULL;
	struct nf_diags d;
	FILE *f;

	if (!*path)
		snprintf(path, sizeof(path), "/tmp/nf-fuzz-inv.%d.yaml",
			 (int)getpid());
	f = fopen(path, "w");
	if (!f)
		return 0;
	fwrite(data, 1, size, f);
	fclose(f);
	if (nf_ctx_new(&ctx))
		return 0;
	nf_ctx_set_profiles_dir(ctx, "/nonexistent");
	nf_diags_init(&d);
	if (nf_inventory_load(ctx, path, NULL, &inv, &d) == 0) {
		for (size_t i = 0; i < nf_inventory_count(inv); i++) {
			char m[18];

			nf_mac_format(nf_inventory_node(inv, i)->mac, ':', m);
		}
		nf_inventory_check_network(ctx, inv, "10.0.0.0/8", &d);
		nf_inventory_free(inv);
	}
	nf_diags_free(&d);
	nf_ctx_free(ctx);
	return 0;
}
