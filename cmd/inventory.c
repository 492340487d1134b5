/* SPDX-License-Identifier: MIT */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"

static int cmd_inventory(struct nf_global *g, int argc, char **argv);

const struct nf_cmd nf_cmd_inventory = {
	.name = "inventory",
	.summary = "show the validated inventory (racks.yaml)",
	.help = "usage: nodeforge inventory show [HOSTLIST] [--rack RACK] [--role ROLE]\n"
		"                                [--inventory FILE] [--json]\n"
		"\n"
		"Load racks.yaml, expand hostlist ranges and address runs, validate\n"
		"every node and print one line per node.  A hostlist\n"
		"(gpu-[01-04],cpu-01), --rack and --role list only those nodes, as\n"
		"status does; a name, rack or role that no node has is a usage error\n"
		"naming those the inventory has.\n"
		"\n"
		"  -i, --inventory FILE  inventory file (default: racks.yaml)\n"
		"      --rack RACK       only the nodes of rack RACK\n"
		"      --role ROLE       only the nodes of role ROLE\n"
		"\n"
		"Errors are printed as FILE:LINE:COL: error: MESSAGE; exit 3 when the\n"
		"inventory has errors, 1 when it cannot be read.\n"
		"\n"
		"Exit status: 0 valid, 3 the inventory has errors, 1 it cannot be read,\n"
		"2 usage error.\n",
	.run = cmd_inventory,
};

/* VALUE (of --rack or --role) is what some node has: else a usage error
 * naming the values the nodes have */
static int known_value(const struct nf_inventory *inv, const char *key,
		       const char *value)
{
	char known[2048] = "";

	if (!value)
		return 0;
	for (size_t i = 0; i < nf_inventory_count(inv); i++) {
		const struct nf_node *nd = nf_inventory_node(inv, i);
		const char *v = !strcmp(key, "rack") ? nd->rack : nd->role;

		if (!strcmp(v, value))
			return 0;
		if (*v)
			nf_cmd_known_add(known, sizeof(known), v);
	}
	return nf_usage_error("inventory", "no node of '%s' has %s '%s'; %ss: %s",
			      nf_inventory_path(inv), key, value, key,
			      *known ? known : "none");
}

static void free_names(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

static bool listed(const struct nf_node *nd, char **names, size_t nnames,
		   const char *rack, const char *role)
{
	bool in = !names;

	for (size_t i = 0; i < nnames && !in; i++)
		in = !strcmp(names[i], nd->name);
	return in && (!rack || !strcmp(rack, nd->rack)) &&
	       (!role || !strcmp(role, nd->role));
}

static int cmd_inventory(struct nf_global *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "inventory", required_argument, NULL, 'i' },
		{ "rack", required_argument, NULL, 'r' },
		{ "role", required_argument, NULL, 'R' },
		{ 0 }
	};
	const char *path = "racks.yaml", *rack = NULL, *role = NULL;
	const char *which[1];
	struct nf_args args = { .v = which, .max = 1,
				.hint = " (one hostlist: gpu-[01-04],cpu-01)" };
	const struct nf_inventory *inv;
	struct nf_emit *e;
	char **names = NULL;
	size_t nnames = 0, shown = 0;
	int o, r;

	while ((o = nf_getopt(&nf_cmd_inventory, argc, argv, "i:", opts)) != -1) {
		if (o == -2)
			return 0;
		if (o == -3)
			return NF_EXIT_USAGE;
		if (o == 'i')
			path = optarg;
		else if (o == 'r')
			rack = optarg;
		else if (o == 'R')
			role = optarg;
	}
	/* show is the only subcommand, and the default */
	if (optind < argc && strcmp(argv[optind], "show"))
		return nf_usage_error("inventory", "unknown subcommand '%s'",
				      argv[optind]);
	/* options may also follow the subcommand */
	if (optind < argc)
		optind++;
	while ((o = nf_getopt_args(&nf_cmd_inventory, argc, argv, "i:", opts,
				    &args)) != -1) {
		if (o == -2)
			return 0;
		if (o == -3)
			return NF_EXIT_USAGE;
		if (o == 'i')
			path = optarg;
		else if (o == 'r')
			rack = optarg;
		else if (o == 'R')
			role = optarg;
	}
	if (args.n && nf_hostlist_expand(which[0], &names, &nnames, NF_INVENTORY_MAX_NODES))
		return nf_usage_error("inventory", "'%s' is not a node name or a "
				      "hostlist", which[0]);
	if ((r = nf_cmd_setup(g, path))) {
		free_names(names, nnames);
		return r;
	}
	inv = g->inv;
	for (size_t i = 0; i < nnames; i++)
		if (!nf_inventory_find(inv, names[i])) {
			r = nf_usage_error("inventory", "no node '%s' in '%s'",
					   names[i], nf_inventory_path(inv));
			break;
		}
	if (r || (r = known_value(inv, "rack", rack)) ||
	    (r = known_value(inv, "role", role)) ||
	    (nf_emit_new(&e, stdout, g->json) && (r = NF_EXIT_FAILURE))) {
		free_names(names, nnames);
		return r;
	}
	nf_emit_str(e, "inventory", NULL, nf_inventory_path(inv));
	nf_emit_text(e, "%-20s %-17s %-15s %-12s %-8s %s\n", "NAME", "MAC",
		     "IP", "ROLE", "RACK", "BMC");
	nf_emit_arr_open(e, "nodes");
	for (size_t i = 0; i < nf_inventory_count(inv); i++) {
		const struct nf_node *nd = nf_inventory_node(inv, i);
		char mac[18], ip[16], bmc[16];

		if (!listed(nd, args.n ? names : NULL, nnames, rack, role))
			continue;
		shown++;
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
	nf_emit_int(e, "count", "%lld nodes\n", (long long)shown);
	r = nf_emit_end(e) ? NF_EXIT_FAILURE : 0;
	nf_emit_free(e);
	free_names(names, nnames);
	return r;
}
