/* SPDX-License-Identifier: MIT */
#include <stdio.h>

#include "cmd.h"

static int cmd_version(struct nf_global *g, int argc, char **argv);

const struct nf_cmd nf_cmd_version = {
	.name = "version",
	.summary = "print the version",
	.help = "usage: nodeforge version [--json]\n"
		"\n"
		"Print nodeforge's version and the commit it was built from\n"
		"(the copy inside an image is the building tool's: the image's\n"
		"manifest records both).\n"
		"\n"
		"Exit status: 0.\n",
	.run = cmd_version,
};

static int cmd_version(struct nf_global *g, int argc, char **argv)
{
	struct nf_emit *e;
	int o;

	while ((o = nf_getopt_args(&nf_cmd_version, argc, argv, "", NULL,
				   NULL)) != -1)
		return o == -2 ? 0 : 2;
	if (nf_emit_new(&e, stdout, g->json))
		return 1;
	nf_emit_str(e, "name", "%s ", "nodeforge");
	nf_emit_str(e, "version", "%s", NF_VERSION);
	nf_emit_str(e, "commit", " (commit %s)\n", nf_commit);
	nf_emit_end(e);
	nf_emit_free(e);
	return 0;
}
