/* SPDX-License-Identifier: MIT */
/* The command table: every command is one file that ends with one const
 * struct nf_cmd, listed in commands.def. */
#ifndef NF_CMD_H
#define NF_CMD_H

#include <getopt.h>
#include <stdbool.h>

#include "nodeforge.h"

/* The setup a command needs, named with it in commands.def: main() does
 * what the command's options cannot change before the command runs, and
 * nf_cmd_setup() the rest once they are parsed */
enum {
	/* the site file, loaded by main(): one that cannot be loaded stops
	 * the command (default: the profiles directory's site.yaml) */
	NF_SETUP_SITE = 1 << 0,
	/* the site when its file exists (inventory and pxe work without
	 * one), loaded by nf_cmd_setup() */
	NF_SETUP_SITE_IF_PRESENT = 1 << 1,
	/* the inventory the command's options name, loaded and validated
	 * by nf_cmd_setup() into nf_global.inv */
	NF_SETUP_INVENTORY = 1 << 2,
};

struct nf_global {
	struct nf_ctx *ctx;
	const char *prog;
	const struct nf_cmd *cmd;  /* the command that runs */
	unsigned setup;            /* its NF_SETUP_* (commands.def) */
	const char *site_path;
	const char *site_opt;  /* what named it: "-s", "--site", "NODEFORGE_SITE"
				* (NULL: the profiles directory's default) */
	struct nf_site *site;
	struct nf_inventory *inv;  /* NF_SETUP_INVENTORY; main() frees it */
	int json;
	int quiet;
	int verbose;
	int site_example;  /* the site is the example shipped with the profiles */
};

struct nf_cmd {
	const char *name;
	const char *summary;
	/* Full --help text; the first line is the usage line */
	const char *help;
	int (*run)(struct nf_global *g, int argc, char **argv);
};

#define NF_CMD(n, setup) extern const struct nf_cmd nf_cmd_##n;
#include "commands.def"
#undef NF_CMD

/* Usage error: prints "nodeforge CMD: msg" and the --help hint; returns 2 */
int nf_usage_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Runtime error with the library's message; returns 1 (or 3 for findings) */
int nf_cmd_fail(struct nf_global *g, const char *cmd, int r);
/* An option that names a path (docs/flags.md): relative to the working
 * directory, and it must exist, checked before the command does any work.
 * NF_PATH_URL: a URL (nf_is_url: http://, https://, file://) is taken
 * as is; NF_PATH_FILE: a file will do as well as a directory.  Returns 0,
 * or 1 after "nodeforge CMD: OPT 'VAL': no such directory" */
enum {
	NF_PATH_URL = 1 << 0,
	NF_PATH_FILE = 1 << 1,
};
int nf_cmd_path_arg(const char *cmd, const char *opt, const char *val,
		    unsigned flags);
/* Print `--help` text of a command */
void nf_cmd_help(const struct nf_cmd *c, FILE *fp);
/* Shared getopt_long loop helper: handles -h/--help; returns the option, -1
 * at the end, or -2 after printing help (caller returns 0) / -3 on a usage
 * error (caller returns 2) */
int nf_getopt(const struct nf_cmd *c, int argc, char **argv,
	      const char *shortopts, const struct option *longopts);
/* The positional arguments of a command: up to max of them, into v */
struct nf_args {
	const char **v;
	size_t max;
	size_t n;           /* how many came */
	const char *hint;   /* appended to "unexpected argument 'X'", or NULL */
};
/* nf_getopt for a command with positional arguments: each argument that is
 * not an option goes to a->v[a->n++] and parsing goes on, so options may
 * come before, between or after them; one past a->max (any, when a is
 * NULL) is a usage error "unexpected argument 'X'" (-3).  Returns as
 * nf_getopt; -1 once every argument is taken */
int nf_getopt_args(const struct nf_cmd *c, int argc, char **argv,
		   const char *shortopts, const struct option *longopts,
		   struct nf_args *a);
/* Print diagnostics as file:line:col: severity: message */
void nf_print_diags(struct nf_global *g, const struct nf_diags *d);
/* Render diagnostics through an emitter (text or JSON) */
void nf_emit_diags(struct nf_emit *e, const struct nf_diags *d);

/* The width a report fits: the terminal's, else $COLUMNS, else 80 */
int nf_cmd_term_width(void);
/* Colour only on a terminal, and never with NO_COLOR (no-color.org) or
 * TERM=dumb */
int nf_cmd_colour(void);
/* The command table (cmd/main.c), in --help's order */
const struct nf_cmd *const *nf_cmd_table(size_t *n);
/* The shipped profiles directory, the default of -C */
void nf_cmd_default_profiles(char *out, size_t outsz);
/* nodeforge __complete WORD... CUR (cmd/complete.c): the completions of
 * CUR, one a line; returns the exit status */
int nf_cmd_complete(int argc, char **argv);
/* status --state's values, NULL-terminated (cmd/status.c) */
extern const char *const nf_status_state_args[];

