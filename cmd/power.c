/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"

static int cmd_power(struct nf_global *g, int argc, char **argv);

const struct nf_cmd nf_cmd_power = {
	.name = "power",
	.summary = "power nodes on, off, cycle or reset through their BMCs",
	.help = "usage: nodeforge power on|off|cycle|reset|status HOSTLIST\n"
		"                       [--inventory FILE] [--fanout N] [--timeout SECONDS]\n"
		"                       [--wait-timeout SECONDS | --no-wait] [--json]\n"
		"\n"
		"Ask the BMC of every node of HOSTLIST (gpu-[01-04],cpu-01) to power\n"
		"the node on, off (at once, not a shutdown), cycle it, reset it, or\n"
		"say whether it is on: over IPMI 2.0 (lanplus, by ipmitool) or\n"
		"Redfish (ComputerSystem.Reset, PowerState), as the inventory's bmc:\n"
		"or the site's bmc.protocol says.  The users and passwords come from\n"
		"the file the site's secrets.bmc.path names, never the command line.\n"
		"One line per node: node, BMC, action and the state or why it failed;\n"
		"a node whose BMC does not answer does not stop the others.\n"
		"on, off, cycle and reset then ask the BMC for the power state,\n"
		"once a second, until it is the one asked for (off for off, else\n"
		"on); a node that is not there in time is named and failed.\n"
		"\n"
		"  -w, --wait-timeout SECONDS\n"
		"                        wait at most SECONDS for each node's\n"
		"                        power state (default: 60)\n"
		"      --no-wait         done when the BMC took the action\n"
		NF_BMC_HELP_OPTS
		"Exit status: 0 every node did it (and reached the state), 1 a node\n"
		"failed (named with its reason) or the BMC credentials cannot be\n"
		"read, 2 usage error, 3 the inventory has errors.\n",
	.run = cmd_power,
};

