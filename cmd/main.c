/* SPDX-License-Identifier: MIT */
/* nodeforge: dispatch, global options and the shared setup of commands. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd.h"

#ifndef NF_DATADIR
#define NF_DATADIR "/usr/local/share/nodeforge"
#endif

static const struct nf_cmd *const commands[] = {
#define NF_CMD(n, setup) &nf_cmd_##n,
#include "commands.def"
#undef NF_CMD
};

/* commands[i]'s NF_SETUP_* */
static const unsigned setups[] = {
#define NF_CMD(n, setup) setup,
#include "commands.def"
#undef NF_CMD
};

/* The setup flags by name, as __commands lists them */
static const struct {
	unsigned flag;
	const char *name;
} setup_names[] = {
	{ NF_SETUP_SITE, "site" },
	{ NF_SETUP_SITE_IF_PRESENT, "site-if-present" },
	{ NF_SETUP_INVENTORY, "inventory" },
};

static const char *prog = "nodeforge";

static void main_help(FILE *fp)
{
	fprintf(fp,
		"usage: nodeforge [-C DIR] [-s SITE] [--json] [-q] [-v] COMMAND [ARGS]\n"
		"\n"
		"Build, boot and verify the nodes of a Slurm GPU cluster.\n"
		"\n"
		"Global options (accepted before or after the command):\n"
		"  -C DIR           profiles directory (default: the shipped profiles)\n"
		"  -s, --site FILE  site file (default: DIR/site.yaml)\n"
		"      --json       machine-readable output\n"
		"  -q, --quiet      only errors\n"
		"  -v, --verbose    more detail (repeat for debug)\n"
		"  -h, --help       this help; 'nodeforge COMMAND --help' for a command\n"
		"      --version    print the version\n"
		"\n"
		"Commands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(fp, "  %-12s %s\n", commands[i]->name,
			commands[i]->summary);
	fprintf(fp, "\nExit status: 0 ok, 1 failure, 2 usage error, 3 findings.\n");
}

int nf_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s%s%s: ", prog, cmd ? " " : "", cmd ? cmd : "");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\ntry '%s%s%s --help'\n", prog, cmd ? " " : "",
		cmd ? cmd : "");
	return NF_EXIT_USAGE;
}

void nf_cmd_site_note(struct nf_global *g, const char *cmd, const char *what)
{
	static int said;

	if (!g->site_example || g->quiet || said++)
		return;
	fprintf(stderr, "%s %s: note: %s comes from the example site '%s'; "
		"write your site's own (docs/profiles.md) and pass --site FILE "
		"or set NODEFORGE_SITE\n", prog, cmd, what, g->site_path);
}

void nf_cmd_known_add(char *buf, size_t sz, const char *s)
{
	size_t len = strlen(buf), sl = strlen(s);
	const char *p = buf;

	for (; (p = strstr(p, s)); p += sl)
		if ((p == buf || p[-1] == ' ') && (!p[sl] || p[sl] == ','))
			return;
	if (len + sl + 3 < sz)
		snprintf(buf + len, sz - len, "%s%s", len ? ", " : "", s);
}

int nf_cmd_fail(struct nf_global *g, const char *cmd, int r)
{
	if (r == NF_E_FINDINGS)
		return NF_EXIT_FINDINGS;
	fprintf(stderr, "%s %s: %s\n", prog, cmd, nf_error_text(g->ctx, r));
	return NF_EXIT_FAILURE;
}

static int path_fail(const char *cmd, const char *opt, const char *val,
		     const char *why)
{
	fprintf(stderr, "%s%s%s: %s '%s': %s\n", prog, cmd ? " " : "",
		cmd ? cmd : "", opt, val, why);
	return NF_EXIT_FAILURE;
}

int nf_cmd_path_arg(const char *cmd, const char *opt, const char *val,
		    unsigned flags)
{
	int file_ok = flags & NF_PATH_FILE;
	struct stat st;

	if ((flags & NF_PATH_URL) && nf_is_url(val))
		return !strncmp(val, "http://", 7) || !strncmp(val, "https://", 8) ||
		       !strncmp(val, "file://", 7) ? 0
			: path_fail(cmd, opt, val, "a URL is http://, https:// "
				    "or file://, else a directory");
	if (!*val || stat(val, &st) < 0)
		return path_fail(cmd, opt, val, *val && errno != ENOENT
				 ? strerror(errno)
				 : file_ok ? "no such file or directory"
					   : "no such directory");
	if (!S_ISDIR(st.st_mode) && !file_ok)
		return path_fail(cmd, opt, val, "not a directory");
	return 0;
}

