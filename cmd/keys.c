/* SPDX-License-Identifier: MIT */
/* nodeforge keys KIND: key generation; one row per kind in `kinds`. */
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "keys.h"

static int cmd_keys(struct nf_global *g, int argc, char **argv);

const struct nf_cmd nf_cmd_keys = {
	.name = "keys",
	.summary = "generate keys (signing, munge), rotate the munge key",
	.help = "usage: nodeforge keys KIND -o DIR|FILE [--owner USER]\n"
		"       nodeforge keys rotate munge [-i FILE] [--enroll-state DIR]\n"
		"                 [--stage-timeout SECS] [--group-timeout SECS]\n"
		"                 [--status | --resume | --abort]\n"
		"\n"
		"Generate a key of the given kind.  An existing key is never replaced.\n"
		"\n"
		"Kinds:\n"
		"  signing   Ed25519 image signing key: DIR/signing.key (0600, PEM)\n"
		"            and DIR/signing.pub (PEM); DIR created 0700 if missing\n"
		"  munge     1024 random bytes (OpenSSL) into FILE, mode 0400; prints\n"
		"            its sha256:<hex> fingerprint for the site file\n"
		"            (secrets.munge_key.fingerprint)\n"
		"\n"
		"  rotate    stage a new munge key on every enrolled node, switch\n"
		"            controllers then compute rack by rack, report nodes that\n"
		"            did not switch (docs/nodeforge-keys.md); --status shows the\n"
		"            last rotation; --resume continues an interrupted one, --abort\n"
		"            goes back to the old key on the server and the nodes\n"
		"\n"
		"  -o, --out DIR|FILE      where to write the key (also --output)\n"
		"      --owner USER        owner of the munge key (default: the caller)\n"
		"\n"
		"rotate munge:\n"
		"  -i, --inventory FILE    the enrolled nodes (default: racks.yaml)\n"
		"      --enroll-state DIR  the running serve's enrollment state\n"
		"                          (--state DIR is the same)\n"
		"      --stage-timeout SECS  how long every node has to stage the\n"
		"                          new key (default 300)\n"
		"      --group-timeout SECS  how long each group has to switch\n"
		"                          (default 120)\n"
		"      --status            show the last rotation\n"
		"      --resume            continue an interrupted rotation\n"
		"      --abort             go back to the old key\n"
		"\n"
		"Exit status: 0 written (a rotation: every node switched), 1 failure (a rotation:\n"
		"some nodes did not switch, listed), 2 usage error.\n",
	.run = cmd_keys,
};

struct keys_opts {
	const char *out;
	const char *owner;
	int argc;          /* arguments after KIND */
	char **argv;
};

static int keys_signing(struct nf_global *g, const struct keys_opts *o)
{
	const char *dir = o->out;
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

static int keys_munge(struct nf_global *g, const struct keys_opts *o)
{
	char fp[NF_FINGERPRINT_LEN];
	struct nf_emit *e;
	int r = nf_munge_key_new(g->ctx, o->out, o->owner, fp);

	if (r)
		return nf_cmd_fail(g, "keys", r);
	if (nf_emit_new(&e, stdout, g->json))
		return NF_EXIT_FAILURE;
	nf_emit_str(e, "kind", NULL, "munge");
	nf_emit_str(e, "path", NULL, o->out);
	nf_emit_int(e, "bytes", NULL, NF_MUNGE_KEY_LEN);
	nf_emit_str(e, "fingerprint", "%s\n", fp);
	nf_emit_end(e);
	nf_emit_free(e);
	return 0;
}

static int keys_rotate(struct nf_global *g, const struct keys_opts *o)
{
	return nf_keys_rotate(g, o->argc, o->argv);
}

static const struct {
	const char *name;
	int (*run)(struct nf_global *g, const struct keys_opts *o);
	int needs_out;
} kinds[] = {
	{ "signing", keys_signing, 1 },
	{ "munge", keys_munge, 1 },
	{ "rotate", keys_rotate, 0 },
};

static int cmd_keys(struct nf_global *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "output", required_argument, NULL, 'o' },
		{ "out", required_argument, NULL, 'o' },
		{ "owner", required_argument, NULL, 'O' },
		{ 0 }
	};
	struct keys_opts ko = { 0 };
	const char *kind = NULL;
	struct nf_args args = { &kind, 1 };
	int o;

	/* `keys rotate ...` has options of its own */
	if (argc > 1 && !strcmp(argv[1], "rotate")) {
		ko.argc = argc - 1;
		ko.argv = argv + 1;
		return keys_rotate(g, &ko);
	}
	while ((o = nf_getopt_args(&nf_cmd_keys, argc, argv, "o:", opts,
				   &args)) != -1) {
		if (o == -2)
			return 0;
		if (o == 'o')
			ko.out = optarg;
		else if (o == 'O')
			ko.owner = optarg;
		else
			return NF_EXIT_USAGE;
	}
	if (!kind)
		return nf_usage_error("keys", "missing KIND (signing, munge, rotate)");
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp(kinds[i].name, kind)) {
			if (kinds[i].needs_out && !ko.out)
				return nf_usage_error("keys", "missing -o %s",
						      strcmp(kind, "munge")
							      ? "DIR" : "FILE");
			if (ko.owner && strcmp(kind, "munge"))
				return nf_usage_error("keys",
						      "--owner is for munge keys");
			return kinds[i].run(g, &ko);
		}
	return nf_usage_error("keys", "unknown key kind '%s'", kind);
}
