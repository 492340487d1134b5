/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "cmd.h"

static int cmd_serve(struct nf_global *g, int argc, char **argv);

const struct nf_cmd nf_cmd_serve = {
	.name = "serve",
	.summary = "serve a boot tree and collect node verdicts",
	.help = "usage: nodeforge serve --tree DIR [--listen ADDR:PORT] [--state-dir DIR]\n"
		"                       [--threads N] [-i FILE [--enroll-state DIR]]\n"
		"                       [--trusted-proxy ADDR]... [--head-timeout SECONDS]\n"
		"                       [--per-address N]\n"
		"\n"
		"Serve the boot tree rendered by 'nodeforge pxe' over HTTP (sendfile,\n"
		"HEAD, Range, ETag) with the node API:\n"
		"  POST /api/v1/nodes/NAME/verdict   the verifier's report (JSON, <= 64 KiB)\n"
		"  GET  /api/v1/nodes                every node's state, image, verdict\n"
		"  GET  /api/v1/nodes/NAME           one node, with its full verdict\n"
		"  GET  /api/v1/unknown/MAC          an unknown machine reports itself\n"
		"  POST /api/v1/enroll               first-boot claim of a node's secrets\n"
		"  GET  /api/v1/enroll               enrollment windows, claims, refusals\n"
		"                                    (to the boot server itself only)\n"
		"  POST /api/v1/rotate               a node's poll during a key rotation\n"
		"A node is 'booting' once it fetches its per-MAC iPXE script from its\n"
		"inventory address; its last verdict stays until the next.  The\n"
		"enrollment routes are served with --inventory (see 'nodeforge enroll').\n"
		"\n"
		"  -t, --tree DIR         the boot tree\n"
		"  -l, --listen ADDR:PORT\n"
		"                         address to listen on (default: 0.0.0.0:8080;\n"
		"                         port 0 picks a free port; IPv6 as\n"
		"                         [ADDR6]:PORT)\n"
		"      --state-dir DIR    where node states are kept (default: state;\n"
		"                         also --state)\n"
		"      --threads N        worker threads (default: one per CPU)\n"
		"  -i, --inventory FILE   racks.yaml: serve enrollment for its nodes, with\n"
		"                         the site's secrets\n"
		"      --enroll-state DIR\n"
		"                         enrollment state, mode 0700, outside the tree\n"
		"                         (default: the site's server.state_dir, else\n"
		"                         /var/lib/nodeforge)\n"
		"      --trusted-proxy ADDR\n"
		"                         a proxy in front of serve whose X-Real-IP\n"
		"                         header is the node's address (repeatable,\n"
		"                         at most 16; default: none, every request is\n"
		"                         judged by its TCP peer).  Behind the nginx\n"
		"                         that 'nodeforge pxe' renders: 127.0.0.1\n"
		"      --head-timeout SECONDS\n"
		"                         a request's line, headers and body must\n"
		"                         arrive whole within this time of the\n"
		"                         connection's start or the previous\n"
		"                         request's end, else the connection is\n"
		"                         closed (default: 10)\n"
		"      --per-address N    connections one address may hold at once;\n"
		"                         more are closed at once (default: 64)\n"
		"\n"
		"The soft limit on open files is raised to the hard one.\n"
		"\n"
		"Prints 'listening on URL', then one access line per request on stdout\n"
		"(-q: none).  Stops on SIGINT or SIGTERM.\n"
		"\n"
		"Exit status: 0 after SIGINT or SIGTERM, 1 it cannot start, 2 usage error.\n",
	.run = cmd_serve,
};

static void log_line(void *data, const char *line)
{
	(void)data;
	fprintf(stdout, "%s\n", line);
}

/* A whole number 1..max for option `name`; 0, or -1 after the usage
 * error */
static int count_arg(const char *name, const char *arg, unsigned long max,
		     unsigned *out)
{
	char *end;
	unsigned long n;

	errno = 0;
	n = strtoul(arg, &end, 10);
	if (!*arg || *end || errno || !n || n > max || *arg == '-' || *arg == '+') {
		nf_usage_error("serve", "invalid %s '%s': expected a number "
			       "from 1 to %lu", name, arg, max);
		return -1;
	}
	*out = (unsigned)n;
	return 0;
}

