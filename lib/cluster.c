/* SPDX-License-Identifier: MIT */
/*
 * The cluster, from an inventory: which nodes run slurmctld and slurmdbd,
 * every Slurm node with its role's hardware shape, the partitions, and
 * every node's address.
 *
 * Every image carries the same /etc/slurm/slurm.conf (the profiles'
 * slurm.conf settings), ending in "Include /etc/slurm/cluster.conf".  The
 * cluster part is rendered here from the inventory: `nodeforge pxe` puts
 * it into the boot tree (cluster/slurm.conf, cluster/hosts), where every
 * node fetches it at boot (`nodeforge cluster fetch`, lib/cluster_fetch.c),
 * so a new rack needs a new tree, never a new image.  `build --inventory` also bakes a copy
 * into the image.
 */
#include "internal.h"
#include "internal/gres.h"

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

/* the site is optional (a profiles directory without site.yaml) */
static const json_t *site_json(const struct nf_site *site)
{
	return site ? nf_site_json(site) : NULL;
}

static const char *site_path(const struct nf_site *site)
{
	return site && nf_site_path(site) ? nf_site_path(site) : "site";
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static json_t *host_obj(const struct nf_node *n)
{
	char ip[16];

	nf_ipv4_format(n->ip, ip);
	return json_pack("{s:s, s:s}", "name", n->name, "ip", ip);
}

/* The nodes of `role` whose inventory entry names their GPU type:
 * { "h200": "gpu-[05-08]", ... } */
static int type_groups(const struct nf_inventory *inv, const char *role,
		       json_t **out)
{
	size_t n = nf_inventory_count(inv);
	char **names = calloc(n ? n : 1, sizeof(*names));
	json_t *types = json_object();
	int r = 0;

	*out = NULL;
	if (!names || !types) {
		free(names);
		json_decref(types);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n && !r; i++) {
		const struct nf_node *a = nf_inventory_node(inv, i);
		size_t k = 0;
		char *list = NULL;

		if (strcmp(a->role, role) || !a->gpu_type || !*a->gpu_type ||
		    json_object_get(types, a->gpu_type))
			continue;
		for (size_t j = i; j < n; j++) {
			const struct nf_node *b = nf_inventory_node(inv, j);

			if (!strcmp(b->role, role) && b->gpu_type &&
			    !strcmp(b->gpu_type, a->gpu_type))
				names[k++] = b->name;
		}
		if (!(r = nf_hostlist_compress(names, k, &list)))
			json_object_set_new(types, a->gpu_type, json_string(list));
		free(list);
	}
	free(names);
	if (r)
		json_decref(types);
	else
		*out = types;
	return r;
}

/* One role's entry: its nodes and what its profile says of them */
static int role_entry(struct nf_ctx *ctx, const struct nf_inventory *inv,
		      const char *role, const struct nf_site *site, json_t **out)
{
	size_t n = nf_inventory_count(inv), k = 0, ku = 0;
	char **names = calloc(n ? n : 1, sizeof(*names)), *list = NULL;
	char **untyped = calloc(n ? n : 1, sizeof(*untyped)), *ulist = NULL;
	json_t *types = NULL;
	struct nf_profile *p = NULL;
	struct nf_diags d;
	const json_t *slurm;
	size_t i;
	int r;

	if (!names || !untyped) {
		free(names);
		free(untyped);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		const struct nf_node *node = nf_inventory_node(inv, i);

		if (strcmp(node->role, role))
			continue;
		names[k++] = node->name;
		if (!node->gpu_type || !*node->gpu_type)
			untyped[ku++] = node->name;
	}
	r = nf_hostlist_compress(names, k, &list);
	if (!r)
		r = nf_hostlist_compress(untyped, ku, &ulist);
	free(names);
	free(untyped);
	if (!r)
		r = type_groups(inv, role, &types);
	if (r) {
		free(list);
		free(ulist);
		return r;
	}
	nf_diags_init(&d);
	r = nf_profile_resolve(ctx, role, site, &p, &d);
	if (r || nf_diags_errors(&d)) {
		char what[128];

		snprintf(what, sizeof(what), "profile '%s'", role);
		r = diag_fail(ctx, r, what, &d);
		nf_diags_free(&d);
		nf_profile_free(p);
		free(list);
		free(ulist);
		json_decref(types);
		return r;
	}
	nf_diags_free(&d);
	slurm = json_object_get(nf_profile_json(p), "slurm");
	*out = json_pack("{s:s, s:s, s:s, s:o, s:O?, s:O?, s:O?, s:O?, s:O?, s:b, s:b, s:b}",
			 "role", role, "nodes", list, "untyped", ulist,
			 "gpu_types", types,
			 "isolate", nf_profile_get(nf_profile_json(p), "kernel.isolate_cpus"),
			 "node", json_object_get(slurm, "node"),
			 "gres", json_object_get(slurm, "gres"),
			 "partitions", json_object_get(slurm, "partitions"),
			 "conf", json_object_get(slurm, "conf"),
			 "slurmd", nf_profile_runs(nf_profile_json(p), "slurmd"),
			 "slurmctld", nf_profile_runs(nf_profile_json(p), "slurmctld"),
			 "slurmdbd", nf_profile_runs(nf_profile_json(p), "slurmdbd"));
	nf_profile_free(p);
	free(list);
	free(ulist);
	return *out ? 0 : -ENOMEM;
}

/* Every role's slurm.conf settings must agree: the file is the same on
 * every node, and Slurm warns of nodes whose configuration differs */
static int same_conf(struct nf_ctx *ctx, const json_t *roles)
{
	const json_t *first = NULL;
	const char *frole = NULL, *k;
	size_t i;
	json_t *e, *v;

	json_array_foreach(roles, i, e) {
		const json_t *conf = json_object_get(e, "conf");
		const char *role = json_string_value(json_object_get(e, "role"));

		if (!first) {
			first = conf;
			frole = role;
			continue;
		}
		json_object_foreach((json_t *)conf, k, v)
			if (!json_equal(v, json_object_get(first, k)))
				goto differ;
		json_object_foreach((json_t *)first, k, v)
			if (!json_equal(v, json_object_get(conf, k)))
				goto differ;
		continue;
differ:
		return nf_fail(ctx, NF_E_INVALID, "roles '%s' and '%s' disagree on "
			       "slurm.conf %s: every node of a cluster has the same "
			       "slurm.conf (set it in a profile both inherit)",
			       frole, role, k);
	}
	return 0;
}

/* The site may still name its controllers and accounting host: they
 * must be the inventory's */
static int site_agrees(struct nf_ctx *ctx, const struct nf_site *site,
		       const json_t *ctl, const json_t *dbd, const char *inventory)
{
	const json_t *sc = json_object_get(site_json(site), "controllers");
	size_t i, j;
	json_t *s, *c;

	json_array_foreach(sc, i, s) {
		const char *name = json_string_value(json_object_get(s, "name"));
		const char *addr = json_string_value(json_object_get(s, "address"));
		int found = 0;

		json_array_foreach(ctl, j, c)
			found |= !strcmp(name ?: "", json_string_value(
					 json_object_get(c, "name"))) &&
				 (!addr || !strcmp(addr, json_string_value(
					 json_object_get(c, "ip"))));
		if (!found) {
			const json_t *c0 = json_array_get(ctl, 0);

			return nf_fail(ctx, NF_E_INVALID, "%s: controllers[%zu] %s%s%s%s "
				       "is not a controller node of inventory %s "
				       "(its controllers: %s %s); the controllers come "
				       "from the inventory: remove 'controllers' from "
				       "the site or make them agree",
				       site_path(site), i, name ?: "?",
				       addr ? " (" : "", addr ?: "", addr ? ")" : "",
				       inventory,
				       c0 ? json_string_value(json_object_get(c0, "name")) : "none",
				       c0 ? json_string_value(json_object_get(c0, "ip")) : "");
		}
	}
	s = json_object_get(site_json(site), "accounting");
	if (s) {
		const char *name = json_string_value(json_object_get(s, "name"));
		const char *addr = json_string_value(json_object_get(s, "address"));

		if (!dbd || strcmp(name ?: "", json_string_value(json_object_get(dbd, "name"))) ||
		    (addr && strcmp(addr, json_string_value(json_object_get(dbd, "ip")))))
			return nf_fail(ctx, NF_E_INVALID, "%s: accounting %s (%s) is not "
				       "the node of inventory %s that runs slurmdbd "
				       "(%s %s); remove 'accounting' from the site or "
				       "make them agree", site_path(site),
				       name ?: "?", addr ?: "-", inventory,
				       dbd ? json_string_value(json_object_get(dbd, "name")) : "none",
				       dbd ? json_string_value(json_object_get(dbd, "ip")) : "");
	}
	return 0;
}

int nf_cluster_load(struct nf_ctx *ctx, const char *inventory,
		    const struct nf_site *site, json_t **out)
{
	struct nf_inventory *inv = NULL;
	struct nf_diags d;
	char **roles = NULL;
	size_t n, nroles = 0;
	json_t *all = NULL, *ctl = NULL, *hosts = NULL, *dbd = NULL;
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
	if (!(roles = calloc(n ? n : 1, sizeof(*roles))) || !(all = json_array()) ||
	    !(ctl = json_array()) || !(hosts = json_array())) {
		r = -ENOMEM;
		goto out;
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
	if (r || (r = same_conf(ctx, all)))
		goto out;
	/* inventory order: the first controller is the primary */
	for (size_t i = 0; i < n; i++) {
		const struct nf_node *node = nf_inventory_node(inv, i);
		size_t j;
		json_t *e;

		json_array_append_new(hosts, host_obj(node));
		json_array_foreach(all, j, e) {
			if (strcmp(json_string_value(json_object_get(e, "role")),
				   node->role))
				continue;
			if (json_is_true(json_object_get(e, "slurmctld")))
				json_array_append_new(ctl, host_obj(node));
			if (json_is_true(json_object_get(e, "slurmdbd")) && !dbd)
				dbd = host_obj(node);
		}
	}
	if (!json_array_size(ctl)) {
		r = nf_fail(ctx, -ENOENT, "inventory %s has no controller: no "
			    "node's role runs slurmctld (slurm.daemons)", inventory);
		goto out;
	}
	if ((r = site_agrees(ctx, site, ctl, dbd, inventory)))
		goto out;
	/* a backup controller takes over with the state the primary saved:
	 * on node-local storage it starts with none (every job lost) */
	if (json_array_size(ctl) > 1 &&
	    !json_string_value(json_object_get(json_object_get(json_object_get(
		    site_json(site), "slurm"), "state_save"), "nfs"))) {
		r = nf_fail(ctx, NF_E_INVALID, "inventory %s has %zu controllers "
			    "(%s, %s) but %s names no shared StateSaveLocation: a "
			    "backup slurmctld that takes over without the "
			    "primary's state forgets every job; set slurm: "
			    "{ state_save: { nfs: \"SERVER:/EXPORT\" } } in the site, "
			    "or keep one controller", inventory,
			    json_array_size(ctl),
			    json_string_value(json_object_get(json_array_get(ctl, 0), "name")),
			    json_string_value(json_object_get(json_array_get(ctl, 1), "name")),
			    site_path(site));
		goto out;
	}
	*out = json_pack("{s:O, s:O, s:O, s:O?, s:s?, s:O?}", "roles", all,
			 "controllers", ctl, "hosts", hosts, "dbd", dbd,
			 "cluster", json_string_value(json_object_get(
				 site_json(site), "cluster")),
			 "partitions", json_object_get(json_object_get(
				 site_json(site), "slurm"), "partitions"));
	if (!*out)
		r = -ENOMEM;
out:
	json_decref(all);
	json_decref(ctl);
	json_decref(hosts);
	json_decref(dbd);
	free(roles);
	nf_inventory_free(inv);
	return r;
}

/* One Slurm "Key=Value", blank-separated, quoted when the value has blanks */
static void kv(struct nf_buf *b, const char *k, const json_t *v)
{
	char s[512];

	if (json_is_boolean(v))
		snprintf(s, sizeof(s), "%s", json_is_true(v) ? "yes" : "no");
	else if (json_is_integer(v))
		snprintf(s, sizeof(s), "%lld", (long long)json_integer_value(v));
	else if (json_is_string(v))
		snprintf(s, sizeof(s), "%s", json_string_value(v));
	else
		return;
	nf_buf_printf(b, strpbrk(s, " \t") ? " %s=\"%s\"" : " %s=%s", k, s);
}

/* "NodeName=NAMES Sockets=... Gres=... Feature=... State=UNKNOWN" */
/* CpuSpecList= for a node whose kernel keeps `isolate` (OS CPU ids) off
 * the scheduler: the other CPUs, for the OS and slurmd, in Slurm's
 * abstract ids (a core's threads numbered together).  The kernel numbers
 * the first thread of every core, then the second (x86): OS CPU n is
 * thread n / cores of core n % cores.  NULL when nothing is isolated. */
static char *cpu_spec(const json_t *node, const char *isolate)
{
	json_int_t sk = json_integer_value(json_object_get(node, "sockets"));
	json_int_t cps = json_integer_value(json_object_get(node, "cores_per_socket"));
	json_int_t tpc = json_integer_value(json_object_get(node, "threads_per_core"));
	uint8_t iso[NF_GRES_MAX_CPUS / 8], spec[NF_GRES_MAX_CPUS / 8] = { 0 };
	unsigned maxcpu = 0, cores, ncpu;
	int any = 0;

	if (!isolate || sk < 1 || cps < 1 || tpc < 1 ||
	    sk * cps * tpc > NF_GRES_MAX_CPUS ||
	    nf_cpulist_parse(isolate, iso, NF_GRES_MAX_CPUS, &maxcpu))
		return NULL;
	cores = (unsigned)(sk * cps);
	ncpu = cores * (unsigned)tpc;
	for (unsigned cpu = 0; cpu < ncpu; cpu++) {
		unsigned a = (cpu % cores) * (unsigned)tpc + cpu / cores;

		if (iso[cpu / 8] & (1u << (cpu % 8)))
			continue;
		spec[a / 8] |= (uint8_t)(1u << (a % 8));
		any = 1;
	}
	return any ? nf_cpulist_format(spec, NF_GRES_MAX_CPUS) : NULL;
}

/* gpu_type: the inventory's type for these nodes, replacing the role's
 * in Gres=gpu:TYPE and in the feature of that name; NULL: the role's */
static void node_line(struct nf_buf *b, const char *names, const json_t *node,
		      const json_t *gres, const char *gpu_type, const char *isolate)
{
	char *spec = cpu_spec(node, isolate);

	const json_t *feat = json_object_get(node, "features");
	const char *role_type = NULL;
	json_t *g, *v;
	size_t i;

	json_array_foreach(gres, i, g)
		if (!strcmp(json_string_value(json_object_get(g, "name")) ?: "", "gpu"))
			role_type = json_string_value(json_object_get(g, "type"));

	nf_buf_printf(b, "NodeName=%s", names);
	if (json_is_object(node))
		nf_buf_printf(b, " Sockets=%lld CoresPerSocket=%lld "
			      "ThreadsPerCore=%lld RealMemory=%lld",
			      (long long)json_integer_value(json_object_get(node, "sockets")),
			      (long long)json_integer_value(json_object_get(node, "cores_per_socket")),
			      (long long)json_integer_value(json_object_get(node, "threads_per_core")),
			      (long long)json_integer_value(json_object_get(node, "real_memory_mb")));
	json_array_foreach(gres, i, g) {
		const char *type = json_string_value(json_object_get(g, "type"));
		json_int_t n = json_integer_value(json_object_get(g, "count"));

		if (gpu_type && type && !strcmp(json_string_value(
			json_object_get(g, "name")) ?: "", "gpu"))
			type = gpu_type;
		nf_buf_printf(b, "%s%s%s%s:%lld", i ? "," : " Gres=",
			      json_string_value(json_object_get(g, "name")),
			      type ? ":" : "", type ? type : "",
			      (long long)(n ? n : 1));
	}
	json_array_foreach(feat, i, v) {
		const char *f = json_string_value(v);

		if (gpu_type && role_type && !strcmp(f, role_type))
			f = gpu_type;
		nf_buf_printf(b, "%s%s", i ? "," : " Feature=", f);
	}
	if (spec)
		nf_buf_printf(b, " CpuSpecList=%s", spec);
	free(spec);
	nf_buf_printf(b, " State=UNKNOWN\n");
}

static int bad_word(const char *s)
{
	return !s || !*s || strpbrk(s, " \t\n#=\"\\");
}

/* The nodes of a partition: its hostlist, the nodes of its roles, or
 * every node that runs slurmd; "" when the inventory has none of them */
static int partition_nodes(const json_t *roles, const json_t *p, struct nf_buf *out)
{
	const json_t *want = json_object_get(p, "roles");
	const char *nodes = json_string_value(json_object_get(p, "nodes"));
	size_t i, j;
	json_t *e, *w;

	out->len = 0;
	nf_buf_printf(out, "%s", "");
	if (nodes) {
		nf_buf_printf(out, "%s", nodes);
		return out->err ? -ENOMEM : 0;
	}
	json_array_foreach(roles, i, e) {
		const char *role = json_string_value(json_object_get(e, "role"));
		int in = !json_is_array(want);

		if (!json_is_true(json_object_get(e, "slurmd")))
			continue;
		json_array_foreach(want, j, w)
			in |= !strcmp(role, json_string_value(w) ?: "");
		if (in)
			nf_buf_printf(out, "%s%s", out->len ? "," : "",
				      json_string_value(json_object_get(e, "nodes")));
	}
	return out->err ? -ENOMEM : 0;
}

static int is_default(const json_t *p)
{
	const json_t *d = json_object_get(json_object_get(p, "options"), "Default");

	return json_is_true(d) ||
	       (json_is_string(d) && !strcasecmp(json_string_value(d), "yes"));
}

int nf_cluster_slurm_conf(struct nf_ctx *ctx, const json_t *cluster,
			  struct nf_buf *b)
{
	const json_t *roles = json_object_get(cluster, "roles");
	const json_t *dbd = json_object_get(cluster, "dbd");
	const json_t *site_parts = json_object_get(cluster, "partitions");
	json_t *declared = json_array(), *e, *p;
	struct nf_buf nodes = { 0 };
	int have_default = 0, r = 0;
	size_t i, j;

	if (!declared)
		return -ENOMEM;
	nf_buf_printf(b, "# Written by nodeforge from the inventory: the "
		      "cluster's controllers, nodes\n# and partitions.  "
		      "slurm.conf includes it; every node fetches it at boot.\n");
	json_array_foreach(json_object_get(cluster, "controllers"), i, e) {
		const char *name = json_string_value(json_object_get(e, "name"));
		const char *ip = json_string_value(json_object_get(e, "ip"));

		if ((r = nf_render_check(ctx, "slurm.conf", "controller", name,
					 NF_CHARS_NAME)) ||
		    (r = nf_render_check(ctx, "slurm.conf", "controller address",
					 ip, NF_CHARS_HOST)))
			goto out;
		nf_buf_printf(b, "SlurmctldHost=%s(%s)\n", name, ip);
	}
	if (dbd) {
		const char *name = json_string_value(json_object_get(dbd, "name"));

		if ((r = nf_render_check(ctx, "slurm.conf", "slurmdbd host",
					 name, NF_CHARS_NAME)))
			goto out;
		nf_buf_printf(b, "AccountingStorageHost=%s\n", name);
	}
	/* the site's partitions replace the profiles'; the profiles' are
	 * taken once each, by name */
	if (json_is_array(site_parts)) {
		json_array_extend(declared, (json_t *)site_parts);
	} else {
		json_array_foreach(roles, i, e)
			json_array_foreach(json_object_get(e, "partitions"), j, p) {
				const char *name = json_string_value(json_object_get(p, "name"));
				size_t k;
				json_t *q;
				int seen = !name;

				json_array_foreach(declared, k, q)
					seen |= !strcmp(name, json_string_value(
						json_object_get(q, "name")));
				if (!seen)
					json_array_append(declared, p);
			}
	}
	json_array_foreach(declared, i, p) {
		if ((r = partition_nodes(roles, p, &nodes)))
			goto out;
		have_default |= nodes.len && is_default(p);
	}
	json_array_foreach(roles, i, e) {
		const char *names = json_string_value(json_object_get(e, "nodes"));

		if (!json_is_true(json_object_get(e, "slurmd")))
			continue;
		if (bad_word(names)) {
			r = nf_fail(ctx, NF_E_INVALID, "inventory node names '%s' "
				    "cannot go into slurm.conf", names ? names : "");
			goto out;
		}
		{
			const char *untyped = json_string_value(json_object_get(e, "untyped"));
			const char *isolate = json_string_value(json_object_get(e, "isolate"));
			const char *type;
			json_t *tn;

			if (untyped && *untyped)
				node_line(b, untyped, json_object_get(e, "node"),
					  json_object_get(e, "gres"), NULL, isolate);
			json_object_foreach(json_object_get(e, "gpu_types"), type, tn)
				node_line(b, json_string_value(tn), json_object_get(e, "node"),
					  json_object_get(e, "gres"), type, isolate);
		}
	}
	/* one partition per slurmd role that no partition is named after */
	json_array_foreach(roles, i, e) {
		const char *role = json_string_value(json_object_get(e, "role"));
		int named = 0;

		if (!json_is_true(json_object_get(e, "slurmd")))
			continue;
		json_array_foreach(declared, j, p)
			named |= !strcmp(role, json_string_value(
				json_object_get(p, "name")) ?: "");
		if (named)
			continue;
		nf_buf_printf(b, "PartitionName=%s Nodes=%s%s MaxTime=INFINITE "
			      "State=UP\n", role,
			      json_string_value(json_object_get(e, "nodes")),
			      have_default ? "" : " Default=YES");
		have_default = 1;
	}
	json_array_foreach(declared, i, p) {
		const char *name = json_string_value(json_object_get(p, "name"));
		const char *k;
		json_t *o;

		if ((r = partition_nodes(roles, p, &nodes)))
			goto out;
		if (bad_word(name) || (nodes.len && bad_word(nodes.s))) {
			r = nf_fail(ctx, NF_E_INVALID, "partition '%s' (nodes '%s') "
				    "cannot go into slurm.conf", name ?: "",
				    nodes.len ? nodes.s : "");
			goto out;
		}
		/* Slurm takes a partition without nodes, but one that no
		 * job can run in only misleads sinfo's reader */
		if (!nodes.len) {
			nf_buf_printf(b, "# partition %s: the inventory has no "
				      "node of its roles\n", name);
			continue;
		}
		nf_buf_printf(b, "PartitionName=%s Nodes=%s", name, nodes.s);
		json_object_foreach(json_object_get(p, "options"), k, o) {
			if (bad_word(k) || (json_is_string(o) &&
			    strpbrk(json_string_value(o), "\n\"#"))) {
				r = nf_fail(ctx, NF_E_INVALID, "partition %s: "
					    "option %s has a value Slurm's "
					    "config syntax cannot hold", name, k);
				goto out;
			}
			kv(b, k, o);
		}
		nf_buf_printf(b, "\n");
	}
out:
	nf_buf_free(&nodes);
	json_decref(declared);
	return r ? r : (b->err ? -ENOMEM : 0);
}

int nf_cluster_hosts(const json_t *cluster, const char *domain, struct nf_buf *b)
{
	size_t i;
	json_t *e;

	nf_buf_printf(b, "# nodeforge cluster hosts (from the inventory)\n");
	json_array_foreach(json_object_get(cluster, "hosts"), i, e) {
		const char *name = json_string_value(json_object_get(e, "name"));
		const char *ip = json_string_value(json_object_get(e, "ip"));

		if (domain && *domain)
			nf_buf_printf(b, "%s\t%s.%s %s\n", ip, name, domain, name);
		else
			nf_buf_printf(b, "%s\t%s\n", ip, name);
	}
	nf_buf_printf(b, "# end of nodeforge cluster hosts\n");
	return b->err ? -ENOMEM : 0;
}

int nf_cluster_render(struct nf_ctx *ctx, const char *inventory,
		      const struct nf_site *site, char **slurm_conf, char **hosts)
{
	const json_t *prov = json_object_get(json_object_get(
		site_json(site), "networks"), "provisioning");
	struct nf_buf s = { 0 }, h = { 0 };
	json_t *cl = NULL;
	int r;

	*slurm_conf = *hosts = NULL;
	if (json_string_value(json_object_get(prov, "domain")) &&
	    (r = nf_render_check(ctx, "the cluster's hosts file", "domain",
				 json_string_value(json_object_get(prov, "domain")),
				 NF_CHARS_NAME)))
		return r;
	if ((r = nf_cluster_load(ctx, inventory, site, &cl)))
		return r;
	if (!(r = nf_cluster_slurm_conf(ctx, cl, &s)) &&
	    !(r = nf_cluster_hosts(cl, json_string_value(json_object_get(prov, "domain")),
				   &h))) {
		*slurm_conf = s.s;
		*hosts = h.s;
	} else {
		nf_buf_free(&s);
		nf_buf_free(&h);
	}
	json_decref(cl);
	return r;
}