/* The setup the command's commands.def entry names that waits for its
 * options: the site when its file exists (NF_SETUP_SITE_IF_PRESENT),
 * then, when INVENTORY is not NULL, that inventory into g->inv
 * (NF_SETUP_INVENTORY), each once however often it is called (pxe asks
 * for the site first and the inventory later).  Returns 0, or an exit
 * status after printing the error: 3 a file with errors (FILE:LINE:COL:
 * error: MESSAGE), 1 one that cannot be read, 1 a command that asks for
 * what its entry does not name */
int nf_cmd_setup(struct nf_global *g, const char *inventory);

/* ---- boot commands (inventory, pxe, serve, status) ---- */
struct nf_inventory;
/* Say on stderr, once, that WHAT (a value the command is about to use)
 * comes from the example site, when it does */
void nf_cmd_site_note(struct nf_global *g, const char *cmd, const char *what);
/* Add S to the list "a, b, c" in buf (size sz) unless it is there: the
 * known values an error names after an unknown one */
void nf_cmd_known_add(char *buf, size_t sz, const char *s);

/* The options power and bootdev share, as their --help says them */
#define NF_BMC_HELP_OPTS \
	"  -i, --inventory FILE  inventory (default: racks.yaml)\n" \
	"  -f, --fanout N        BMCs asked at once (default: 32)\n" \
	"  -t, --timeout SECONDS\n" \
	"                        give up on a BMC after SECONDS (default:\n" \
	"                        the site's bmc.timeout, else 20)\n" \
	"\n" \
	"With --json: {\"nodes\": [{name, protocol, bmc, action, ok, state,\n" \
	"error}], \"failed\": N}.\n" \
	"\n"

/* power and bootdev (cmd/power.c): parse VERB HOSTLIST and the options,
 * run ACTIONS[i] for VERBS[i] on the nodes' BMCs, render one row per
 * node; FLAGS: NF_BMC_ONCE takes --once, NF_BMC_WAIT --wait-timeout and
 * --no-wait.  Returns the exit status */
#define NF_BMC_ONCE 1
#define NF_BMC_WAIT 2
int nf_cmd_bmc_run(struct nf_global *g, const struct nf_cmd *c, int argc,
		   char **argv, const char *const *verbs, size_t nverbs,
		   const enum nf_power_action *actions, int flags);

/* ---- verify and gate (cmd/verify.c) ---- */
struct nf_verify_cli {
	const char *role, *profile, *junit, *verdict;
	struct nf_verify_opts o;
	bool gate, health;
	bool no_pager;  /* verify --no-pager (gate never pages: no terminal) */
};
/* Parse one option shared by verify and gate: 1 taken, 0 not ours, 2 bad
 * value (usage error printed) */
int nf_verify_cli_opt(const char *cmd, struct nf_verify_cli *vc, int o,
		      const char *arg);
#define NF_VERIFY_LONGOPTS                                      \
	{ "role", required_argument, NULL, 'r' },               \
	{ "profile", required_argument, NULL, 'p' },            \
	{ "root", required_argument, NULL, 'R' },               \
	{ "sysroot", required_argument, NULL, 'S' },            \
	{ "fixture", required_argument, NULL, 'F' },            \
	{ "budget", required_argument, NULL, 'b' },             \
	{ "only", required_argument, NULL, 'o' },               \
	{ "verdict", required_argument, NULL, 'V' }
/* Load the profile, run the checks, render them, and in gate mode publish
 * the verdict; returns the exit status (0 pass, 3 findings, 1 error) */
int nf_verify_cli_run(struct nf_global *g, const char *cmd,
		      struct nf_verify_cli *vc);


/* ---- options shared by 'build' and 'ci' (cmd/build.c) ---- */
struct nf_build_opts;
#define NF_BUILD_LONGOPTS \
	{ "out", required_argument, NULL, 'o' }, \
	{ "output", required_argument, NULL, 'o' }, \
	{ "cache", required_argument, NULL, 'c' }, \
	{ "no-cache", no_argument, NULL, 'N' }, \
	{ "mirror", required_argument, NULL, 'm' }, \
	{ "offline", no_argument, NULL, 'O' }, \
	{ "artifact-mirror", required_argument, NULL, 'A' }, \
	{ "overlays", required_argument, NULL, 'V' }, \
	{ "key", required_argument, NULL, 'k' }, \
	{ "epoch", required_argument, NULL, 'E' }, \
	{ "inventory", required_argument, NULL, 'I' }, \
	{ "self-package", required_argument, NULL, 'P' }
#define NF_BUILD_SHORTOPTS "o:m:k:"
/* Apply one of NF_BUILD_LONGOPTS: 0 taken, 1 not a build option, or an
 * exit status after a usage error */
int nf_cmd_build_opt(const char *cmd, int o, const char *arg,
		     struct nf_build_opts *bo);
/* The build cache when --cache names none: $XDG_CACHE_HOME/nodeforge when
 * absolute, else ~/.cache/nodeforge, else NULL (no HOME) */
const char *nf_cmd_default_cache(void);
/* After parsing: the role is named and the options fit, the defaults
 * that come from the environment are filled in; 0 or exit status */
int nf_cmd_build_check(const char *cmd, const char *role,
		       struct nf_build_opts *bo);

#endif
