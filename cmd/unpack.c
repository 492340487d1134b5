/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "cmd.h"

static int cmd_unpack(struct nf_global *g, int argc, char **argv);

const struct nf_cmd nf_cmd_unpack = {
	.name = "unpack",
	.summary = "unpack an image archive safely into a new directory",
	.help = "usage: nodeforge unpack ARCHIVE DIR [--devices] [--max-size N]\n"
		"\n"
		"Unpack ARCHIVE (tar or cpio; zstd, xz, gzip or none) into DIR, which\n"
		"must not exist or be empty.  Absolute paths, '..', writing through\n"
		"symlinks and device nodes (unless --devices) are refused; the\n"
		"unpacked tree appears in DIR only when everything succeeded.\n"
		"\n"
		"  --devices        create device nodes\n"
		"  --max-size N     cap on the total content (bytes, or 64M, 10G;\n"
		"                   default 64G)\n"
		"  --max-entries N  cap on the number of entries (default 10000000)\n"
		"\n"
		"Exit status: 0 unpacked, 1 refused or failed (DIR untouched), 2 usage error.\n",
	.run = cmd_unpack,
};

static int parse_size(const char *s, unsigned long long *out)
{
	char *end;
	unsigned long long v;
	int shift = 0;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-')
		return -1;
	switch (*end) {
	case 'K': case 'k': shift = 10; end++; break;
	case 'M': case 'm': shift = 20; end++; break;
	case 'G': case 'g': shift = 30; end++; break;
	case 'T': case 't': shift = 40; end++; break;
	}
	if (*end || v == 0 || v > (~0ULL >> shift))
		return -1;
	*out = v << shift;
	return 0;
}

static int cmd_unpack(struct nf_global *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "devices", no_argument, NULL, 'd' },
		{ "max-size", required_argument, NULL, 'm' },
		{ "max-entries", required_argument, NULL, 'n' },
		{ 0 }
	};
	struct nf_unpack_opts uo = { 0 };
	const char *pos[2] = { 0 };
	struct nf_args args = { pos, 2 };
	struct nf_emit *e;
	int o, r;

	while ((o = nf_getopt_args(&nf_cmd_unpack, argc, argv, "", opts,
				   &args)) != -1) {
		switch (o) {
		case -2: return 0;
		case 'd': uo.devices = 1; break;
		case 'm':
			if (parse_size(optarg, &uo.max_size))
				return nf_usage_error("unpack",
						      "bad value '%s' for --max-size",
						      optarg);
			break;
		case 'n':
			if (parse_size(optarg, &uo.max_entries))
				return nf_usage_error("unpack",
						      "bad value '%s' for --max-entries",
						      optarg);
			break;
		default: return NF_EXIT_USAGE;
		}
	}
	if (args.n < 2)
		return nf_usage_error("unpack", "need ARCHIVE and DIR");
	if ((r = nf_unpack(g->ctx, pos[0], pos[1], &uo)))
		return nf_cmd_fail(g, "unpack", r);
	if (nf_emit_new(&e, stdout, g->json))
		return NF_EXIT_FAILURE;
	if (!g->quiet || g->json) {
		nf_emit_str(e, "archive", "unpacked %s", pos[0]);
		nf_emit_str(e, "dir", " into %s\n", pos[1]);
	}
	nf_emit_end(e);
	nf_emit_free(e);
	return 0;
}
