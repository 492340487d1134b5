/* SPDX-License-Identifier: MIT */
#include "internal.h"

#include <stdlib.h>

struct nf_site {
	char *path;
	json_t *json;
	json_t *locs;
};

int nf_site_load(struct nf_ctx *ctx, const char *path, struct nf_site **out,
		 struct nf_diags *diags)
{
	(void)ctx; (void)path; (void)out; (void)diags;
	return NF_E_UNSUPPORTED;
}

void nf_site_free(struct nf_site *site)
{
	if (!site)
		return;
	free(site->path);
	json_decref(site->json);
	json_decref(site->locs);
	free(site);
}
