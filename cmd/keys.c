/* SPDX-License-Identifier: MIT */
/* nodeforge keys KIND: key generation; one row per kind in `kinds`. */
#include <stdio.h>
#include <string.h>

#include "cmd.h"

static int cmd_keys(struct nf_global *g, int argc, char **argv);

const struct nf_cmd nf_cmd_keys = {
	.name = "keys",
	.summary = "generate keys (signing)",
	.help = "usage: nodeforge keys KIND -o DIR\n"
		"\n"
		"Generate a key of the given kind into DIR (created 0700 if missing).\n"
		"An existing key is never replaced.\n"
		"\n"
		"Kinds:\n"
		"  signing   Ed25519 image signing key: DIR/signing.key (0600, PEM)\n"
		"            and DIR/signing.pub (PEM)\n"
		"\n"
		"  -o, --output DIR   where to write the key files\n",
	.run = cmd_keys,
};

static int keys_signing(struct nf_global *g, const char *dir)
{
	int r = nf_keys_signing(g->ctx, dir);
	struct nf_emit *e;

	if (r)
		return nf_cmd_fail(g, "keys", r);
	if (nf_emit_new(&e, stdout, g->json))
		return NF_EXIT_FAILURE;
	if (!g->quiet || g->json) {
		nf_emit_str(e, "kind", NULL, "signing");
		nf_emit_text(e, "wrote %s/signing.key and %s/signing.pub\n",
			     dir, dir);
		nf_emit_str(e, "dir", NULL, dir);
	}
	nf_emit_end(e);
	nf_emit_free(e);
	return 0;
}

static const struct {
	const char *name;
	int (*run)(struct nf_global *g, const char *dir);
} kinds[] = {
	{ "signing", keys_signing },
};

static int cmd_keys(struct nf_global *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "output", required_argument, NULL, 'o' },
		{ 0 }
	};
	const char *dir = NULL, *kind = NULL;
	int o;

	for (;;) {
		o = nf_getopt(&nf_cmd_keys, argc, argv, "o:", opts);
		if (o == -1) {
			if (optind >= argc)
				break;
			if (kind)
				return nf_usage_error("keys",
						      "unexpected argument '%s'",
						      argv[optind]);
			kind = argv[optind++];
			continue;
		}
		if (o == -2)
			return 0;
		if (o != 'o')
			return NF_EXIT_USAGE;
		dir = optarg;
	}
	if (!kind)
		return nf_usage_error("keys", "missing KIND (signing)");
	if (!dir)
		return nf_usage_error("keys", "missing -o DIR");
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp(kinds[i].name, kind))
			return kinds[i].run(g, dir);
	return nf_usage_error("keys", "unknown key kind '%s'", kind);
}
