/* SPDX-License-Identifier: MIT */
/* The command table: every command is one file that ends with one const
 * struct nf_cmd, listed in commands.def. */
#ifndef NF_CMD_H
#define NF_CMD_H

#include <getopt.h>
#include <stdbool.h>

#include "nodeforge.h"

/* Setup that main() does once, before the command runs */
enum {
	NF_CMD_SITE = 1 << 0, /* load the site file (default: embedded) */
};

struct nf_global {
	struct nf_ctx *ctx;
	const char *prog;
	const char *site_path;
	struct nf_site *site;
	int json;
	int quiet;
	int verbose;
};

struct nf_cmd {
	const char *name;
	const char *summary;
	/* Full --help text; the first line is the usage line */
	const char *help;
	int (*run)(struct nf_global *g, int argc, char **argv);
	unsigned flags;
};

#define NF_CMD(n) extern const struct nf_cmd nf_cmd_##n;
#include "commands.def"
#undef NF_CMD

/* Usage error: prints "nodeforge CMD: msg" and the --help hint; returns 2 */
int nf_usage_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Runtime error with the library's message; returns 1 (or 3 for findings) */
int nf_cmd_fail(struct nf_global *g, const char *cmd, int r);
/* Print `--help` text of a command */
void nf_cmd_help(const struct nf_cmd *c, FILE *fp);
/* Shared getopt_long loop helper: handles -h/--help; returns the option, -1
 * at the end, or -2 after printing help (caller returns 0) / -3 on a usage
 * error (caller returns 2) */
int nf_getopt(const struct nf_cmd *c, int argc, char **argv,
	      const char *shortopts, const struct option *longopts);
/* Print diagnostics as file:line:col: severity: message */
void nf_print_diags(struct nf_global *g, const struct nf_diags *d);
/* Render diagnostics through an emitter (text or JSON) */
void nf_emit_diags(struct nf_emit *e, const struct nf_diags *d);

/* ---- boot commands (inventory, pxe, serve, status) ---- */
struct nf_inventory;
/* Load the site when its file exists (inventory and pxe work without one);
 * returns 0 or an exit status after printing the error */
int nf_cmd_site_optional(struct nf_global *g, const char *cmd);
/* Load and validate an inventory, printing diagnostics; 0 or exit status */
int nf_cmd_inventory_load(struct nf_global *g, const char *cmd,
			  const char *path, struct nf_inventory **inv);

#endif
