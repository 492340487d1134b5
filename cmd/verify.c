/* SPDX-License-Identifier: MIT */
/* nodeforge verify: the node's prerequisites, checked against its profile */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "cmd.h"

/* the pause before --gate asks again the checks that gave no answer */
#define GATE_RETRY_PAUSE_S 2

static int cmd_verify(struct nf_global *g, int argc, char **argv);

const struct nf_cmd nf_cmd_verify = {
	.name = "verify",
	.summary = "check a node (or an image root) against its role profile",
	.help = "usage: nodeforge verify [--role R | --profile FILE] [--root DIR]\n"
		"                        [--sysroot DIR] [--json] [--junit FILE]\n"
		"                        [--budget SECONDS] [--gate] [--health]\n"
		"                        [--no-pager]\n"
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
		"  --only ID[,ID..]  run only the checks of these facets or id prefixes\n"
		"  --junit FILE      also write JUnit XML (image CI)\n"
		"  --gate            first-boot mode: write the verdict to\n"
		"                    ROOT/run/nodeforge/verdict.json (or --verdict FILE),\n"
		"                    the login banner, and POST it to nodeforge.server=\n"
		"                    from the kernel command line; a probe that gave\n"
		"                    no answer is asked again once, with every check\n"
		"  --health          HealthCheckProgram mode: drain the node on a failure\n"
		"                    with reason \"nodeforge: <root cause>\"; resume it on\n"
		"                    a pass when it drained it itself\n"
		"  -v                every check, the ones that passed too, nothing\n"
		"                    shortened\n"
		"  --json            the verdict document (never shortened)\n"
		"  --no-pager        print straight to the terminal; otherwise a report\n"
		"                    to a terminal goes through $NODEFORGE_PAGER, else\n"
		"                    $PAGER, else 'less -FRX' (never when piped)\n"
		"\n"
		"Exit status: 0 every check passed (or was skipped for its own reason, or\n"
		"warned), 3 a check failed or hung, 1 the run could not happen (no profile,\n"
		"unreadable root), 2 usage error.\n",
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
		int usage;

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
		/* --role names no role (none such, or a partial profile): a
		 * usage error, the roles named in the message */
		usage = r == NF_E_NOTFOUND ||
			(r == NF_E_INVALID && !nf_diags_errors(&d));
		nf_diags_free(&d);
		nf_site_free(site);
		if (r && usage)
			return nf_usage_error(cmd, "%s", nf_error_text(g->ctx, r));
		if (r)
			fprintf(stderr, "nodeforge %s: %s\n", cmd, nf_error_text(g->ctx, r));
		return r ? NF_EXIT_FAILURE : 0;
	}
	if (!vc->profile) {
		const char *root = vc->o.root ? vc->o.root
				   : vc->o.sysroot ? vc->o.sysroot : "";

		snprintf(path, sizeof(path), "%s/etc/nodeforge/profile.json",
			 strcmp(root, "/") ? root : "");
		vc->profile = path;
	}
	r = nf_profile_load_json(g->ctx, vc->profile, p);
	/* no identity where a build writes it: not a node image, which
	 * is the one thing to say (every check would fail after it) */
	if (r == -ENOENT && vc->profile == path)
		fprintf(stderr, "nodeforge %s: this is not a nodeforge node image: "
			"it has no '%s' (the identity every image is built "
			"with); check a machine against a role with --role ROLE\n",
			cmd, path);
	else if (r)
		fprintf(stderr, "nodeforge %s: %s\n", cmd, nf_error_text(g->ctx, r));
	if (vc->profile == path)
		vc->profile = NULL;
	return r ? NF_EXIT_FAILURE : 0;
}

/* 0 when the pager command's program (its first word) is not there: a
 * minimal node image has no less, and a pager that cannot start would
 * take the report with it.  A first word the shell must read (an
 * assignment, a quote) is the shell's to run. */
static int pager_present(const char *pg)
{
	char prog[256], cand[PATH_MAX];
	size_t n = strcspn(pg, " \t");

	if (n >= sizeof(prog) || strcspn(pg, "=\"'$\\") < n)
		return 1;
	memcpy(prog, pg, n);
	prog[n] = '\0';
	return nf_which(prog, cand, sizeof(cand)) != NULL;
}

/* The report through a pager when it goes to a terminal: $NODEFORGE_PAGER,
 * else $PAGER, else "less -FRX" (one screen or less: printed as is; colour
 * kept; the screen not cleared); "" or "cat" is none, and so is a pager
 * whose program is not there.  Returns the pager's pid with stdout now its
 * pipe, or 0 (stdout as it was) */
