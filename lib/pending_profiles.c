/* SPDX-License-Identifier: MIT */
/*
 * Placeholders for the profile and site accessors until lib/profile.c and
 * the full lib/site.c land; remove this file when they do.
 */
#include "internal.h"

const json_t *nf_site_json(const struct nf_site *site)
{
	(void)site;
	return NULL;
}

int nf_profile_resolve(struct nf_ctx *ctx, const char *name,
		       const struct nf_site *site, struct nf_profile **out,
		       struct nf_diags *diags)
{
	(void)site; (void)out; (void)diags;
	return nf_fail(ctx, NF_E_UNSUPPORTED,
		       "cannot resolve profile '%s': profiles not available",
		       name);
}

void nf_profile_free(struct nf_profile *p)
{
	(void)p;
}

int nf_profile_kernel_args(struct nf_ctx *ctx, const struct nf_profile *p,
			   char **out)
{
	(void)p; (void)out;
	return nf_fail(ctx, NF_E_UNSUPPORTED, "profiles not available");
}
