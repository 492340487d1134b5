/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cmd.h"

static int cmd_inventory(struct nf_global *g, int argc, char **argv);

const struct nf_cmd nf_cmd_inventory = {
	.name = "inventory",
	.summary = "show the validated inventory (racks.yaml)",
	.help = "usage: nodeforge inventory show [--inventory FILE] [--json]\n"
		"\n"
		"Load racks.yaml, expand hostlist ranges and address runs, validate\n"
		"every node and print one line per node.\n"
		"\n"
		"  -i, --inventory FILE  inventory file (default: racks.yaml)\n"
		"\n"
		"Errors are printed as FILE:LINE:COL: error: MESSAGE; exit 3 when the\n"
		"inventory has errors, 1 when it cannot be read.\n"
		"\n"
		"Exit status: 0 valid, 3 the inventory has errors, 1 it cannot be read,\n"
		"2 usage error.\n",
	.run = cmd_inventory,
};

int nf_cmd_site_optional(struct nf_global *g, const char *cmd)
{
	struct nf_diags d;
	struct stat st;
	int r;

	if (g->site || !g->site_path || stat(g->site_path, &st) != 0)
		return 0;
	nf_diags_init(&d);
	r = nf_site_load(g->ctx, g->site_path, &g->site, &d);
	if (r) {
		if (d.n)
			nf_print_diags(g, &d);
		else
			fprintf(stderr, "nodeforge %s: %s\n", cmd,
				nf_errmsg(g->ctx));
		nf_diags_free(&d);
		return r == NF_E_PARSE || r == NF_E_INVALID ? NF_EXIT_FINDINGS
							    : NF_EXIT_FAILURE;
	}
	nf_diags_free(&d);
	return 0;
}

int nf_cmd_inventory_load(struct nf_global *g, const char *cmd,
			  const char *path, struct nf_inventory **inv)
{
	struct nf_diags d;
	int r;

	nf_diags_init(&d);
	r = nf_inventory_load(g->ctx, path, g->site, inv, &d);
	if (r) {
		if (d.n) {
			nf_diags_sort(&d);
			nf_print_diags(g, &d);
		} else {
			fprintf(stderr, "nodeforge %s: %s\n", cmd,
				nf_errmsg(g->ctx));
		}
		nf_diags_free(&d);
		return r == NF_E_PARSE || r == NF_E_INVALID ? NF_EXIT_FINDINGS
							    : NF_EXIT_FAILURE;
	}
	nf_diags_free(&d);
	return 0;
}

static int cmd_inventory(struct nf_global *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "inventory", required_argument, NULL, 'i' },
		{ 0 }
	};
	const char *path = "racks.yaml";
	struct nf_inventory *inv = NULL;
	struct nf_emit *e;
	int o, r;

	while ((o = nf_getopt(&nf_cmd_inventory, argc, argv, "i:", opts)) != -1) {
		if (o == -2)
			return 0;
		if (o == -3)
			return NF_EXIT_USAGE;
		if (o == 'i')
			path = optarg;
	}
	/* show is the only subcommand, and the default */
	if (optind < argc && strcmp(argv[optind], "show"))
		return nf_usage_error("inventory", "unknown subcommand '%s'",
				      argv[optind]);
	/* options may also follow the subcommand */
	if (optind < argc)
		optind++;
	while ((o = nf_getopt_args(&nf_cmd_inventory, argc, argv, "i:", opts,
				    NULL)) != -1) {
		if (o == -2)
			return 0;
		if (o == -3)
			return NF_EXIT_USAGE;
		if (o == 'i')
			path = optarg;
	}
	if ((r = nf_cmd_site_optional(g, "inventory")))
		return r;
	if ((r = nf_cmd_inventory_load(g, "inventory", path, &inv)))
		return r;
	if (nf_emit_new(&e, stdout, g->json)) {
		nf_inventory_free(inv);
		return NF_EXIT_FAILURE;
	}
	nf_emit_str(e, "inventory", NULL, nf_inventory_path(inv));
	nf_emit_text(e, "%-20s %-17s %-15s %-12s %-8s %s\n", "NAME", "MAC",
		     "IP", "ROLE", "RACK", "BMC");
	nf_emit_arr_open(e, "nodes");
	for (size_t i = 0; i < nf_inventory_count(inv); i++) {
		const struct nf_node *nd = nf_inventory_node(inv, i);
		char mac[18], ip[16], bmc[16];

		nf_mac_format(nd->mac, ':', mac);
		nf_ipv4_format(nd->ip, ip);
		if (nd->bmc)
			nf_ipv4_format(nd->bmc, bmc);
		nf_emit_obj_open(e, NULL);
		nf_emit_str(e, "name", "%-20s ", nd->name);
		nf_emit_str(e, "mac", "%-17s ", mac);
		nf_emit_str(e, "ip", "%-15s ", ip);
		nf_emit_str(e, "role", "%-12s ", nd->role);
		nf_emit_str(e, "rack", "%-8s ", *nd->rack ? nd->rack : NULL);
		nf_emit_str(e, "bmc", "%s\n", nd->bmc ? bmc : NULL);
		nf_emit_obj_close(e);
	}
	nf_emit_arr_close(e);
	nf_emit_int(e, "count", "%lld nodes\n",
		    (long long)nf_inventory_count(inv));
	r = nf_emit_end(e) ? NF_EXIT_FAILURE : 0;
	nf_emit_free(e);
	nf_inventory_free(inv);
	return r;
}
