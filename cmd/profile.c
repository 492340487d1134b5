/* SPDX-License-Identifier: MIT */
/* nodeforge profile list | show ROLE */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cmd.h"

static int cmd_profile(struct nf_global *g, int argc, char **argv);

const struct nf_cmd nf_cmd_profile = {
	.name = "profile",
	.summary = "list role profiles, show a resolved profile",
	.help = "usage: nodeforge profile list [--json]\n"
		"       nodeforge profile show ROLE [--json] [--args]\n"
		"\n"
		"list   the profiles in the profiles directory (-C DIR): roles, partial\n"
		"       profiles (abstract: true) and broken ones, with their first error\n"
		"show   the role's profile after inheritance, with the site applied,\n"
		"       as YAML; with --json, as the JSON document a build writes to\n"
		"       /etc/nodeforge/profile.json\n"
		"\n"
		"Options:\n"
		"  --args   print only the kernel command line the role boots with\n"
		"  --json   machine-readable output\n"
		"\n"
		"Exit status: 0 ok, 1 cannot read, 2 usage error (ROLE names no role),\n"
		"3 the profile has errors (FILE:LINE:COL: error: MESSAGE); list: 3 when a\n"
		"profile is broken.\n",
	.run = cmd_profile,
};

static int profile_list(struct nf_global *g)
{
	struct nf_emit *e;
	char **names;
	size_t n, broken = 0;
	int r;

	r = nf_profile_list(g->ctx, &names, &n);
	if (r)
		return nf_cmd_fail(g, "profile", r);
	nf_emit_new(&e, stdout, g->json);
	nf_emit_arr_open(e, "profiles");
	for (size_t i = 0; i < n; i++) {
		struct nf_profile *p = NULL;
		struct nf_diags d;
		int rr, role;
		const char *kind, *desc;
		char why[512] = "";

		nf_diags_init(&d);
		rr = nf_profile_resolve(g->ctx, names[i], g->site, &p, &d);
		role = rr == 0;
		/* a partial profile resolves without a finding; one that does
		 * not load is broken, with its first finding */
		kind = role ? "role" : (rr == NF_E_INVALID && !nf_diags_errors(&d))
					? "partial" : "broken";
		desc = role ? json_string_value(json_object_get(nf_profile_json(p),
								"description")) : NULL;
		if (!strcmp(kind, "broken")) {
			broken++;
			if (d.n)
				snprintf(why, sizeof(why), "%s:%u:%u: %s",
					 d.v[0].file, d.v[0].line, d.v[0].col,
					 d.v[0].message);
			else
				snprintf(why, sizeof(why), "%s", nf_error_text(g->ctx, rr));
			desc = why;
		}
		nf_emit_obj_open(e, NULL);
		nf_emit_str(e, "name", "%-12s ", names[i]);
		nf_emit_str(e, "kind", "%-8s ", kind);
		nf_emit_str(e, "description", "%s\n", desc ? desc : "");
		nf_emit_obj_close(e);
		nf_profile_free(p);
		/* listed: what it failed with is said, and goes */
		nf_clear_error(g->ctx);
		nf_diags_free(&d);
	}
	nf_emit_arr_close(e);
	nf_emit_end(e);
	nf_emit_free(e);
	nf_strv_free(names, n);
	/* a profile that does not load is a finding ('lint' says all) */
	return broken ? NF_EXIT_FINDINGS : 0;
}

static int profile_show(struct nf_global *g, const char *role, int args_only)
{
	struct nf_profile *p;
	struct nf_diags d;
	struct nf_emit *e;
	int r, rc = 0;

	nf_diags_init(&d);
	r = nf_profile_resolve(g->ctx, role, g->site, &p, &d);
	if (r) {
		size_t nd = d.n;

		/* findings in the files (file:line:col) once, exit 3; a
		 * role that does not exist or a partial one: a usage error
		 * naming the roles; an I/O error: 1 */
		nf_diags_sort(&d);
		nf_print_diags(g, &d);
		nf_diags_free(&d);
		if (nd)
			return NF_EXIT_FINDINGS;
		if (r == NF_E_NOTFOUND || r == NF_E_INVALID)
			return nf_usage_error("profile", "%s", nf_error_text(g->ctx, r));
		fprintf(stderr, "nodeforge profile: %s\n", nf_error_text(g->ctx, r));
		return NF_EXIT_FAILURE;
	}
	nf_diags_free(&d);
	nf_emit_new(&e, stdout, g->json);
	if (args_only) {
		char *s = NULL;

		if (nf_profile_kernel_args(g->ctx, p, &s) == 0) {
			if (g->json)
				nf_emit_json(e, "boot_args",
					     json_object_get(nf_profile_json(p), "boot_args"));
			else
				printf("%s\n", s);
		}
		free(s);
	} else if (g->json) {
		json_t *j = (json_t *)nf_profile_json(p);
		const char *k;
		json_t *v;

		json_object_foreach(j, k, v)
			nf_emit_json(e, k, v);
	} else if ((r = nf_yaml_write(g->ctx, nf_profile_json(p), stdout))) {
		rc = nf_cmd_fail(g, "profile", r);
	}
	nf_emit_end(e);
	nf_emit_free(e);
	nf_profile_free(p);
	return rc;
}

static int cmd_profile(struct nf_global *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "args", no_argument, NULL, 'a' },
		{ 0 }
	};
	int o, args_only = 0;

	while ((o = nf_getopt(&nf_cmd_profile, argc, argv, "", opts)) != -1) {
		if (o == -2)
			return 0;
		if (o == 'a')
			args_only = 1;
		else
			return NF_EXIT_USAGE;
	}
	if (optind >= argc)
		return nf_usage_error("profile", "missing subcommand: list or show");
	if (!strcmp(argv[optind], "list")) {
		if (optind + 1 != argc)
			return nf_usage_error("profile", "unexpected argument '%s'",
					      argv[optind + 1]);
		return profile_list(g);
	}
	if (!strcmp(argv[optind], "show")) {
		/* options may follow the role */
		int rest = optind + 1;
		const char *role = NULL;

		for (int i = rest; i < argc; i++) {
			if (!strcmp(argv[i], "--args"))
				args_only = 1;
			else if (argv[i][0] == '-')
				return nf_usage_error("profile", "unknown option '%s'",
						      argv[i]);
			else if (role)
				return nf_usage_error("profile", "unexpected argument '%s'",
						      argv[i]);
			else
				role = argv[i];
		}
		if (!role)
			return nf_usage_error("profile", "show needs a ROLE");
		return profile_show(g, role, args_only);
	}
	return nf_usage_error("profile", "unknown subcommand '%s'", argv[optind]);
}
