/* SPDX-License-Identifier: MIT */
#include "internal.h"

#include <string.h>

#define NF_FACET(n) extern const struct nf_facet nf_facet_##n;
#include "facets/facets.def"
#undef NF_FACET

const struct nf_facet *const nf_facets[] = {
#define NF_FACET(n) &nf_facet_##n,
#include "facets/facets.def"
#undef NF_FACET
	NULL
};

const size_t nf_nfacets = NF_ARRAY_SIZE(nf_facets) - 1;

static const struct nf_facet_table table = {
	nf_facets, NF_ARRAY_SIZE(nf_facets) - 1
};

/* The context every caller makes carries the table: the profile checks
 * each facet's section and the verifier runs each facet's checks from
 * it, below the facets, so they cannot name it */
int nf_ctx_new(struct nf_ctx **out)
{
	int r = nf_ctx_alloc(out);

	if (r == 0)
		(*out)->facets = &table;
	return r;
}

const struct nf_facet *nf_facet_find(const char *name)
{
	for (size_t i = 0; i < nf_nfacets; i++)
		if (!strcmp(nf_facets[i]->name, name))
			return nf_facets[i];
	return NULL;
}

const struct nf_check_def *nf_check_find(const char *id)
{
	for (size_t i = 0; i < nf_nfacets; i++) {
		const struct nf_checkset *cs = nf_facets[i]->checks;

		for (size_t j = 0; cs && j < cs->n; j++) {
			const char *dot = strrchr(cs->v[j].id, '.');

			if (!strcmp(cs->v[j].id, id))
				return &cs->v[j];
			/* a family's member: the id's stem and a key */
			if ((cs->v[j].flags & NF_CHECK_FAMILY) &&
			    !strncmp(cs->v[j].id, id, (size_t)(dot - cs->v[j].id + 1)) &&
			    id[dot - cs->v[j].id + 1])
				return &cs->v[j];
		}
	}
	return NULL;
}
