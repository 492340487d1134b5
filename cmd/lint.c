/* SPDX-License-Identifier: MIT */
/* nodeforge lint: profiles, site and inventory, with best practices */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cmd.h"

static int cmd_lint(struct nf_global *g, int argc, char **argv);

const struct nf_cmd nf_cmd_lint = {
	.name = "lint",
	.summary = "check profiles, site and inventory",
	.help = "usage: nodeforge lint [--site FILE] [--inventory FILE] [ROLE...]\n"
		"\n"
		"Check the profiles (every role, or the ROLEs named), the site file\n"
		"and an inventory: syntax, types, unknown keys, inheritance, and the\n"
		"cluster's Slurm best practices (select/cons_tres, proctrack/cgroup,\n"
		"task/affinity,task/cgroup, AccountingStorageEnforce=safe,\n"
		"PrologFlags=contain with pam_slurm_adopt, typed GRES, NVLink Links=,\n"
		"hugepages below RealMemory, isolate_cpus within the CPU count).\n"
		"\n"
		"Prints one line per finding: FILE:LINE:COL: error|warning: MESSAGE\n"
		"\n"
		"Options:\n"
		"  -s, --site FILE        the site file to check (nodeforge -s FILE)\n"
		"  -i, --inventory FILE   also check an inventory (racks.yaml)\n"
		"  --json                 findings as JSON\n"
		"\n"
		"Exit status: 0 no errors (warnings allowed), 3 errors found,\n"
		"1 a file could not be read.\n",
	.run = cmd_lint,
};

/* A failure that left no finding is one lint could not check: it must not
 * end as "no errors" */
static void lint_io_error(struct nf_global *g, int r, int *io_error)
{
	fprintf(stderr, "nodeforge lint: %s\n", nf_error_text(g->ctx, r));
	*io_error = 1;
}

/* nf_profile_resolve refuses a partial profile (abstract: true) as a role
 * with NF_E_INVALID and no finding; every other NF_E_INVALID comes with
 * its finding */
static int is_partial(int r)
{
	return r == NF_E_INVALID;
}

static int lint_profile_files(struct nf_global *g, struct nf_diags *d,
			      int *io_error)
{
	char **names;
	size_t n;
	int r = nf_profile_list(g->ctx, &names, &n);

	if (r) {
		fprintf(stderr, "nodeforge lint: %s\n", nf_error_text(g->ctx, r));
		*io_error = 1;
		return 0;
	}
	if (!n)
		nf_diag_add(d, nf_ctx_profiles_dir(g->ctx), 0, 0, NF_SEV_ERROR,
			    "no profiles (*.yaml) in this directory");
	for (size_t i = 0; i < n; i++) {
		struct nf_profile *p = NULL;
		struct nf_diags pd;

		nf_diags_init(&pd);
		r = nf_profile_resolve(g->ctx, names[i], g->site, &p, &pd);
		/* a partial profile is checked through the roles that use it,
		 * and by itself for syntax and schema */
		for (size_t k = 0; k < pd.n; k++)
			nf_diag_add(d, pd.v[k].file, pd.v[k].line, pd.v[k].col,
				    pd.v[k].severity, "%s", pd.v[k].message);
		if (r == 0)
			nf_profile_lint(g->ctx, p, d);
		else if (!nf_diags_errors(&pd) && !is_partial(r))
			lint_io_error(g, r, io_error);
		nf_diags_free(&pd);
		nf_profile_free(p);
	}
	nf_strv_free(names, n);
	return 0;
}

/* Drop exact duplicates (a partial profile's finding is seen by each role) */
static void dedup(struct nf_diags *d)
{
	size_t out = 0;

	for (size_t i = 0; i < d->n; i++) {
		int dup = 0;

		for (size_t j = 0; j < out && !dup; j++)
			dup = d->v[j].line == d->v[i].line &&
			      d->v[j].col == d->v[i].col &&
			      !strcmp(d->v[j].file, d->v[i].file) &&
			      !strcmp(d->v[j].message, d->v[i].message);
		if (dup) {
			free(d->v[i].file);
			free(d->v[i].message);
		} else {
			d->v[out++] = d->v[i];
		}
	}
	d->n = out;
}

/* The small VM of the cluster test (profiles/cpu.yaml): on a site other
 * than that test's, a real node declared so is drained by Slurm, or runs
 * jobs on a fraction of its hardware */
static int test_vm_shape(const char *nodeline)
{
	return strstr(nodeline, " CoresPerSocket=2 ") &&
	       strstr(nodeline, " RealMemory=1024 ");
}