void nf_cmd_help(const struct nf_cmd *c, FILE *fp)
{
	fputs(c->help, fp);
}

/* The options that name something that must already be there, whatever
 * the command: checked as they are parsed (nf_cmd_path_arg: relative to
 * the working directory, a missing one named with the option as typed),
 * before the command does anything.  Options whose directory a command
 * creates (--out, --tree, --cache, enroll --root), or reads only when
 * present (pxe --ipxe-dir), are the commands' own. */
static const struct {
	const char *name;
	unsigned flags;
	const char *except; /* the command whose option this is not */
} input_paths[] = {
	{ "inventory", NF_PATH_FILE, NULL },
	/* a node's enroll writes its key and files under --root, making
	 * the directories it needs */
	{ "root", 0, "enroll" },
	{ "sysroot", 0, NULL },
};

static int input_path_failed;

static int check_input_path(const struct nf_cmd *c, int o, int idx,
			    const struct option *longopts)
{
	const struct option *lo = NULL;
	char typed[40];

	if (idx >= 0) {
		lo = &longopts[idx];
	} else {
		for (const struct option *x = longopts; x && x->name; x++)
			if (x->val == o && !x->flag && x->has_arg == required_argument) {
				lo = x;
				break;
			}
	}
	if (!lo || lo->has_arg != required_argument || !optarg)
		return 0;
	for (size_t i = 0; i < sizeof(input_paths) / sizeof(*input_paths); i++) {
		if (strcmp(lo->name, input_paths[i].name) ||
		    (input_paths[i].except &&
		     !strcmp(c->name, input_paths[i].except)))
			continue;
		if (idx >= 0)
			snprintf(typed, sizeof(typed), "--%s", lo->name);
		else
			snprintf(typed, sizeof(typed), "-%c", o);
		return nf_cmd_path_arg(c->name, typed, optarg,
				       input_paths[i].flags);
	}
	return 0;
}

int nf_getopt(const struct nf_cmd *c, int argc, char **argv,
	      const char *shortopts, const struct option *longopts)
{
	static const struct option help_only[] = {
		{ "help", no_argument, NULL, 'h' }, { 0 }
	};
	char sopts[64];
	int o, idx = -1;

	snprintf(sopts, sizeof(sopts), "+:h%s", shortopts ? shortopts : "");
	opterr = 0;
	o = getopt_long(argc, argv, sopts, longopts ? longopts : help_only,
			&idx);
	/* the command stops as on a usage error (-3); main exits with
	 * nf_cmd_path_arg's status, as for -C and -s */
	if (o >= 0 && o != 'h' && o != '?' && o != ':' &&
	    check_input_path(c, o, idx, longopts)) {
		input_path_failed = 1;
		return -3;
	}
	if (o == 'h') {
		nf_cmd_help(c, stdout);
		return -2;
	}
	if (o == '?') {
		if (optopt)
			nf_usage_error(c->name, "unknown option '-%c'", optopt);
		else
			nf_usage_error(c->name, "unknown option '%s'",
				       argv[optind - 1]);
		return -3;
	}
	if (o == ':') {
		nf_usage_error(c->name, "option '%s' needs a value",
			       argv[optind - 1]);
		return -3;
	}
	return o;
}

int nf_getopt_args(const struct nf_cmd *c, int argc, char **argv,
		   const char *shortopts, const struct option *longopts,
		   struct nf_args *a)
{
	int o;

	while ((o = nf_getopt(c, argc, argv, shortopts, longopts)) == -1 &&
	       optind < argc) {
		if (!a || a->n >= a->max) {
			nf_usage_error(c->name, "unexpected argument '%s'%s",
				       argv[optind],
				       a && a->hint ? a->hint : "");
			return -3;
		}
		a->v[a->n++] = argv[optind++];
	}
	return o;
}

