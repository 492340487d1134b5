/* SPDX-License-Identifier: MIT */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>

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

int nf_lint_at(struct nf_facet_lint *l, const char *path, int sev,
	       const char *fmt, ...)
{
	const char *file = NULL;
	unsigned line = 0, col = 0;
	char msg[1024];
	va_list ap;
	char p[512];

	/* fall back to the closest enclosing key that has a position */
	snprintf(p, sizeof(p), "%s", path);
	while (nf_profile_where(l->profile, p, &file, &line, &col) && *p) {
		char *cut = strrchr(p, '.');
		char *br = strrchr(p, '[');

		if (br && (!cut || br > cut))
			cut = br;
		if (!cut) {
			*p = '\0';
			break;
		}
		*cut = '\0';
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return nf_diag_add(l->diags, file ? file : nf_profile_name(l->profile),
			   line, col, sev, "%s", msg);
}

int nf_daemon_ci_has(const struct nf_daemon_ci *d, const char *rel)
{
	char p[4096];
	struct stat st;

	if ((size_t)snprintf(p, sizeof(p), "%s/%s", d->root, rel) >= sizeof(p))
		return 0;
	return lstat(p, &st) == 0;
}