static void lint_node_shapes(struct nf_global *g, const char *inventory,
			     const char *conf, struct nf_diags *d)
{
	const char *cluster = json_string_value(json_object_get(
		nf_site_json(g->site), "cluster"));

	if (cluster && !strcmp(cluster, "test"))
		return;
	for (const char *l = conf; l && *l; l += strcspn(l, "\n") + !!l[strcspn(l, "\n")]) {
		size_t len = strcspn(l, "\n");
		char line[1024];

		if (strncmp(l, "NodeName=", 9))
			continue;
		snprintf(line, sizeof(line), "%.*s", (int)len, l);
		if (test_vm_shape(line))
			nf_diag_add(d, inventory, 0, 0, NF_SEV_WARNING,
				    "'%.*s' declares the cluster test's VM "
				    "(CoresPerSocket=2 RealMemory=1024) on site "
				    "'%s': Slurm drains a real node that has more "
				    "or less; declare its hardware in the role's "
				    "slurm.node", (int)strcspn(line, " "), line,
				    cluster ? cluster : "?");
	}
}

static int cmd_lint(struct nf_global *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "inventory", required_argument, NULL, 'i' },
		{ 0 }
	};
	const char *inventory = NULL;
	struct nf_diags d;
	struct nf_emit *e;
	int o, io_error = 0, cluster_error = 0, r;
	size_t errors;

	while ((o = nf_getopt(&nf_cmd_lint, argc, argv, "i:", opts)) != -1) {
		if (o == -2)
			return 0;
		if (o == 'i')
			inventory = optarg;
		else
			return NF_EXIT_USAGE;
	}
	nf_diags_init(&d);
	r = nf_site_load(g->ctx, g->site_path, &g->site, &d);
	/* a site that cannot be read: linting the profiles without it
	 * would report what the embedded site lacks, not this one */
	if (r && !d.n) {
		fprintf(stderr, "nodeforge lint: %s\n", nf_error_text(g->ctx, r));
		nf_diags_free(&d);
		return NF_EXIT_FAILURE;
	}
	if (optind < argc) {
		for (int i = optind; i < argc; i++) {
			struct nf_profile *p = NULL;
			size_t before = nf_diags_errors(&d);

			r = nf_profile_resolve(g->ctx, argv[i], g->site, &p, &d);
			if (r == 0)
				nf_profile_lint(g->ctx, p, &d);
			else if (nf_diags_errors(&d) == before)
				lint_io_error(g, r, &io_error);
			nf_profile_free(p);
		}
	} else {
		lint_profile_files(g, &d, &io_error);
	}
	if (inventory) {
		struct nf_inventory *inv = NULL;
		size_t before = d.n;

		r = nf_inventory_load(g->ctx, inventory, g->site, &inv, &d);
		if (r && d.n == before) {
			fprintf(stderr, "nodeforge lint: %s\n", nf_error_text(g->ctx, r));
			io_error = 1;
		}
		nf_inventory_free(inv);
		/* the cluster it makes: controllers, one slurm.conf for all */
		if (!r && !nf_diags_errors(&d)) {
			char *conf = NULL, *hosts = NULL;

			r = nf_cluster_render(g->ctx, inventory, g->site, &conf, &hosts);
			if (r && r != -ENOENT) {
				fprintf(stderr, "nodeforge lint: %s\n", nf_error_text(g->ctx, r));
				cluster_error = 1;
			} else if (r) {
				/* a finding like any other: counted, in --json */
				nf_diag_add(&d, inventory, 0, 0, NF_SEV_WARNING, "%s",
					    nf_error_text(g->ctx, r));
			} else {
				lint_node_shapes(g, inventory, conf, &d);
			}
			free(conf);
			free(hosts);
		}
	}
	dedup(&d);
	nf_diags_sort(&d);
	errors = nf_diags_errors(&d);
	/* lint's --json is the diagnostics, errors or not */
	nf_emit_new(&e, g->json ? stdout : stderr, g->json);
	nf_emit_diags(e, &d);
	nf_emit_int(e, "errors", NULL, (long long)errors);
	nf_emit_int(e, "warnings", NULL, (long long)(d.n - errors));
	nf_emit_end(e);
	nf_emit_free(e);
	if (!g->json && !g->quiet && !errors && !io_error && !cluster_error)
		printf("lint: no errors (%zu warnings)\n", d.n);
	nf_diags_free(&d);
	if (errors || cluster_error)
		return NF_EXIT_FINDINGS;
	return io_error ? NF_EXIT_FAILURE : 0;
}