void nf_emit_diags(struct nf_emit *e, const struct nf_diags *d)
{
	nf_emit_arr_open(e, "diagnostics");
	for (size_t i = 0; i < d->n; i++) {
		const struct nf_diag *x = &d->v[i];

		nf_emit_obj_open(e, NULL);
		nf_emit_str(e, "file", x->line ? "%s:" : "%s: ", x->file);
		nf_emit_int(e, "line", x->line ? "%lld:" : NULL, x->line);
		nf_emit_int(e, "column", x->line ? "%lld: " : NULL, x->col);
		nf_emit_str(e, "severity", "%s: ",
			    x->severity == NF_SEV_ERROR ? "error" : "warning");
		nf_emit_str(e, "message", "%s\n", x->message);
		nf_emit_obj_close(e);
	}
	nf_emit_arr_close(e);
}

/* Diagnostics as FILE:LINE:COL: SEVERITY: MESSAGE on stderr; with --json,
 * when they stop the command (errors), as {"diagnostics", "errors",
 * "warnings"} on stdout, where a script looks */
void nf_print_diags(struct nf_global *g, const struct nf_diags *d)
{
	size_t errors = nf_diags_errors(d);
	int json = g->json && errors;
	struct nf_emit *e;

	if (nf_emit_new(&e, json ? stdout : stderr, json))
		return;
	nf_emit_diags(e, d);
	nf_emit_int(e, "errors", NULL, (long long)errors);
	nf_emit_int(e, "warnings", NULL, (long long)(d->n - errors));
	nf_emit_end(e);
	nf_emit_free(e);
}

static void log_stderr(void *data, int level, const char *msg)
{
	static const char *const names[] = { "error", "warning", "info",
					     "debug" };
	(void)data;
	fprintf(stderr, "%s: %s: %s\n", prog,
		names[level < 0 ? 0 : level > 3 ? 3 : level], msg);
}

static int file_exists(const char *p)
{
	struct stat st;

	return stat(p, &st) == 0;
}

/* The shipped profiles: next to the binary in a checkout (build/nodeforge
 * -> profiles/), else the installed data directory */
static void default_profiles_dir(char *out, size_t outsz)
{
	char exe[PATH_MAX], cand[PATH_MAX + 32];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n > 0) {
		char *slash;

		exe[n] = '\0';
		slash = strrchr(exe, '/');
		if (slash) {
			*slash = '\0';
			/* a checkout (build/nodeforge), then a relocated install
			 * (PREFIX/bin/nodeforge) */
			static const char *const rel[] = {
				"../profiles", "../share/nodeforge/profiles",
			};

			for (size_t i = 0; i < 2; i++) {
				snprintf(cand, sizeof(cand), "%s/%s", exe, rel[i]);
				if (file_exists(cand)) {
					char *real = realpath(cand, NULL);

					snprintf(out, outsz, "%s", real ? real : cand);
					free(real);
					return;
				}
			}
		}
	}
	snprintf(out, outsz, "%s/profiles", NF_DATADIR);
}

const struct nf_cmd *const *nf_cmd_table(size_t *n)
{
	*n = sizeof(commands) / sizeof(*commands);
	return commands;
}

void nf_cmd_default_profiles(char *out, size_t outsz)
{
	default_profiles_dir(out, outsz);
}

/* A site or inventory that did not load: its diagnostics, else the
 * library's message; the exit status */
static int load_failed(struct nf_global *g, int r, const struct nf_diags *d)
{
	if (d->n)
		nf_print_diags(g, d);
	else
		fprintf(stderr, "%s %s: %s\n", prog, g->cmd->name,
			nf_error_text(g->ctx, r));
	return r == NF_E_PARSE || r == NF_E_INVALID ? NF_EXIT_FINDINGS
						    : NF_EXIT_FAILURE;
}

static int load_site(struct nf_global *g)
{
	struct nf_diags d;
	int r;

	nf_diags_init(&d);
	r = nf_site_load(g->ctx, g->site_path, &g->site, &d);
	if (r)
		r = load_failed(g, r, &d);
	nf_diags_free(&d);
	return r;
}

