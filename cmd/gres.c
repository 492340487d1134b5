/* SPDX-License-Identifier: MIT */
/* nodeforge gres: render gres.conf's topology-dependent GPU lines at first
 * boot. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"

static int cmd_gres(struct nf_global *g, int argc, char **argv);

const struct nf_cmd nf_cmd_gres = {
	.name = "gres",
	.summary = "render gres.conf's GPU lines from this node's topology",
	.help = "usage: nodeforge gres render [--root DIR] [--sysroot DIR] "
		"[--fixture FILE] [--dry-run] [--json]\n"
		"\n"
		"render: write the GPU lines the image keeps in\n"
		"/etc/nodeforge/gres.auto.json (Cores= or Links= 'auto') into\n"
		"/etc/slurm/gres.conf, one line per GPU ordered by device minor:\n"
		"File=/dev/nvidiaN and the PCI address from\n"
		"/proc/driver/nvidia/gpus/*/information, Cores= from the GPU's\n"
		"NUMA-local CPUs (/sys/bus/pci/devices/BUS/local_cpulist) as Slurm\n"
		"core ids, Links= from NVML's NVLink state (-1: the GPU itself,\n"
		"else its NVLinks to each GPU; left out when no GPU has one).  The\n"
		"other lines of gres.conf are kept; a second run changes nothing.\n"
		"Refuses, writing nothing, when the GPUs seen differ from the\n"
		"profile's count or a GPU's files cannot be read.\n"
		"\n"
		"Options:\n"
		"      --root DIR     the node's root (default /); also where /proc\n"
		"                     and /sys are read unless --sysroot is given\n"
		"      --sysroot DIR  read /proc and /sys under DIR\n"
		"      --fixture FILE NVML answers from a hardware-ops fixture\n"
		"      --dry-run      render and compare, write nothing\n"
		"      --json         machine-readable output\n"
		"\n"
		"Exit status: 0 written or unchanged, 1 refused or failed.\n",
	.run = cmd_gres,
};

enum { O_ROOT = 1000, O_SYSROOT, O_FIXTURE, O_DRY_RUN };

static int gres_render(struct nf_global *g, const struct nf_gres_opts *o)
{
	struct nf_gres_result res;
	struct nf_emit *e;
	int r = nf_gres_render(g->ctx, o, &res);
	const char *state;

	if (r) {
		nf_gres_result_free(&res);
		return nf_cmd_fail(g, "gres", r);
	}
	if (nf_emit_new(&e, stdout, g->json)) {
		nf_gres_result_free(&res);
		return NF_EXIT_FAILURE;
	}
	state = !res.changed ? "unchanged"
		: o->dry_run ? "would change" : "written";
	nf_emit_arr_open(e, "lines");
	for (char *l = res.lines, *nl; l && *l; l = nl + 1) {
		if (!(nl = strchr(l, '\n')))
			nl = l + strlen(l) - 1;
		else
			*nl = '\0';
		if (!g->quiet || g->json)
			nf_emit_str(e, NULL, "%s\n", l);
	}
	nf_emit_arr_close(e);
	nf_emit_int(e, "gpus", NULL, (long long)res.ngpu);
	nf_emit_bool(e, "nvlink", NULL, res.nvlink);
	nf_emit_bool(e, "changed", NULL, res.changed);
	nf_emit_bool(e, "dry_run", NULL, o->dry_run);
	nf_emit_str(e, "path", "/etc/slurm/gres.conf: ", "/etc/slurm/gres.conf");
	nf_emit_str(e, "state", "%s", state);
	nf_emit_text(e, " (%zu GPUs%s)\n", res.ngpu,
		     res.nvlink ? ", NVLink" : "");
	nf_emit_end(e);
	nf_emit_free(e);
	nf_gres_result_free(&res);
	return NF_EXIT_OK;
}

static int cmd_gres(struct nf_global *g, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "root", required_argument, NULL, O_ROOT },
		{ "sysroot", required_argument, NULL, O_SYSROOT },
		{ "fixture", required_argument, NULL, O_FIXTURE },
		{ "dry-run", no_argument, NULL, O_DRY_RUN },
		{ 0 }
	};
	struct nf_gres_opts o = { 0 };
	const char *sysroot = NULL, *sub = NULL;
	struct nf_args args = { &sub, 1 };
	int c;

	/* options may come before or after the subcommand */
	while ((c = nf_getopt_args(&nf_cmd_gres, argc, argv, "", longopts,
				   &args)) != -1) {
		switch (c) {
		case -2: return 0;
		case -3: return NF_EXIT_USAGE;
		case O_ROOT: o.root = optarg; break;
		case O_SYSROOT: sysroot = optarg; break;
		case O_FIXTURE: o.fixture = optarg; break;
		case O_DRY_RUN: o.dry_run = 1; break;
		}
	}
	if (!sub)
		return nf_usage_error("gres", "missing subcommand (render)");
	if (strcmp(sub, "render"))
		return nf_usage_error("gres", "unknown subcommand '%s'", sub);
	if ((o.root && (c = nf_cmd_path_arg("gres", "--root", o.root, 0))) ||
	    (sysroot && (c = nf_cmd_path_arg("gres", "--sysroot", sysroot, 0))))
		return c;
	if (!sysroot && o.root && strcmp(o.root, "/"))
		sysroot = o.root;
	if (sysroot && nf_ctx_set_sysroot(g->ctx, sysroot) < 0)
		return NF_EXIT_FAILURE;
	return gres_render(g, &o);
}
