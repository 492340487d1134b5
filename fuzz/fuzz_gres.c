/* SPDX-License-Identifier: MIT */
/*
 * The gres renderer's parsers: the first byte picks what the rest of the
 * input is — a /proc/driver/nvidia/gpus/BUS/information file, gres.auto.json
 * (each entry then rendered against a fixed 8-GPU topology), an NVML
 * snapshot (its NVLink data turned into Links=), a gres.conf merged with
 * rendered lines, a local_cpulist folded onto cores, or a cluster.conf
 * whose NodeName= line for gpu-001 gives its GPUs' type.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "internal/gres.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct nf_ctx *ctx;
static struct nf_gres_topo *topo;

static void init(void)
{
	static const char *const bus[] = {
		"0000:18:00.0", "0000:2a:00.0", "0000:3a:00.0", "0000:5d:00.0",
		"0000:9a:00.0", "0000:ab:00.0", "0000:ba:00.0", "0000:db:00.0",
	};

	if (nf_ctx_new(&ctx) < 0 || !(topo = calloc(1, sizeof(*topo))))
		abort();
	topo->n = 8;
	for (int i = 0; i < 8; i++) {
		topo->gpu[i].minor = i;
		strcpy(topo->gpu[i].bus_id, bus[i]);
		strcpy(topo->gpu[i].cpulist, i < 4 ? "0-63,128-191" : "64-127,192-255");
	}
}

static void render(const json_t *autos)
{
	static const char auto_gpu[] = "{\"name\":\"gpu\",\"type\":\"h100\","
		"\"cores\":\"auto\",\"links\":\"auto\"}";
	json_error_t err;
	size_t i;
	json_t *e;

	json_array_foreach(autos, i, e) {
		struct nf_buf b = { 0 };

		nf_gres_entry_lines(ctx, e, topo, 128, (int)(i & 1), &b);
		nf_buf_free(&b);
	}
	if (!autos) {
		struct nf_buf b = { 0 };

		e = json_loads(auto_gpu, 0, &err);
		nf_gres_entry_lines(ctx, e, topo, 128, 1, &b);
		nf_buf_free(&b);
		json_decref(e);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s, bus[NF_PCI_ADDR_LEN], *out = NULL;
	json_t *j = NULL;
	json_error_t err;
	int minor;

	if (!ctx)
		init();
	if (size < 1)
		return 0;
	if (!(s = malloc(size)))
		return 0;
	memcpy(s, data + 1, size - 1);
	s[size - 1] = '\0';
	switch (data[0] % 6) {
	case 0:
		nf_gres_parse_information(s, &minor, bus);
		break;
	case 1:
		if (nf_gres_auto_parse(ctx, s, size - 1, &j) == 0)
			render(j);
		break;
	case 2:
		j = json_loadb(s, size - 1, 0, &err);
		if (nf_gres_topo_links(ctx, topo, j) == 0)
			render(NULL);
		memset(topo->links, 0, sizeof(topo->links));
		topo->nvlink_known = 0;
		break;
	case 3:
		if (nf_gres_merge(ctx, s, "Name=gpu File=/dev/nvidia0\n", &out) == 0)
			free(out);
		break;
	case 4: {
		uint8_t set[NF_GRES_MAX_CPUS / 8] = { 0 };

		nf_cpulist_fold_cores(s, 1 + (unsigned)(size % 256), set,
				      NF_GRES_MAX_CPUS);
		break;
	}
	case 5: {
		char type[64];

		nf_cluster_conf_gpu_type(s, "gpu-001", type, sizeof(type));
		break;
	}
	}
	json_decref(j);
	free(s);
	return 0;
}
