/* SPDX-License-Identifier: MIT */
/* nodeforge gate: exec a command (slurmd) only once the node verifies */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"

static int cmd_gate(struct nf_global *g, int argc, char **argv);

const struct nf_cmd nf_cmd_gate = {
	.name = "gate",
	.summary = "run slurmd only after the node verifies",
	.help = "usage: nodeforge gate [--retry SECONDS] [verify options] -- COMMAND [ARGS]\n"
		"\n"
		"Run 'nodeforge verify --gate' and exec COMMAND (for instance\n"
		"/usr/sbin/slurmd -D) only when every check passes: for systems\n"
		"without systemd.  With --retry, re-check every SECONDS until the\n"
		"node passes, so a node fixed by hand joins by itself; without it, a\n"
		"failure exits 3 and COMMAND never runs.\n"
		"\n"
		"Options:\n"
		"  --retry SECONDS   re-check interval (1-86400)\n"
		"  --role R, --profile FILE, --root DIR, --sysroot DIR, --fixture FILE,\n"
		"  --budget SECONDS, --only ID, --verdict FILE: as for verify\n"
		"\n"
		"Exit status: that of COMMAND once it runs; 3 the checks fail (no --retry),\n"
		"1 the checks cannot run or COMMAND cannot be executed, 2 usage error.\n",
	.run = cmd_gate,
};

static int cmd_gate(struct nf_global *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		NF_VERIFY_LONGOPTS,
		{ "retry", required_argument, NULL, 't' },
		{ 0 }
	};
	struct nf_verify_cli vc = { .gate = true, .no_pager = true };
	long retry = 0;
	int o, t, rc;

	while ((o = nf_getopt(&nf_cmd_gate, argc, argv, "", opts)) != -1) {
		if (o == -2)
			return 0;
		if (o == -3)
			return NF_EXIT_USAGE;
		if ((t = nf_verify_cli_opt("gate", &vc, o, optarg)) == 2)
			return NF_EXIT_USAGE;
		if (t)
			continue;
		if (o == 't') {
			char *end;

			errno = 0;
			retry = strtol(optarg, &end, 10);
			if (errno || *end || end == optarg || retry < 1 || retry > 86400)
				return nf_usage_error("gate", "bad --retry '%s': seconds, 1-86400",
						      optarg);
		} else {
			return NF_EXIT_USAGE;
		}
	}
	if (optind >= argc)
		return nf_usage_error("gate", "missing the COMMAND to run after '--'");
	for (;;) {
		rc = nf_verify_cli_run(g, "gate", &vc);
		if (rc == NF_EXIT_OK)
			break;
		if (!retry || rc == NF_EXIT_USAGE)
			return rc;
		fflush(stdout);
		sleep((unsigned)retry);
	}
	fflush(stdout);
	fflush(stderr);
	execvp(argv[optind], argv + optind);
	fprintf(stderr, "nodeforge gate: cannot run '%s': %s\n", argv[optind],
		strerror(errno));
	return NF_EXIT_FAILURE;
}
