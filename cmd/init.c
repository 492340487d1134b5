/* SPDX-License-Identifier: MIT */
/* nodeforge init: a site file of one's own, instead of the example */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"

static int cmd_init(struct nf_global *g, int argc, char **argv);

const struct nf_cmd nf_cmd_init = {
	.name = "init",
	.summary = "write a site file for your cluster (network, server, NTP)",
	.help = "usage: nodeforge init --network CIDR --server URL [--ntp ADDR]...\n"
		"                      [--gateway IP] [--dns ADDR]... [--domain NAME]\n"
		"                      [--cluster NAME] [--distro NAME] [--munge-key FILE]\n"
		"                      [--password-file FILE] [-o, --out FILE] [--force]\n"
		"\n"
		"Write the site file of your cluster (default: site.yaml), the one\n"
		"place for what differs per site: the provisioning network, where\n"
		"nodes reach the boot server, the time servers, where the secrets\n"
		"are on the boot server.  With --munge-key naming a key that exists\n"
		"(nodeforge keys munge), its fingerprint is recorded, so that every\n"
		"image built from the site refuses any other key.  The file is\n"
		"checked as lint checks a site before it is published; an existing\n"
		"one is kept unless --force.  Use it with --site FILE or\n"
		"NODEFORGE_SITE=FILE.\n"
		"\n"
		"  --network CIDR     the provisioning network (required)\n"
		"  --server URL       the boot server as nodes reach it (required)\n"
		"  --ntp ADDR         a time server (repeatable; default: the server's\n"
		"                     host)\n"
		"  --gateway IP       the provisioning network's router\n"
		"  --dns ADDR         a name server (repeatable)\n"
		"  --domain NAME      the nodes' DNS domain\n"
		"  --cluster NAME     Slurm's ClusterName (default: cluster)\n"
		"  --distro NAME      debian13 (default), debian12, rocky9, ...\n"
		"  --munge-key FILE   where the munge key is on the boot server\n"
		"                     (default /etc/nodeforge/secrets/munge.key)\n"
		"  --password-file FILE\n"
		"                     the slurmdbd password file on the boot server\n"
		"  -o, --out FILE     the site file to write (default: site.yaml;\n"
		"                     also --output)\n"
		"  --force            replace an existing file\n"
		"\n"
		"Exit status: 0 written, 1 not written (exists, cannot write), 2 usage\n"
		"error, 3 the values make an invalid site (FILE:LINE:COL: error: ...).\n",
	.run = cmd_init,
};

#define NF_INIT_MAX 16

/* *path as an absolute path in buf, resolved in the working directory:
 * the file itself when it exists, else its directory and its name */
static int abs_path(const char *opt, const char **path, char buf[PATH_MAX])
{
	char dir[PATH_MAX], real[PATH_MAX];
	const char *slash = strrchr(*path, '/');

	if ((*path)[0] == '/' || realpath(*path, buf)) {
		if ((*path)[0] != '/')
			*path = buf;
		return 0;
	}
	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - *path) : 1,
		 slash ? *path : ".");
	if (!realpath(dir, real)) {
		fprintf(stderr, "nodeforge init: %s '%s': no such directory "
			"'%s'\n", opt, *path, dir);
		return NF_EXIT_FAILURE;
	}
	if (snprintf(buf, PATH_MAX, "%s/%s", real, slash ? slash + 1 : *path) >=
	    PATH_MAX)
		return nf_usage_error("init", "%s '%s': the path is too long",
				      opt, *path);
	*path = buf;
	return 0;
}

