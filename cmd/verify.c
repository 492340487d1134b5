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

#include "cmd.h"

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
		"  --only ID         run only the checks of a facet or an id prefix\n"
		"  --junit FILE      also write JUnit XML (image CI)\n"
		"  --gate            first-boot mode: write the verdict to\n"
		"                    ROOT/run/nodeforge/verdict.json (or --verdict FILE),\n"
		"                    the login banner, and POST it to nodeforge.server=\n"
		"                    from the kernel command line\n"
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
			return nf_usage_error(cmd, "%s", nf_errmsg(g->ctx));
		if (r)
			fprintf(stderr, "nodeforge %s: %s\n", cmd, nf_errmsg(g->ctx));
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
		fprintf(stderr, "nodeforge %s: %s\n", cmd, nf_errmsg(g->ctx));
	if (vc->profile == path)
		vc->profile = NULL;
	return r ? NF_EXIT_FAILURE : 0;
}

struct report {
	struct nf_emit *e;
	int width, colour, verbose;
};

/* Print s from column col on, wrapped at spaces to the width, continuation
 * lines indented by ind, at most max lines (0: all; a cut ends with ...).
 * A shell command (shell) breaks only outside quotes, each broken line
 * ending in " \" so that it still works as pasted; inside its trailing
 * comment a continuation line starts with "# " instead. */
static void wrap(struct report *rp, const char *s, int col, int ind, int max, int shell)
{
	int lines = 1, comment = 0;

	while (*s) {
		/* the last line allowed keeps room for " ..." */
		int room = rp->width - col - (max && lines == max ? 4 : 0);
		int brk = -1, n = 0, brk_comment = comment;
		int in_comment = comment;
		char q = 0;

		if ((int)strlen(s) <= rp->width - col) {
			nf_emit_text(rp->e, "%s", s);
			break;
		}
		for (; s[n]; n++) {
			/* a quote opens at the start of a word (an apostrophe
			 * inside one is prose) and closes at its match */
			if (shell && !in_comment && (s[n] == '\'' || s[n] == '"') &&
			    (q ? q == s[n] : n == 0 || strchr(" =(", s[n - 1])))
				q = q ? 0 : s[n];
			if (shell && !q && s[n] == '#' && (n == 0 || s[n - 1] == ' '))
				in_comment = 1;
			/* a break leaves room for " \" (command) or nothing */
			if (s[n] == ' ' && !q && n > 0 &&
			    n + (shell && !in_comment ? 2 : 0) <= room) {
				brk = n;
				brk_comment = in_comment;
			}
			if (n >= room && brk >= 0)
				break;
		}
		if (brk < 0) {  /* one word longer than the line */
			nf_emit_text(rp->e, "%s", s);
			break;
		}
		if (max && lines == max) {
			nf_emit_text(rp->e, "%.*s ...", brk, s);
			break;
		}
		comment = brk_comment;
		nf_emit_text(rp->e, "%.*s%s\n%*s%s", brk, s,
			     shell && !comment ? " \\" : "", ind, "",
			     shell && comment ? "# " : "");
		s += brk + 1;
		while (*s == ' ')
			s++;
		col = ind + (shell && comment ? 2 : 0);
		lines++;
	}
	nf_emit_text(rp->e, "\n");
}

static const char *paint(const struct report *rp, int verdict)
{
	if (!rp->colour)
		return "";
	switch (verdict) {
	case NF_V_FAIL: return "\033[1;31m";
	case NF_V_HUNG: return "\033[1;35m";
	case NF_V_WARN: return "\033[1;33m";
	case NF_V_PASS: return "\033[32m";
	default: return "\033[2m";
	}
}

