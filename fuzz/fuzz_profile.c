/* SPDX-License-Identifier: MIT */
/*
 * Fuzz the profile loader: YAML parsing, positions, schema checks, and the
 * inheritance/merge/lint path with the input as a role over a fixed parent.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

static char dir[64];

static void write_file(const char *name, const uint8_t *data, size_t len)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f)
		abort();
	fwrite(data, 1, len, f);
	fclose(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nf_ctx *ctx;
	struct nf_diags d;
	struct nf_profile *p = NULL;
	json_t *j = NULL, *locs = json_object();
	static const char parent[] =
		"abstract: true\nkernel:\n  args: [a=1, b]\nslurm:\n"
		"  gres:\n    - { name: gpu, type: h100, count: 8 }\n";

	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "/tmp/nf-fuzz-profile.XXXXXX");
		if (!mkdtemp(dir))
			abort();
		write_file("parent.yaml", (const uint8_t *)parent, sizeof(parent) - 1);
	}
	if (nf_ctx_new(&ctx))
		return 0;
	nf_diags_init(&d);
	if (nf_yaml_load_buf(ctx, "input.yaml", (const char *)data, size, &j,
			     locs, &d) == 0)
		json_decref(j);
	json_decref(locs);
	nf_diags_free(&d);

	/* the same bytes as a role that inherits the parent */
	nf_ctx_set_profiles_dir(ctx, dir);
	write_file("role.yaml", data, size);
	if (nf_profile_resolve(ctx, "role", NULL, &p, &d) == 0) {
		char *args = NULL;

		nf_profile_lint(ctx, p, &d);
		if (nf_profile_kernel_args(ctx, p, &args) == 0)
			free(args);
		nf_profile_free(p);
	}
	nf_diags_free(&d);
	nf_ctx_free(ctx);
	return 0;
}
