/* SPDX-License-Identifier: MIT */
/* nodeforge fetch: one pinned artifact into the build cache. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"

static int cmd_fetch(struct nf_global *g, int argc, char **argv);

const struct nf_cmd nf_cmd_fetch = {
	.name = "fetch",
	.summary = "fetch a pinned artifact into the build cache",
	.help = "usage: nodeforge fetch NAME URL SHA256 [--cache DIR] [--mirror SRC]\n"
		"                       [--offline] [--timeout S] [--retries N]\n"
		"\n"
		"Download URL into the content-addressed cache that 'nodeforge\n"
		"build' uses for system.artifacts, check it against SHA256 (a\n"
		"mismatch is refused), and print the cached file's path.\n"
		"Interrupted downloads resume; stalls time out and are retried\n"
		"with backoff; http_proxy/https_proxy/no_proxy are honoured.\n"
		"\n"
		"      --cache DIR    cache (default: ~/.cache/nodeforge)\n"
		"  -m, --mirror SRC   look the URL's file name up in SRC instead\n"
		"                     (a directory or a URL prefix)\n"
		"      --offline      cache and directory mirror only\n"
		"      --timeout S    seconds without a byte before a retry (30)\n"
		"      --retries N    retries after the first try (3)\n"
		"\n"
		"Exit status: 0 cached, 1 failure, 2 usage error.\n",
	.run = cmd_fetch,
};

static long num(const char *s, long lo, long hi, int *bad)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || !*s || v < lo || v > hi)
		*bad = 1;
	return v;
}

static int cmd_fetch(struct nf_global *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "cache", required_argument, NULL, 'c' },
		{ "mirror", required_argument, NULL, 'm' },
		{ "offline", no_argument, NULL, 'O' },
		{ "timeout", required_argument, NULL, 't' },
		{ "retries", required_argument, NULL, 'r' },
		{ 0 }
	};
	struct nf_fetch_opts fo = { 0 };
	const char *pos[3];
	struct nf_args args = { pos, 3 };
	char *path = NULL;
	struct nf_emit *e;
	int o, bad = 0, r;

	while ((o = nf_getopt_args(&nf_cmd_fetch, argc, argv, "m:", opts,
				   &args)) != -1) {
		switch (o) {
		case -2: return 0;
		case -3: return NF_EXIT_USAGE;
		case 'c': fo.cache = optarg; break;
		case 'm': fo.mirror = optarg; break;
		case 'O': fo.offline = 1; break;
		case 't':
			fo.stall_timeout_s = num(optarg, 1, 86400, &bad);
			if (bad)
				return nf_usage_error("fetch", "--timeout '%s' is "
						      "not 1..86400 seconds", optarg);
			break;
		case 'r':
			fo.retries = (int)num(optarg, 0, 100, &bad);
			if (bad)
				return nf_usage_error("fetch", "--retries '%s' is "
						      "not 0..100", optarg);
			if (!fo.retries)
				fo.retries = -1;
			break;
		default:
			return nf_usage_error("fetch", "unknown option");
		}
	}
	if (args.n != 3)
		return nf_usage_error("fetch", "expected NAME URL SHA256");
	if (fo.mirror && (r = nf_cmd_path_arg("fetch", "--mirror", fo.mirror,
					       NF_PATH_URL)))
		return r;
	/* the cache 'build' uses; without HOME, one in the current directory */
	if (!fo.cache && !(fo.cache = nf_cmd_default_cache()))
		fo.cache = "./.cache/nodeforge";
	r = nf_fetch(g->ctx, pos[0], pos[1], pos[2], &fo, &path);
	if (r)
		return nf_cmd_fail(g, "fetch", r);
	if (nf_emit_new(&e, stdout, g->json)) {
		free(path);
		return NF_EXIT_FAILURE;
	}
	nf_emit_str(e, "path", "%s\n", path);
	r = nf_emit_end(e);
	nf_emit_free(e);
	free(path);
	return r ? NF_EXIT_FAILURE : 0;
}
