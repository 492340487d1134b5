/* SPDX-License-Identifier: MIT */
/*
 * The cluster's Slurm nodes, from an inventory: `nodeforge build
 * --inventory racks.yaml` gives the controller's slurm.conf one NodeName=
 * line per role (its nodes as a hostlist, the role's hardware shape and
 * GRES) and one partition per role that runs slurmd.
 */
#include "internal.h"

#include <stdlib.h>

static int diag_fail(struct nf_ctx *ctx, int r, const char *what,
		     const struct nf_diags *d)
{
	for (size_t i = 0; i < d->n; i++)
		if (d->v[i].severity == NF_SEV_ERROR)
			return nf_fail(ctx, r ? r : NF_E_INVALID, "%s: %s:%u:%u: %s",
				       what, d->v[i].file, d->v[i].line,
				       d->v[i].col, d->v[i].message);
	return r ? r : NF_E_INVALID;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* One role's entry: its nodes and what its profile says of them */
static int role_entry(struct nf_ctx *ctx, const struct nf_inventory *inv,
		      const char *role, const struct nf_site *site, json_t **out)
{
	size_t n = nf_inventory_count(inv), k = 0;
	char **names = calloc(n ? n : 1, sizeof(*names)), *list = NULL;
	struct nf_profile *p = NULL;
	struct nf_diags d;
	const json_t *slurm, *daemons, *v;
	int r, slurmd = 0;
	size_t i;

	if (!names)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		const struct nf_node *node = nf_inventory_node(inv, i);

		if (!strcmp(node->role, role))
			names[k++] = node->name;
	}
	r = nf_hostlist_compress(names, k, &list);
	free(names);
	if (r)
		return r;
	nf_diags_init(&d);
	r = nf_profile_resolve(ctx, role, site, &p, &d);
	if (r || nf_diags_errors(&d)) {
		char what[128];

		snprintf(what, sizeof(what), "profile '%s'", role);
		r = diag_fail(ctx, r, what, &d);
		nf_diags_free(&d);
		nf_profile_free(p);
		free(list);
		return r;
	}
	nf_diags_free(&d);
	slurm = json_object_get(nf_profile_json(p), "slurm");
	daemons = json_object_get(slurm, "daemons");
	json_array_foreach(daemons, i, v)
		slurmd |= !strcmp(json_string_value(v) ?: "", "slurmd");
	*out = json_pack("{s:s, s:s, s:O?, s:O?, s:b}", "role", role,
			 "nodes", list, "node", json_object_get(slurm, "node"),
			 "gres", json_object_get(slurm, "gres"), "slurmd", slurmd);
	nf_profile_free(p);
	free(list);
	return *out ? 0 : -ENOMEM;
}

int nf_slurm_nodes(struct nf_ctx *ctx, const char *inventory,
		   const struct nf_site *site, json_t **out)
{
	struct nf_inventory *inv = NULL;
	struct nf_diags d;
	char **roles = NULL;
	size_t n, nroles = 0;
	json_t *all;
	int r;

	*out = NULL;
	nf_diags_init(&d);
	r = nf_inventory_load(ctx, inventory, site, &inv, &d);
	if (r || nf_diags_errors(&d)) {
		r = diag_fail(ctx, r, "inventory", &d);
		nf_diags_free(&d);
		nf_inventory_free(inv);
		return r;
	}
	nf_diags_free(&d);
	n = nf_inventory_count(inv);
	if (!(roles = calloc(n ? n : 1, sizeof(*roles))) || !(all = json_array())) {
		free(roles);
		nf_inventory_free(inv);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		roles[nroles++] = nf_inventory_node(inv, i)->role;
	qsort(roles, nroles, sizeof(*roles), cmp_str);
	for (size_t i = 0; i < nroles && !r; i++) {
		json_t *e = NULL;

		if (i && !strcmp(roles[i], roles[i - 1]))
			continue;
		if (!(r = role_entry(ctx, inv, roles[i], site, &e)))
			json_array_append_new(all, e);
	}
	free(roles);
	nf_inventory_free(inv);
	if (r) {
		json_decref(all);
		return r;
	}
	*out = all;
	return 0;
}