int nf_cmd_bmc_run(struct nf_global *g, const struct nf_cmd *c, int argc,
		   char **argv, const char *const *verbs, size_t nverbs,
		   const enum nf_power_action *actions, int flags)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "inventory", required_argument, NULL, 'i' },
		{ "fanout", required_argument, NULL, 'f' },
		{ "timeout", required_argument, NULL, 't' },
		{ "once", no_argument, NULL, 'o' },
		{ "wait-timeout", required_argument, NULL, 'w' },
		{ "no-wait", no_argument, NULL, 'W' },
		{ 0 }
	};
	const char *pos[2] = { NULL, NULL }, *inv_path = "racks.yaml";
	struct nf_args args = { pos, 2, 0, " (name several nodes as one "
				 "hostlist: gpu-[01-04],cpu-01)" };
	struct nf_power_opts po = { .fanout = NF_POWER_FANOUT,
				    .wait_ms = flags & NF_BMC_WAIT
					       ? NF_POWER_WAIT_MS : 0 };
	struct nf_power_result *res = NULL;
	struct nf_emit *e = NULL;
	char **names = NULL;
	size_t nnames = 0, i, failed = 0, verb;
	int o, r;

	while ((o = nf_getopt_args(c, argc, argv, flags & NF_BMC_WAIT
					    ? "i:f:t:w:" : "i:f:t:", opts,
					    &args)) != -1) {
		char *end;
		long v;

		switch (o) {
		case -2: return 0;
		case -3: return NF_EXIT_USAGE;
		case 'i': inv_path = optarg; break;
		case 'w': case 'W':
			if (!(flags & NF_BMC_WAIT))
				return nf_usage_error(c->name, "unknown option "
						      "'--%s'", o == 'w'
						      ? "wait-timeout" : "no-wait");
			if (o == 'W') {
				po.wait_ms = 0;
				break;
			}
			v = strtol(optarg, &end, 10);
			if (*end || v < 1 || v > NF_POWER_WAIT_MAX_S)
				return nf_usage_error(c->name, "invalid "
						      "--wait-timeout '%s' (1 to "
						      "%d seconds)", optarg,
						      NF_POWER_WAIT_MAX_S);
			po.wait_ms = v * 1000;
			break;
		case 'o':
			if (!(flags & NF_BMC_ONCE))
				return nf_usage_error(c->name, "unknown option "
						      "'--once'");
			po.once = 1;
			break;
		case 'f':
			v = strtol(optarg, &end, 10);
			if (*end || v < 1 || v > NF_POWER_FANOUT_MAX)
				return nf_usage_error(c->name, "invalid --fanout "
						      "'%s' (1 to %d)", optarg,
						      NF_POWER_FANOUT_MAX);
			po.fanout = (unsigned)v;
			break;
		case 't':
			v = strtol(optarg, &end, 10);
			if (*end || v < 1 || v > 3600)
				return nf_usage_error(c->name, "invalid --timeout "
						      "'%s' (1 to 3600 seconds)",
						      optarg);
			po.timeout_ms = v * 1000;
			break;
		}
	}
	if (args.n < 2)
		return nf_usage_error(c->name, "%s", args.n ? "no nodes named "
				      "(a HOSTLIST such as gpu-[01-04])"
				      : "no action and no nodes named");
	for (verb = 0; verb < nverbs; verb++)
		if (!strcmp(pos[0], verbs[verb]))
			break;
	if (verb == nverbs) {
		const char *s = nf_suggest(pos[0], verbs, nverbs);
		char list[128] = "";

		for (i = 0; i < nverbs; i++)
			snprintf(list + strlen(list), sizeof(list) - strlen(list),
				 "%s%s", i ? (i + 1 == nverbs ? " or " : ", ") : "",
				 verbs[i]);
		if (s)
			return nf_usage_error(c->name, "unknown action '%s'; did "
					      "you mean '%s'?", pos[0], s);
		return nf_usage_error(c->name, "unknown action '%s' (%s)", pos[0],
				      list);
	}
	po.action = actions[verb];
	if (nf_hostlist_expand(pos[1], &names, &nnames, NF_INVENTORY_MAX_NODES) ||
	    !nnames) {
		nf_strv_free(names, nnames);
		return nf_usage_error(c->name, "'%s' is not a node name or a "
				      "hostlist", pos[1]);
	}
	if ((r = nf_cmd_setup(g, inv_path))) {
		nf_strv_free(names, nnames);
		return r;
	}
	r = nf_power_run(g->ctx, g->site, g->inv, names, nnames, &po, &res);
	nf_strv_free(names, nnames);
	if (r)
		return nf_cmd_fail(g, c->name, r);
	if (nf_emit_new(&e, stdout, g->json)) {
		free(res);
		return NF_EXIT_FAILURE;
	}
	nf_emit_text(e, "%-20s %-8s %-22s %-7s %s\n", "NODE", "PROTOCOL", "BMC",
		     "ACTION", "RESULT");
	nf_emit_arr_open(e, "nodes");
	for (i = 0; i < nnames; i++) {
		const struct nf_power_result *x = &res[i];
		char *why = x->ok ? NULL : nf_text_escape(x->error);

		failed += !x->ok;
		nf_emit_obj_open(e, NULL);
		nf_emit_str(e, "name", "%-20s ", x->name);
		nf_emit_str(e, "protocol", "%-8s ", x->protocol);
		nf_emit_str(e, "bmc", "%-22s ", *x->bmc ? x->bmc : "-");
		nf_emit_str(e, "action", "%-7s ", nf_power_action_name(po.action));
		nf_emit_bool(e, "ok", x->ok ? NULL : "failed: ", x->ok);
		/* a failed wait keeps the state last seen: in --json only,
		 * the text names it in the reason */
		nf_emit_str(e, "state", x->ok && *x->state ? "%s" : NULL,
			    *x->state ? x->state : NULL);
		if (x->ok && !*x->state)
			nf_emit_text(e, "ok");
		nf_emit_str(e, "error", x->ok ? NULL : "%s",
			    x->ok ? NULL : why ? why : x->error);
		nf_emit_text(e, "\n");
		nf_emit_obj_close(e);
		free(why);
	}
	nf_emit_arr_close(e);
	nf_emit_int(e, "failed", NULL, (long long)failed);
	r = nf_emit_end(e) ? NF_EXIT_FAILURE : 0;
	nf_emit_free(e);
	if (failed && !g->quiet)
		fprintf(stderr, "nodeforge %s: %zu of %zu node(s) failed\n",
			c->name, failed, nnames);
	free(res);
	return r ? r : failed ? NF_EXIT_FAILURE : 0;
}

static int cmd_power(struct nf_global *g, int argc, char **argv)
{
	static const char *const verbs[] = { "on", "off", "cycle", "reset",
					     "status" };
	static const enum nf_power_action actions[] = {
		NF_POWER_ON, NF_POWER_OFF, NF_POWER_CYCLE, NF_POWER_RESET,
		NF_POWER_STATUS
	};

	return nf_cmd_bmc_run(g, &nf_cmd_power, argc, argv, verbs, 5, actions,
			      NF_BMC_WAIT);
}