/* One check: verdict and id, what was seen (and expected), the remedy */
static void show_check(struct report *rp, const struct nf_check_result *c)
{
	const char *why = c->verdict == NF_V_FAIL || c->verdict == NF_V_WARN ? c->seen
			  : c->reason;
	char line[4096], upper[8];
	size_t k;

	snprintf(upper, sizeof(upper), "%s", nf_verdict_name(c->verdict));
	for (k = 0; upper[k]; k++)
		upper[k] = (char)(upper[k] >= 'a' && upper[k] <= 'z' ? upper[k] - 32 : upper[k]);
	nf_emit_text(rp->e, "%s%-4s%s %s%s%s", paint(rp, c->verdict), upper,
		     rp->colour ? "\033[0m" : "", rp->colour ? "\033[1m" : "", c->id,
		     rp->colour ? "\033[0m" : "");
	if (c->verdict == NF_V_PASS && !why)
		why = c->seen;
	snprintf(line, sizeof(line), "%s%s%s%s", why ? why : "",
		 c->verdict == NF_V_FAIL && c->expected ? " (expected " : "",
		 c->verdict == NF_V_FAIL && c->expected ? c->expected : "",
		 c->verdict == NF_V_FAIL && c->expected ? ")" : "");
	if (c->verdict == NF_V_FAIL && c->cause)
		snprintf(line + strlen(line), sizeof(line) - strlen(line),
			 " [follows from %s]", c->cause);
	if (*line) {
		nf_emit_text(rp->e, ": ");
		wrap(rp, line, 5 + (int)strlen(c->id) + 2, 5, rp->verbose ? 0 : 3, 0);
	} else {
		nf_emit_text(rp->e, "\n");
	}
	if (c->verdict != NF_V_PASS && c->verdict != NF_V_SKIP && c->remedy) {
		nf_emit_text(rp->e, "     -> ");
		wrap(rp, c->remedy, 8, 8, 0, 1);
	}
}

/* The report: root causes first, each with the checks that fail or are
 * skipped because of it folded under it; -v shows every check */
static void render_text(struct nf_global *g, struct nf_emit *e,
			const struct nf_verify *v, const char *role, int width,
			int colour)
{
	struct report rp = { .e = e, .width = width, .colour = colour,
			     .verbose = g->verbose };
	size_t n = nf_verify_count(v), roots = 0, follow = 0;

	for (size_t i = 0; i < n; i++) {
		const struct nf_check_result *c = nf_verify_result(v, i);
		int root = (c->verdict == NF_V_FAIL || c->verdict == NF_V_HUNG) && !c->cause;
		char list[1024] = "";
		size_t nfail = 0, nskip = 0;

		roots += root;
		follow += c->verdict == NF_V_FAIL && c->cause;
		if (g->verbose) {
			show_check(&rp, c);
			continue;
		}
		if (!root && c->verdict != NF_V_WARN)
			continue;
		show_check(&rp, c);
		/* what follows from it */
		for (size_t k = 0; k < n; k++) {
			const struct nf_check_result *x = nf_verify_result(v, k);

			if (!x->cause || strcmp(x->cause, c->id))
				continue;
			if (x->verdict == NF_V_FAIL) {
				snprintf(list + strlen(list), sizeof(list) - strlen(list),
					 "%s%s", nfail++ ? ", " : "", x->id);
			} else {
				nskip++;
			}
		}
		if (nfail || nskip) {
			char also[1200];

			snprintf(also, sizeof(also), "%s%s%s%.0zu%s", list,
				 nfail ? " failed" : "", nfail && nskip ? "; " : "",
				 nskip, nskip ? " skipped" : "");
			nf_emit_text(e, "     also: ");
			wrap(&rp, also, 11, 11, 0, 0);
		}
	}
	if (roots && !g->verbose) {
		char line[256];

		snprintf(line, sizeof(line), "%zu root cause%s", roots, roots == 1 ? "" : "s");
		if (follow)
			snprintf(line + strlen(line), sizeof(line) - strlen(line),
				 ", %zu more failure%s follow%s from them", follow,
				 follow == 1 ? "" : "s", follow == 1 ? "s" : "");
		snprintf(line + strlen(line), sizeof(line) - strlen(line),
			 " (-v shows every check)");
		wrap(&rp, line, 0, 0, 0, 0);
	}
	nf_emit_text(e, "%s: %s: %zu passed, %zu failed, %zu hung, %zu skipped",
		     role, nf_verify_passed(v) ? "PASS" : "FAIL",
		     nf_verify_tally(v, NF_V_PASS), nf_verify_tally(v, NF_V_FAIL),
		     nf_verify_tally(v, NF_V_HUNG), nf_verify_tally(v, NF_V_SKIP));
	if (nf_verify_tally(v, NF_V_WARN))
		nf_emit_text(e, ", %zu warned", nf_verify_tally(v, NF_V_WARN));
	nf_emit_text(e, "\n");
}

/* The report through a pager when it goes to a terminal: $NODEFORGE_PAGER,
 * else $PAGER, else "less -FRX" (one screen or less: printed as is; colour
 * kept; the screen not cleared); "" or "cat" is none.  Returns the pager's
 * pid with stdout now its pipe, or 0 (stdout as it was) */
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
	if (!*pg || !strcmp(pg, "cat") || pipe(fd) < 0)
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
			render_text(g, e, v, nf_profile_name(p), width, colour);
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