static int load_inventory(struct nf_global *g, const char *path)
{
	struct nf_diags d;
	int r;

	nf_diags_init(&d);
	r = nf_inventory_load(g->ctx, path, g->site, &g->inv, &d);
	if (r) {
		nf_diags_sort(&d);
		r = load_failed(g, r, &d);
	}
	nf_diags_free(&d);
	return r;
}

int nf_cmd_setup(struct nf_global *g, const char *inventory)
{
	unsigned want = NF_SETUP_SITE_IF_PRESENT |
			(inventory ? NF_SETUP_INVENTORY : 0);
	struct stat st;
	int r;

	/* a setup that commands.def does not name: the entry is wrong */
	if ((g->setup & want) != want) {
		fprintf(stderr, "%s %s: internal error: commands.def does not "
			"name the setup the command asks for\n", prog,
			g->cmd->name);
		return NF_EXIT_FAILURE;
	}
	if (!g->site && g->site_path && stat(g->site_path, &st) == 0 &&
	    (r = load_site(g)))
		return r;
	if (inventory && !g->inv && (r = load_inventory(g, inventory)))
		return r;
	return 0;
}

/* nodeforge __commands (hidden): every command with the setup its
 * commands.def entry names, one a line, for the tests that hold each
 * command to its entry */
static int list_commands(void)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(*commands); i++) {
		printf("%s", commands[i]->name);
		for (size_t k = 0; k < sizeof(setup_names) / sizeof(*setup_names); k++)
			if (setups[i] & setup_names[k].flag)
				printf(" %s", setup_names[k].name);
		printf("\n");
	}
	return fflush(stdout) ? NF_EXIT_FAILURE : 0;
}

int nf_cmd_term_width(void)
{
	struct winsize ws;
	const char *c = getenv("COLUMNS");
	long w = 0;

	if (c && *c)
		w = strtol(c, NULL, 10);
	if (w <= 0 && isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0)
		w = ws.ws_col;
	if (w <= 0)
		w = 80;
	return w < 40 ? 40 : w > 400 ? 400 : (int)w;
}

int nf_cmd_colour(void)
{
	const char *t = getenv("TERM");

	return isatty(STDOUT_FILENO) && !getenv("NO_COLOR") && !(t && !strcmp(t, "dumb"));
}

/* Take the global options out of argv, wherever they are (before "--") */
static int take_globals(struct nf_global *g, int *argc, char **argv,
			const char **profiles)
{
	int out = 1;

	for (int i = 1; i < *argc; i++) {
		char *a = argv[i];
		const char **val = NULL;

		if (!strcmp(a, "--")) {
			while (i < *argc)
				argv[out++] = argv[i++];
			break;
		}
		if (!strcmp(a, "--json")) {
			g->json = 1;
			continue;
		}
		if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
			g->quiet = 1;
			continue;
		}
		if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
			g->verbose++;
			continue;
		}
		if (!strcmp(a, "-vv")) {
			g->verbose += 2;
			continue;
		}
		if (!strcmp(a, "-C"))
			val = profiles;
		else if (!strcmp(a, "-s") || !strcmp(a, "--site")) {
			val = &g->site_path;
			g->site_opt = a;
		}
		if (val) {
			if (i + 1 >= *argc)
				return nf_usage_error(NULL,
						      "option '%s' needs a value",
						      a);
			*val = argv[++i];
			continue;
		}
		if (!strncmp(a, "--site=", 7)) {
			g->site_path = a + 7;
			g->site_opt = "--site";
			continue;
		}
		argv[out++] = a;
	}
	argv[out] = NULL;
	*argc = out;
	return 0;
}

/* "unknown command 'biuld' (did you mean 'build'?)" */
static int unknown_command(const char *name)
{
	const char *names[sizeof(commands) / sizeof(*commands)];
	const char *s;

	for (size_t i = 0; i < sizeof(commands) / sizeof(*commands); i++)
		names[i] = commands[i]->name;
	s = nf_suggest(name, names, sizeof(names) / sizeof(*names));
	if (s)
		return nf_usage_error(NULL, "unknown command '%s' (did you mean '%s'?)",
				      name, s);
	return nf_usage_error(NULL, "unknown command '%s'", name);
}