/* Every client the server accepts needs a descriptor, and every file it
 * serves another: take all the process may have */
static void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static int cmd_serve(struct nf_global *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "tree", required_argument, NULL, 't' },
		{ "listen", required_argument, NULL, 'l' },
		{ "state", required_argument, NULL, 'S' },
		{ "state-dir", required_argument, NULL, 'S' },
		{ "threads", required_argument, NULL, 'T' },
		{ "inventory", required_argument, NULL, 'i' },
		{ "enroll-state", required_argument, NULL, 'E' },
		{ "trusted-proxy", required_argument, NULL, 'P' },
		{ "head-timeout", required_argument, NULL, 'H' },
		{ "per-address", required_argument, NULL, 'A' },
		{ 0 }
	};
	const char *trusted[NF_SERVE_TRUSTED_MAX];
	const char *inv_path = NULL, *enroll_state = NULL;
	struct nf_serve_opts so = { .listen = "0.0.0.0:8080",
				    .state_dir = "state" };
	struct nf_server *srv;
	sigset_t set;
	int o, r, sig;

	while ((o = nf_getopt_args(&nf_cmd_serve, argc, argv, "t:l:i:", opts,
				   NULL)) != -1) {
		switch (o) {
		case -2: return 0;
		case -3: return NF_EXIT_USAGE;
		case 't': so.tree = optarg; break;
		case 'l': so.listen = optarg; break;
		case 'S': so.state_dir = optarg; break;
		case 'i': inv_path = optarg; break;
		case 'E': enroll_state = optarg; break;
		case 'P': {
			unsigned char a[sizeof(struct in6_addr)];

			if (inet_pton(AF_INET, optarg, a) != 1 &&
			    inet_pton(AF_INET6, optarg, a) != 1)
				return nf_usage_error("serve", "invalid "
						      "--trusted-proxy '%s': "
						      "expected an IP address",
						      optarg);
			if (so.ntrusted_proxies == NF_SERVE_TRUSTED_MAX)
				return nf_usage_error("serve", "more than %d "
						      "--trusted-proxy",
						      NF_SERVE_TRUSTED_MAX);
			trusted[so.ntrusted_proxies++] = optarg;
			so.trusted_proxies = trusted;
			break;
		}
		case 'T':
			if (count_arg("--threads", optarg, 1024, &so.threads))
				return NF_EXIT_USAGE;
			break;
		case 'H':
			if (count_arg("--head-timeout", optarg, 3600,
				      &so.head_timeout))
				return NF_EXIT_USAGE;
			break;
		case 'A':
			if (count_arg("--per-address", optarg, 65536,
				      &so.per_address))
				return NF_EXIT_USAGE;
			break;
		}
	}
	if (!so.tree)
		return nf_usage_error("serve", "missing '--tree DIR'");
	if ((r = nf_cmd_path_arg("serve", "--tree", so.tree, 0)))
		return r;
	if (!g->quiet) {
		so.access_log = log_line;
		setvbuf(stdout, NULL, _IOLBF, 0);
	}
	/* the signals are taken by sigwait below, never by a worker thread */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	raise_nofile();
	if (inv_path) {
		if ((r = nf_cmd_setup(g, inv_path)))
			return r;
		r = nf_enroll_from_site(g->ctx, g->site, g->inv, enroll_state,
					so.tree, &so.enroll);
		/* under the unit, the secrets come as credentials */
		if (!r)
			r = nf_enroll_credentials(so.enroll,
					getenv("CREDENTIALS_DIRECTORY"));
		if (r)
			return nf_cmd_fail(g, "serve", r);
	}
	r = nf_server_start(g->ctx, &so, &srv);
	if (r) {
		nf_enroll_free(so.enroll);
		if (r == NF_E_USAGE)
			return nf_usage_error("serve", "%s", nf_error_text(g->ctx, r));
		return nf_cmd_fail(g, "serve", r);
	}
	printf("listening on %s\n", nf_server_url(srv));
	fflush(stdout);
	while (sigwait(&set, &sig) != 0)
		;
	nf_server_stop(srv);
	nf_enroll_free(so.enroll);
	return 0;
}
