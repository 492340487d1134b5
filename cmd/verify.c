/* SPDX-License-Identifier: MIT */
/* nodeforge verify: the node's prerequisites, checked against its profile */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cmd.h"

static int cmd_verify(struct nf_global *g, int argc, char **argv);

const struct nf_cmd nf_cmd_verify = {
	.name = "verify",
	.summary = "check a node (or an image root) against its role profile",
	.help = "usage: nodeforge verify [--role R | --profile FILE] [--root DIR]\n"
		"                        [--sysroot DIR] [--json] [--junit FILE]\n"
		"                        [--budget SECONDS] [--gate] [--health]\n"
		"\n"
		"Run every check of the node's role and print the failures, root\n"
		"causes first, each with what was expected, what was seen and a\n"
		"remedy.  Exit 0 when all pass, 3 when any check fails or hangs.\n"
		"\n"
		"Options:\n"
		"  --role R          resolve role R from the profiles (-C, --site)\n"
		"  --profile FILE    a resolved profile (default: ROOT/etc/nodeforge/profile.json)\n"
		"  --root DIR        the node's files; alone, an image tree: only the\n"
		"                    checks decidable offline run (static mode)\n"
		"  --sysroot DIR     read /proc and /sys (and, without --root, the\n"
		"                    node's files) from DIR, a recorded tree\n"
		"  --fixture FILE    answer NVML, adjtimex, cgroup2 and external\n"
		"                    commands from a JSON fixture (tests)\n"
		"  --budget SECONDS  the whole run's time budget (default 10)\n"
		"  --only ID         run only the checks of a facet or an id prefix\n"
		"  --junit FILE      also write JUnit XML (image CI)\n"
		"  --gate            first-boot mode: write the verdict to\n"
		"                    ROOT/run/nodeforge/verdict.json (or --verdict FILE),\n"
		"                    the login banner, and POST it to nodeforge.server=\n"
		"                    from the kernel command line\n"
		"  --health          HealthCheckProgram mode: drain the node on a failure\n"
		"                    with reason \"nodeforge: <root cause>\"; resume it on\n"
		"                    a pass when it drained it itself\n"
		"  -v                also list the checks that passed\n"
		"  --json            the verdict document\n",
	.run = cmd_verify,
};

int nf_verify_cli_opt(const char *cmd, struct nf_verify_cli *vc, int o,
		      const char *arg)
{
	char *end;
	double s;

	switch (o) {
	case 'r': vc->role = arg; return 1;
	case 'p': vc->profile = arg; return 1;
	case 'R': vc->o.root = arg; return 1;
	case 'S': vc->o.sysroot = arg; return 1;
	case 'F': vc->o.fixture = arg; return 1;
	case 'o': vc->o.only = arg; return 1;
	case 'V': vc->verdict = arg; return 1;
	case 'b':
		errno = 0;
		s = strtod(arg, &end);
		if (errno || end == arg || *end || s <= 0 || s > 3600) {
			nf_usage_error(cmd, "bad --budget '%s': seconds, 0 < S <= 3600", arg);
			return 2;
		}
		vc->o.budget_ms = (unsigned)(s * 1000 + 0.5);
		if (!vc->o.budget_ms)
			vc->o.budget_ms = 1;
		return 1;
	}
	return 0;
}

static int load_profile(struct nf_global *g, const char *cmd,
			struct nf_verify_cli *vc, struct nf_profile **p)
{
	char path[PATH_MAX];
	int r;

	if (vc->role) {
		struct nf_site *site = NULL;
		struct nf_diags d;

		nf_diags_init(&d);
		r = nf_site_load(g->ctx, g->site_path, &site, &d);
		/* the site's warnings are lint's to show */
		if (!r) {
			nf_diags_free(&d);
			nf_diags_init(&d);
			r = nf_profile_resolve(g->ctx, vc->role, site, p, &d);
		}
		nf_diags_sort(&d);
		nf_print_diags(g, &d);
		nf_diags_free(&d);
		nf_site_free(site);
		if (r)
			fprintf(stderr, "nodeforge %s: %s\n", cmd, nf_errmsg(g->ctx));
		return r;
	}
	if (!vc->profile) {
		const char *root = vc->o.root ? vc->o.root
				   : vc->o.sysroot ? vc->o.sysroot : "";

		snprintf(path, sizeof(path), "%s/etc/nodeforge/profile.json",
			 strcmp(root, "/") ? root : "");
		vc->profile = path;
	}
	r = nf_profile_load_json(g->ctx, vc->profile, p);
	if (r)
		fprintf(stderr, "nodeforge %s: %s\n", cmd, nf_errmsg(g->ctx));
	if (vc->profile == path)
		vc->profile = NULL;
	return r;
}

