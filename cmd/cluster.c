/* SPDX-License-Identifier: MIT */
/* nodeforge cluster: the cluster part of slurm.conf and the hosts block,
 * rendered from the inventory (show) or fetched at boot (fetch). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"

static int cmd_cluster(struct nf_global *g, int argc, char **argv);

const struct nf_cmd nf_cmd_cluster = {
	.name = "cluster",
	.summary = "render or fetch the cluster's controllers, nodes and hosts",
	.help = "usage: nodeforge cluster show --inventory FILE [--hosts]\n"
		"       nodeforge cluster fetch [--server URL] [--root DIR] "
		"[--wait SECONDS]\n"
		"                               [--pubkey PUB]\n"
		"\n"
		"Every image's /etc/slurm/slurm.conf ends in 'Include\n"
		"/etc/slurm/cluster.conf': the controllers (the inventory's nodes\n"
		"whose role runs slurmctld), the accounting host (slurmdbd), one\n"
		"NodeName= line per role that runs slurmd and the partitions.\n"
		"'nodeforge pxe' renders it into the boot tree as cluster/slurm.conf,\n"
		"with cluster/hosts (every node's name and address), so adding a\n"
		"rack is a new tree, not a new image.\n"
		"\n"
		"show: print the cluster part of slurm.conf (with --hosts: the hosts\n"
		"block) rendered from the inventory.\n"
		"fetch: on a node (nodeforge-cluster.service, at every boot, before\n"
		"the Slurm daemons): fetch both from the boot server with their\n"
		"signatures (NAME.sig, by the key the image was signed with:\n"
		"/etc/nodeforge/signing.pub) and, only when both verify, install\n"
		"/etc/slurm/cluster.conf and the marked block of /etc/hosts, each\n"
		"atomically; the server is nodeforge.server= of the kernel command\n"
		"line unless --server is given.  With --wait, retry until the\n"
		"server answers or SECONDS pass; a tree without cluster files\n"
		"(HTTP 404: its inventory runs no slurmctld) fails at once.\n"
		"\n"
		"Options:\n"
		"  -i, --inventory FILE  the inventory (racks.yaml)\n"
		"      --hosts           show the hosts block instead\n"
		"      --server URL      the boot server (http://ADDR:PORT)\n"
		"      --root DIR        install under DIR (default /)\n"
		"      --wait SECONDS    retry for up to SECONDS (default 0: once)\n"
		"      --pubkey PUB      the key the files must be signed with\n"
		"                        (default: ROOT/etc/nodeforge/signing.pub)\n"
		"\n"
		"Exit status: 0 ok, 1 failure (the server's answer, a file unsigned\n"
		"or not signed by PUB, or a file that cannot be written),\n"
		"2 usage error, 3 the inventory or profiles are invalid.\n",
	.run = cmd_cluster,
};

enum { O_HOSTS = 256, O_SERVER, O_ROOT, O_WAIT, O_PUBKEY };

static int cluster_show(struct nf_global *g, const char *inv, int hosts)
{
	char *conf = NULL, *h = NULL;
	int r;

	if ((r = nf_cmd_setup(g, NULL)))
		return r;
	if ((r = nf_cluster_render(g->ctx, inv, g->site, &conf, &h))) {
		fprintf(stderr, "nodeforge cluster: %s\n", nf_error_text(g->ctx, r));
		return r == NF_E_INVALID ? NF_EXIT_FINDINGS : NF_EXIT_FAILURE;
	}
	fputs(hosts ? h : conf, stdout);
	free(conf);
	free(h);
	return NF_EXIT_OK;
}

static int cluster_fetch(struct nf_global *g, const char *server,
			 const char *root, const char *pubkey, long wait)
{
	char *cmdline = NULL;
	int r;

	if (!server) {
		if (nf_cmdline_get(g->ctx, "nodeforge.server", &cmdline))
			return nf_usage_error("cluster", "no --server and no "
					      "nodeforge.server= on the kernel "
					      "command line");
		server = cmdline;
	}
	for (long waited = 0;; waited += 5) {
		if (!(r = nf_cluster_fetch(g->ctx, server, root, pubkey)))
			break;
		/* the server answered: the tree has none to wait for */
		if (waited >= wait || r == NF_E_NOTFOUND)
			break;
		if (!g->quiet)
			fprintf(stderr, "nodeforge cluster: %s (retrying)\n",
				nf_error_text(g->ctx, r));
		sleep(5);
	}
	if (r)
		fprintf(stderr, "nodeforge cluster: %s\n", nf_error_text(g->ctx, r));
	else if (!g->quiet)
		printf("cluster: /etc/slurm/cluster.conf and /etc/hosts from %s\n",
		       server);
	free(cmdline);
	return r ? NF_EXIT_FAILURE : NF_EXIT_OK;
}

static int cmd_cluster(struct nf_global *g, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "inventory", required_argument, NULL, 'i' },
		{ "hosts", no_argument, NULL, O_HOSTS },
		{ "server", required_argument, NULL, O_SERVER },
		{ "root", required_argument, NULL, O_ROOT },
		{ "wait", required_argument, NULL, O_WAIT },
		{ "pubkey", required_argument, NULL, O_PUBKEY },
		{ 0 }
	};
	const char *inv = NULL, *server = NULL, *root = NULL, *sub = NULL;
	const char *pubkey = NULL;
	struct nf_args args = { &sub, 1 };
	long wait = 0;
	int c, hosts = 0;

	/* options may come before or after the subcommand */
	while ((c = nf_getopt_args(&nf_cmd_cluster, argc, argv, "i:", longopts,
				   &args)) != -1) {
		char *end;

		switch (c) {
		case -2: return 0;
		case -3: return NF_EXIT_USAGE;
		case 'i': inv = optarg; break;
		case O_HOSTS: hosts = 1; break;
		case O_SERVER: server = optarg; break;
		case O_ROOT: root = optarg; break;
		case O_PUBKEY: pubkey = optarg; break;
		case O_WAIT:
			wait = strtol(optarg, &end, 10);
			if (*end || end == optarg || wait < 0 || wait > 86400)
				return nf_usage_error("cluster", "bad --wait '%s':"
						      " seconds, 0-86400", optarg);
			break;
		}
	}
	if (!sub)
		return nf_usage_error("cluster", "missing subcommand (show, fetch)");
	if (!strcmp(sub, "show")) {
		if (!inv)
			return nf_usage_error("cluster", "show needs --inventory FILE");
		return cluster_show(g, inv, hosts);
	}
	if (!strcmp(sub, "fetch"))
		return cluster_fetch(g, server, root, pubkey, wait);
	return nf_usage_error("cluster", "unknown subcommand '%s'", sub);
}
