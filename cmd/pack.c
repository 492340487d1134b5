/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"

static int cmd_pack(struct nf_global *g, int argc, char **argv);

const struct nf_cmd nf_cmd_pack = {
	.name = "pack",
	.summary = "pack a root tree into a deterministic archive and manifest",
	.help = "usage: nodeforge pack ROOT -o OUT [--format F] [--level N] [--threads N] [--epoch N]\n"
		"\n"
		"Pack the tree under ROOT into OUT (tar or cpio newc, zstd, xz, gzip\n"
		"or none) and write OUT.manifest.json.  The same tree always gives the\n"
		"same bytes: entries sorted, numeric owners, mtimes clamped to the\n"
		"epoch, no atime/ctime, synthesized inode numbers.\n"
		"\n"
		"  -o, --out OUT      archive to write (published atomically; also\n"
		"                     --output)\n"
		"  -f, --format F     tar.zst, cpio.zst, tar.xz, cpio.xz, tar.gz,\n"
		"                     cpio.gz, tar or cpio\n"
		"                     (default: from OUT's suffix)\n"
		"  -l, --level N      compression level (zstd 1-19, default 3;\n"
		"                     xz 0-9, default 6; gzip 1-9, default 6)\n"
		"  -t, --threads N    zstd or xz worker threads (default: one per CPU;\n"
		"                     the output does not depend on it)\n"
		"  -e, --epoch N      clamp mtimes to N (default: $SOURCE_DATE_EPOCH,\n"
		"                     else 0)\n"
		"\n"
		"Exit status: 0 packed, 1 failure (nothing published), 2 usage error.\n",
	.run = cmd_pack,
};

static int parse_num(const char *opt, const char *s, long long lo,
		     long long hi, long long *out)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || !*s || *end || v < lo || v > hi)
		return nf_usage_error("pack", "bad value '%s' for %s", s, opt);
	*out = v;
	return 0;
}

static void progress(void *data, unsigned long long n, unsigned long long total,
		     unsigned long long bytes)
{
	(void)data;
	fprintf(stderr, "\rpacking: %llu/%llu entries, %llu MiB", n, total,
		bytes >> 20);
	if (n == total)
		fputc('\n', stderr);
}

static int cmd_pack(struct nf_global *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "output", required_argument, NULL, 'o' },
		{ "out", required_argument, NULL, 'o' },
		{ "format", required_argument, NULL, 'f' },
		{ "level", required_argument, NULL, 'l' },
		{ "threads", required_argument, NULL, 't' },
		{ "epoch", required_argument, NULL, 'e' },
		{ 0 }
	};
	struct nf_pack_opts po = { .level = -1 };
	const char *out = NULL, *fmt = NULL, *root = NULL, *env;
	struct nf_args args = { &root, 1 };
	long long v;
	int o, r, have_epoch = 0;

	while ((o = nf_getopt_args(&nf_cmd_pack, argc, argv, "o:f:l:t:e:", opts,
				   &args)) != -1) {
		switch (o) {
		case -2: return 0;
		case -3: return NF_EXIT_USAGE;
		case 'o': out = optarg; break;
		case 'f': fmt = optarg; break;
		case 'l':
			if (parse_num("--level", optarg, 0, 22, &v))
				return NF_EXIT_USAGE;
			po.level = (int)v;
			break;
		case 't':
			if (parse_num("--threads", optarg, 1, 256, &v))
				return NF_EXIT_USAGE;
			po.threads = (int)v;
			break;
		case 'e':
			if (parse_num("--epoch", optarg, 0, 1LL << 40, &v))
				return NF_EXIT_USAGE;
			po.epoch = v;
			have_epoch = 1;
			break;
		default: return NF_EXIT_USAGE;
		}
	}
	if (!root)
		return nf_usage_error("pack", "missing ROOT");
	if (!out)
		return nf_usage_error("pack", "missing -o OUT");
	if (nf_pack_parse_format(fmt ? fmt : out, &po.format, &po.compressor)) {
		if (fmt)
			return nf_usage_error("pack", "unknown format '%s'", fmt);
		return nf_usage_error("pack",
				      "cannot tell the format from '%s': use "
				      "--format or a suffix such as .tar.zst",
				      out);
	}
	if (!have_epoch && (env = getenv("SOURCE_DATE_EPOCH")) && *env) {
		if (parse_num("SOURCE_DATE_EPOCH", env, 0, 1LL << 40, &v))
			return NF_EXIT_USAGE;
		po.epoch = v;
	}
	if (po.level > 9 && po.compressor == NF_COMP_GZIP)
		return nf_usage_error("pack", "bad value '%d' for --level: gzip "
				      "takes 1-9", po.level);
	if (po.level > 9 && po.compressor == NF_COMP_XZ)
		return nf_usage_error("pack", "bad value '%d' for --level: xz "
				      "takes 0-9", po.level);
	if (!g->quiet && !g->json && isatty(STDERR_FILENO))
		po.progress = progress;
	r = nf_pack(g->ctx, root, out, &po);
	if (r)
		return nf_cmd_fail(g, "pack", r);
	{
		struct nf_emit *e;

		if (nf_emit_new(&e, stdout, g->json))
			return NF_EXIT_FAILURE;
		if (!g->quiet || g->json) {
			nf_emit_str(e, "archive", "%s\n", out);
			nf_emit_str(e, "format", NULL,
				    nf_pack_format_name(po.format, po.compressor));
		}
		nf_emit_end(e);
		nf_emit_free(e);
	}
	return 0;
}