static int cmd_init(struct nf_global *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "network", required_argument, NULL, 'n' },
		{ "server", required_argument, NULL, 's' },
		{ "ntp", required_argument, NULL, 't' },
		{ "gateway", required_argument, NULL, 'g' },
		{ "dns", required_argument, NULL, 'd' },
		{ "domain", required_argument, NULL, 'D' },
		{ "cluster", required_argument, NULL, 'c' },
		{ "distro", required_argument, NULL, 'r' },
		{ "munge-key", required_argument, NULL, 'm' },
		{ "password-file", required_argument, NULL, 'p' },
		{ "out", required_argument, NULL, 'o' },
		{ "output", required_argument, NULL, 'o' },
		{ "force", no_argument, NULL, 'f' },
		{ 0 }
	};
	const char *ntp[NF_INIT_MAX], *dns[NF_INIT_MAX], *out = "site.yaml";
	struct nf_site_init o = { .ntp = ntp, .dns = dns };
	char host[256];
	struct nf_diags d;
	char mk[PATH_MAX], pw[PATH_MAX];
	uint32_t net, ip;
	unsigned prefix;
	int c, r;

	while ((c = nf_getopt_args(&nf_cmd_init, argc, argv, "o:", opts,
				   NULL)) != -1) {
		switch (c) {
		case -2: return 0;
		case -3: return NF_EXIT_USAGE;
		case 'n': o.network = optarg; break;
		case 's': o.server = optarg; break;
		case 'g': o.gateway = optarg; break;
		case 'D': o.domain = optarg; break;
		case 'c': o.cluster = optarg; break;
		case 'r': o.distro = optarg; break;
		case 'm': o.munge_key = optarg; break;
		case 'p': o.password = optarg; break;
		case 'o': out = optarg; break;
		case 'f': o.force = 1; break;
		case 't':
		case 'd':
			if ((c == 't' ? o.nntp : o.ndns) >= NF_INIT_MAX)
				return nf_usage_error("init", "at most %d of --%s",
						      NF_INIT_MAX, c == 't' ? "ntp" : "dns");
			if (c == 't')
				ntp[o.nntp++] = optarg;
			else
				dns[o.ndns++] = optarg;
			break;
		}
	}
	if (!o.network || !o.server)
		return nf_usage_error("init", "missing '%s'", !o.network
				      ? "--network CIDR" : "--server URL");
	/* the site file holds absolute paths; a relative one is relative
	 * to the working directory, as on every command line */
	if ((o.munge_key && (r = abs_path("--munge-key", &o.munge_key, mk))) ||
	    (o.password && (r = abs_path("--password-file", &o.password, pw))))
		return r;
	{
		const char *h = strstr(o.server, "://");

		snprintf(host, sizeof(host), "%s", h ? h + 3 : o.server);
		if (host[0] == '[') {
			memmove(host, host + 1, strlen(host));
			host[strcspn(host, "]")] = '\0';
		} else {
			host[strcspn(host, ":/")] = '\0';
		}
	}
	if (nf_cidr_parse(o.network, &net, &prefix))
		return nf_usage_error("init", "'--network %s': not a network such "
				      "as 10.0.0.0/16", o.network);
	/* the nodes reach the server from the provisioning network */
	if (!nf_ipv4_parse(host, &ip) && !nf_cidr_contains(net, prefix, ip))
		return nf_usage_error("init", "'--server %s': %s is not in the "
				      "provisioning network %s", o.server, host,
				      o.network);
	/* by default the boot server keeps the time too */
	if (!o.nntp)
		ntp[o.nntp++] = host;
	nf_diags_init(&d);
	r = nf_site_init(g->ctx, &o, out, &d);
	if (r) {
		/* the file was not written: its lines mean nothing to the
		 * reader, the values in the messages do */
		for (size_t i = 0; i < d.n; i++)
			if (d.v[i].severity == NF_SEV_ERROR)
				fprintf(stderr, "nodeforge init: %s ('%s' not "
					"written)\n", d.v[i].message, out);
		if (!nf_diags_errors(&d))
			fprintf(stderr, "nodeforge init: %s\n", nf_error_text(g->ctx, r));
		nf_diags_free(&d);
		return r == NF_E_PARSE || r == NF_E_INVALID ? NF_EXIT_FINDINGS
							    : r == NF_E_USAGE ? NF_EXIT_USAGE
							    : NF_EXIT_FAILURE;
	}
	/* what lint would warn about the new file (an unpinned munge key) */
	if (!g->quiet && d.n)
		nf_print_diags(g, &d);
	nf_diags_free(&d);
	if (!g->quiet)
		printf("wrote %s: use it with --site %s (or NODEFORGE_SITE=%s)\n", out,
		       out, out);
	return 0;
}
