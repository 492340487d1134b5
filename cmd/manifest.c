/* SPDX-License-Identifier: MIT */
/* nodeforge manifest verify|check: trust and drift of an image. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "changes.h"
#include "cmd.h"

static int cmd_manifest(struct nf_global *g, int argc, char **argv);

const struct nf_cmd nf_cmd_manifest = {
	.name = "manifest",
	.summary = "verify a signed manifest or check a tree against it",
	.help = "usage: nodeforge manifest verify MANIFEST --pubkey PUB\n"
		"       nodeforge manifest check MANIFEST --root DIR\n"
		"\n"
		"verify: check MANIFEST.sig (Ed25519) with PUB, then that the\n"
		"archive next to the manifest has the recorded sha256 and size.\n"
		"\n"
		"check: compare the live tree DIR with the manifest and list\n"
		"what drifted: added, removed, content, mode, owner, type,\n"
		"target, rdev.  Exit 3 on drift.\n"
		"\n"
		"  -p, --pubkey PUB   public key (PEM) for verify\n"
		"  -r, --root DIR     tree to check\n"
		"\n"
		"Exit status: 0 ok, 1 failure (bad signature, checksum), 2 usage,\n"
		"3 drift.\n",
	.run = cmd_manifest,
};

static int verify(struct nf_global *g, const char *path, const char *pub)
{
	struct nf_emit *e;
	int r;

	if (!pub)
		return nf_usage_error("manifest", "verify needs --pubkey PUB");
	if ((r = nf_manifest_verify(g->ctx, path, pub)))
		return nf_cmd_fail(g, "manifest", r == NF_E_FINDINGS ? -EINVAL : r);
	if (nf_emit_new(&e, stdout, g->json))
		return NF_EXIT_FAILURE;
	if (!g->quiet || g->json) {
		nf_emit_str(e, "manifest", "%s: ", path);
		nf_emit_bool(e, "verified", "signature and archive ok\n", 1);
	}
	nf_emit_end(e);
	nf_emit_free(e);
	return 0;
}

static int check(struct nf_global *g, const char *path, const char *root)
{
	json_t *m = NULL, *drift = json_array();
	struct nf_emit *e = NULL;
	int r, rc;

	if (!root) {
		json_decref(drift);
		return nf_usage_error("manifest", "check needs --root DIR");
	}
	if (!drift)
		return NF_EXIT_FAILURE;
	if ((r = nf_manifest_load(g->ctx, path, &m)) ||
	    (r = nf_manifest_check(g->ctx, m, root, drift))) {
		rc = nf_cmd_fail(g, "manifest", r);
		goto out;
	}
	if (nf_emit_new(&e, stdout, g->json)) {
		rc = NF_EXIT_FAILURE;
		goto out;
	}
	nf_emit_changes(e, "drift", drift);
	nf_emit_int(e, "count", g->quiet ? NULL : "%lld differences\n",
		    (long long)json_array_size(drift));
	nf_emit_end(e);
	rc = json_array_size(drift) ? NF_EXIT_FINDINGS : NF_EXIT_OK;
out:
	nf_emit_free(e);
	json_decref(m);
	json_decref(drift);
	return rc;
}

static int cmd_manifest(struct nf_global *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "pubkey", required_argument, NULL, 'p' },
		{ "root", required_argument, NULL, 'r' },
		{ 0 }
	};
	const char *pos[2] = { 0 }, *pub = NULL, *root = NULL;
	struct nf_args args = { pos, 2 };
	int o;

	while ((o = nf_getopt_args(&nf_cmd_manifest, argc, argv, "p:r:", opts,
				   &args)) != -1) {
		switch (o) {
		case -2: return 0;
		case 'p': pub = optarg; break;
		case 'r': root = optarg; break;
		default: return NF_EXIT_USAGE;
		}
	}
	if (args.n < 1)
		return nf_usage_error("manifest", "missing 'verify' or 'check'");
	if (args.n < 2)
		return nf_usage_error("manifest", "missing MANIFEST");
	if (!strcmp(pos[0], "verify"))
		return verify(g, pos[1], pub);
	if (!strcmp(pos[0], "check"))
		return check(g, pos[1], root);
	return nf_usage_error("manifest", "unknown subcommand '%s'", pos[0]);
}