static void render_text(struct nf_global *g, struct nf_emit *e,
			const struct nf_verify *v, const char *role)
{
	size_t n = nf_verify_count(v), shown = 0;

	for (size_t i = 0; i < n; i++) {
		const struct nf_check_result *c = nf_verify_result(v, i);
		const char *why = c->verdict == NF_V_FAIL || c->verdict == NF_V_WARN
				  ? c->seen : c->reason;

		if (c->verdict == NF_V_PASS && !g->verbose)
			continue;
		if (c->verdict == NF_V_SKIP && !c->cause && !g->verbose)
			continue;
		if (!shown++)
			nf_emit_text(e, "%-5s %-34s %s\n", "", "CHECK", "SEEN / WHY");
		nf_emit_text(e, "%-5s %-34s %s", nf_verdict_name(c->verdict), c->id,
			     why ? why : c->verdict == NF_V_PASS && c->seen ? c->seen : "");
		if (c->verdict == NF_V_FAIL && c->expected)
			nf_emit_text(e, " (expected %s)", c->expected);
		nf_emit_text(e, "\n");
		if (c->verdict != NF_V_PASS && c->verdict != NF_V_SKIP && c->remedy)
			nf_emit_text(e, "%-5s %-34s -> %s\n", "", "", c->remedy);
	}
	nf_emit_text(e, "%s: %s: %zu passed, %zu failed, %zu hung, %zu skipped",
		     role, nf_verify_passed(v) ? "PASS" : "FAIL",
		     nf_verify_tally(v, NF_V_PASS), nf_verify_tally(v, NF_V_FAIL),
		     nf_verify_tally(v, NF_V_HUNG), nf_verify_tally(v, NF_V_SKIP));
	if (nf_verify_tally(v, NF_V_WARN))
		nf_emit_text(e, ", %zu warned", nf_verify_tally(v, NF_V_WARN));
	nf_emit_text(e, "\n");
}

int nf_verify_cli_run(struct nf_global *g, const char *cmd, struct nf_verify_cli *vc)
{
	struct nf_profile *p = NULL;
	struct nf_verify *v = NULL;
	struct nf_emit *e = NULL;
	json_t *doc;
	int r, rc;

	if (vc->role && vc->profile)
		return nf_usage_error(cmd, "--role and --profile exclude each other");
	if (load_profile(g, cmd, vc, &p))
		return NF_EXIT_FAILURE;
	r = nf_verify_run(g->ctx, p, &vc->o, &v);
	if (r) {
		nf_profile_free(p);
		if (r == NF_E_USAGE)
			return nf_usage_error(cmd, "%s", nf_errmsg(g->ctx));
		return nf_cmd_fail(g, cmd, r);
	}
	doc = nf_verify_json(v);
	rc = nf_verify_passed(v) ? NF_EXIT_OK : NF_EXIT_FINDINGS;
	if (vc->junit && nf_verify_write_junit(g->ctx, v, vc->junit)) {
		fprintf(stderr, "nodeforge %s: %s\n", cmd, nf_errmsg(g->ctx));
		rc = NF_EXIT_FAILURE;
	}
	if (vc->gate && nf_verify_publish(g->ctx, v, &vc->o, vc->verdict)) {
		fprintf(stderr, "nodeforge %s: %s\n", cmd, nf_errmsg(g->ctx));
		rc = NF_EXIT_FAILURE;
	}
	if (vc->health) {
		const char *action = "none";

		if (nf_verify_health(g->ctx, v, &vc->o, &action)) {
			fprintf(stderr, "nodeforge %s: %s\n", cmd, nf_errmsg(g->ctx));
			rc = NF_EXIT_FAILURE;
		}
		json_object_set_new(doc, "health_action", json_string(action));
	}
	if (!g->quiet || g->json) {
		nf_emit_new(&e, stdout, g->json);
		if (g->json) {
			const char *k;
			json_t *x;

			json_object_foreach(doc, k, x)
				nf_emit_json(e, k, x);
		} else {
			render_text(g, e, v, nf_profile_name(p));
		}
		nf_emit_end(e);
		nf_emit_free(e);
	}
	json_decref(doc);
	nf_verify_free(v);
	nf_profile_free(p);
	return rc;
}

static int cmd_verify(struct nf_global *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		NF_VERIFY_LONGOPTS,
		{ "junit", required_argument, NULL, 'j' },
		{ "gate", no_argument, NULL, 'g' },
		{ "health", no_argument, NULL, 'H' },
		{ 0 }
	};
	struct nf_verify_cli vc = { 0 };
	int o, t;

	while ((o = nf_getopt(&nf_cmd_verify, argc, argv, "", opts)) != -1) {
		if (o == -2)
			return 0;
		if (o == -3)
			return NF_EXIT_USAGE;
		if ((t = nf_verify_cli_opt("verify", &vc, o, optarg)) == 2)
			return NF_EXIT_USAGE;
		if (t)
			continue;
		if (o == 'j')
			vc.junit = optarg;
		else if (o == 'g')
			vc.gate = true;
		else if (o == 'H')
			vc.health = true;
		else
			return NF_EXIT_USAGE;
	}
	if (optind < argc)
		return nf_usage_error("verify", "unexpected argument '%s'", argv[optind]);
	return nf_verify_cli_run(g, "verify", &vc);
}
