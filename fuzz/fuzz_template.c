/* SPDX-License-Identifier: MIT */
/* Overlay template rendering (nf_overlay_render, on nf_template_render) on arbitrary text. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static json_t *prof;
	struct nf_ctx *ctx;
	struct nf_buf out = { 0 };
	char *in;

	if (!prof)
		prof = json_pack("{s:s,s:{s:s,s:[s,s],s:{s:i}},s:{s:b}}",
				 "role", "compute", "site", "cluster", "production",
				 "ntp", "10.0.0.1", "10.0.0.2", "server", "port", 8080,
				 "pam", "use_pam", 1);
	in = malloc(size + 1);
	if (!in || nf_ctx_new(&ctx)) {
		free(in);
		return 0;
	}
	memcpy(in, data, size);
	in[size] = '\0';
	nf_overlay_render(ctx, prof, "compute", "fuzz.tmpl", in, &out);
	nf_buf_free(&out);
	nf_ctx_free(ctx);
	free(in);
	return 0;
}