int main(int argc, char **argv)
{
	struct nf_global g = { .prog = prog };
	const struct nf_cmd *cmd = NULL;
	const char *profiles = NULL;
	char defdir[PATH_MAX + 64], defsite[PATH_MAX + 80];
	int r;

	/* hidden: the shell's completion (before the globals are taken:
	 * its words are the command line being typed) */
	if (argc >= 2 && !strcmp(argv[1], "__complete"))
		return nf_cmd_complete(argc - 2, argv + 2);
	if (argc == 2 && !strcmp(argv[1], "__commands"))
		return list_commands();
	if ((r = take_globals(&g, &argc, argv, &profiles)))
		return r;
	if (argc < 2) {
		main_help(stderr);
		return NF_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
	    !strcmp(argv[1], "help")) {
		if (argc > 2) {
			for (size_t i = 0; i < sizeof(commands) / sizeof(*commands); i++)
				if (!strcmp(commands[i]->name, argv[2])) {
					nf_cmd_help(commands[i], stdout);
					return 0;
				}
			return unknown_command(argv[2]);
		}
		main_help(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("nodeforge %s (commit %s)\n", NF_VERSION, nf_commit);
		return 0;
	}
	if (argv[1][0] == '-')
		return nf_usage_error(NULL, "unknown option '%s'", argv[1]);
	for (size_t i = 0; i < sizeof(commands) / sizeof(*commands); i++)
		if (!strcmp(commands[i]->name, argv[1])) {
			cmd = commands[i];
			g.setup = setups[i];
		}
	if (!cmd)
		return unknown_command(argv[1]);
	g.cmd = cmd;

	if ((r = nf_ctx_new(&g.ctx)) < 0) {
		fprintf(stderr, "%s: %s\n", prog, nf_strerror(r));
		return NF_EXIT_FAILURE;
	}
	nf_ctx_set_log(g.ctx, log_stderr, NULL);
	nf_ctx_set_log_level(g.ctx, g.quiet ? NF_LOG_ERR
				    : g.verbose >= 2 ? NF_LOG_DEBUG
				    : g.verbose ? NF_LOG_INFO : NF_LOG_WARN);
	if (profiles) {
		r = nf_cmd_path_arg(cmd->name, "-C", profiles, 0);
	} else {
		profiles = getenv("NODEFORGE_PROFILES");
		if (profiles && *profiles) {
			r = nf_cmd_path_arg(cmd->name, "NODEFORGE_PROFILES",
					    profiles, 0);
		} else {
			default_profiles_dir(defdir, sizeof(defdir));
			profiles = defdir;
			r = 0;
		}
	}
	if (r) {
		nf_ctx_free(g.ctx);
		return r;
	}
	nf_ctx_set_profiles_dir(g.ctx, profiles);
	if (!g.site_path) {
		const char *env = getenv("NODEFORGE_SITE");

		if (env && *env) {
			g.site_path = env;
			g.site_opt = "NODEFORGE_SITE";
		} else {
			snprintf(defsite, sizeof(defsite), "%s/site.yaml",
				 profiles);
			g.site_path = defsite;
			/* the shipped profiles' own site: an example */
			g.site_example = profiles == defdir;
		}
	}
	/* a site the user named must be there, also for the commands that
	 * do without one */
	if (g.site_opt &&
	    (r = nf_cmd_path_arg(cmd->name, g.site_opt, g.site_path,
				 NF_PATH_FILE))) {
		nf_ctx_free(g.ctx);
		return r;
	}
	if ((g.setup & NF_SETUP_SITE) && (r = load_site(&g))) {
		nf_ctx_free(g.ctx);
		return r;
	}
	/* what the set-up handled is not the command's to print */
	nf_clear_error(g.ctx);
	optind = 1;
	r = cmd->run(&g, argc - 1, argv + 1);
	if (input_path_failed && r == NF_EXIT_USAGE)
		r = NF_EXIT_FAILURE;
	nf_inventory_free(g.inv);
	nf_site_free(g.site);
	nf_ctx_free(g.ctx);
	if (fflush(stdout) != 0 && r == 0)
		r = NF_EXIT_FAILURE;
	return r;
}
