/* SPDX-License-Identifier: MIT */
#include <stdio.h>

#include "cmd.h"

static int cmd_sign(struct nf_global *g, int argc, char **argv);

const struct nf_cmd nf_cmd_sign = {
	.name = "sign",
	.summary = "sign a manifest with an Ed25519 key",
	.help = "usage: nodeforge sign MANIFEST --key KEY\n"
		"\n"
		"Sign MANIFEST with the Ed25519 private key KEY (PEM, from\n"
		"'nodeforge keys signing') and write MANIFEST.sig.\n"
		"\n"
		"  -k, --key KEY   private key\n"
		"\n"
		"Exit status: 0 signed, 1 failure (unreadable key or manifest), 2 usage error.\n",
	.run = cmd_sign,
};

static int cmd_sign(struct nf_global *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "key", required_argument, NULL, 'k' },
		{ 0 }
	};
	const char *key = NULL, *path = NULL;
	struct nf_args args = { &path, 1 };
	struct nf_emit *e;
	int o, r;

	while ((o = nf_getopt_args(&nf_cmd_sign, argc, argv, "k:", opts,
				   &args)) != -1) {
		if (o == -2)
			return 0;
		if (o != 'k')
			return NF_EXIT_USAGE;
		key = optarg;
	}
	if (!path)
		return nf_usage_error("sign", "missing MANIFEST");
	if (!key)
		return nf_usage_error("sign", "missing --key KEY");
	if ((r = nf_sign_file(g->ctx, path, key)))
		return nf_cmd_fail(g, "sign", r);
	if (nf_emit_new(&e, stdout, g->json))
		return NF_EXIT_FAILURE;
	if (!g->quiet || g->json) {
		nf_emit_str(e, "manifest", "signed %s", path);
		nf_emit_text(e, " -> %s.sig\n", path);
	}
	nf_emit_end(e);
	nf_emit_free(e);
	return 0;
}