static pid_t pager_start(void)
{
	const char *pg = getenv("NODEFORGE_PAGER");
	int fd[2];
	pid_t pid;

	if (!isatty(STDOUT_FILENO))
		return 0;
	if (!pg)
		pg = getenv("PAGER");
	if (!pg)
		pg = "less -FRX";
	if (!*pg || !strcmp(pg, "cat") || !pager_present(pg) || pipe(fd) < 0)
		return 0;
	fflush(stdout);
	if ((pid = fork()) < 0) {
		close(fd[0]);
		close(fd[1]);
		return 0;
	}
	if (pid == 0) {
		dup2(fd[0], STDIN_FILENO);
		close(fd[0]);
		close(fd[1]);
		/* less: keep the colour, quit when it all fits */
		setenv("LESS", "FRX", 0);
		execl("/bin/sh", "sh", "-c", pg, (char *)NULL);
		fprintf(stderr, "nodeforge: cannot run pager '%s': %s\n", pg,
			strerror(errno));
		_exit(127);
	}
	close(fd[0]);
	/* the reader may quit before the end: a short write, not a signal */
	signal(SIGPIPE, SIG_IGN);
	dup2(fd[1], STDOUT_FILENO);
	close(fd[1]);
	return pid;
}

/* Close the pager's pipe and wait until the reader is done */
static void pager_end(pid_t pid)
{
	int st;

	if (!pid)
		return;
	fflush(stdout);
	close(STDOUT_FILENO);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
}

int nf_verify_cli_run(struct nf_global *g, const char *cmd, struct nf_verify_cli *vc)
{
	struct nf_profile *p = NULL;
	struct nf_verify *v = NULL;
	struct nf_emit *e = NULL;
	json_t *doc;
	size_t hung;
	int r, rc;

	if (vc->role && vc->profile)
		return nf_usage_error(cmd, "--role and --profile exclude each other");
	if ((vc->o.root &&
	     (r = nf_cmd_path_arg(cmd, "--root", vc->o.root, 0))) ||
	    (vc->o.sysroot &&
	     (r = nf_cmd_path_arg(cmd, "--sysroot", vc->o.sysroot, 0))))
		return r;
	if ((rc = load_profile(g, cmd, vc, &p)))
		return rc;
	r = nf_verify_run(g->ctx, p, &vc->o, &v);
	if (!r && vc->gate && (hung = nf_verify_tally(v, NF_V_HUNG))) {
		/* at first boot the node is at its busiest (systemd still
		 * starting units): a probe that gave no answer is asked again,
		 * once, with every check after it, before the gate fails the
		 * node on it */
		struct nf_verify *again = NULL;

		fprintf(stderr, "nodeforge %s: %zu check%s gave no answer; "
			"verifying again\n", cmd, hung, hung == 1 ? "" : "s");
		sleep(GATE_RETRY_PAUSE_S);
		r = nf_verify_run(g->ctx, p, &vc->o, &again);
		nf_verify_free(v);
		v = again;
	}
	if (r) {
		nf_profile_free(p);
		if (r == NF_E_USAGE)
			return nf_usage_error(cmd, "%s", nf_error_text(g->ctx, r));
		return nf_cmd_fail(g, cmd, r);
	}
	doc = nf_verify_json(v);
	rc = nf_verify_passed(v) ? NF_EXIT_OK : NF_EXIT_FINDINGS;
	if (vc->junit && (r = nf_verify_write_junit(g->ctx, v, vc->junit))) {
		fprintf(stderr, "nodeforge %s: %s\n", cmd, nf_error_text(g->ctx, r));
		rc = NF_EXIT_FAILURE;
	}
	if (vc->gate && (r = nf_verify_publish(g->ctx, v, &vc->o, vc->verdict))) {
		fprintf(stderr, "nodeforge %s: %s\n", cmd, nf_error_text(g->ctx, r));
		rc = NF_EXIT_FAILURE;
	}
	if (vc->health) {
		const char *action = "none";

		if ((r = nf_verify_health(g->ctx, v, &vc->o, &action))) {
			fprintf(stderr, "nodeforge %s: %s\n", cmd, nf_error_text(g->ctx, r));
			rc = NF_EXIT_FAILURE;
		}
		json_object_set_new(doc, "health_action", json_string(action));
	}
	if (!g->quiet || g->json) {
		/* decided before the pager takes stdout */
		int width = nf_cmd_term_width(), colour = nf_cmd_colour();
		pid_t pager = vc->no_pager ? 0 : pager_start();

		nf_emit_new(&e, stdout, g->json);
		if (g->json) {
			const char *k;
			json_t *x;

			json_object_foreach(doc, k, x)
				nf_emit_json(e, k, x);
		} else {
			struct nf_verdict_view vw = {
				.width = width, .colour = colour,
				.verbose = g->verbose, .role = nf_profile_name(p),
			};

			nf_verdict_render(e, doc, &vw);
		}
		nf_emit_end(e);
		nf_emit_free(e);
		pager_end(pager);
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
		{ "no-pager", no_argument, NULL, 'n' },
		{ 0 }
	};
	struct nf_verify_cli vc = { 0 };
	int o, t;

	while ((o = nf_getopt_args(&nf_cmd_verify, argc, argv, "", opts,
				   NULL)) != -1) {
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
		else if (o == 'n')
			vc.no_pager = true;
		else
			return NF_EXIT_USAGE;
	}
	return nf_verify_cli_run(g, "verify", &vc);
}
