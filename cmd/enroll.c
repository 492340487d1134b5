/* SPDX-License-Identifier: MIT */
/* nodeforge enroll: first-boot delivery of secrets, both sides. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "cmd.h"

static int cmd_enroll(struct nf_global *g, int argc, char **argv);

const struct nf_cmd nf_cmd_enroll = {
	.name = "enroll",
	.summary = "deliver secrets at first boot (node and server side)",
	.help = "usage: nodeforge enroll [--server URL] [--node NAME] [--mac MAC] [--root DIR]\n"
		"       nodeforge enroll open HOSTLIST --for DURATION [--reenroll]\n"
		"       nodeforge enroll list\n"
		"       nodeforge enroll answer [--rotate] --peer ADDR < CLAIM\n"
		"       nodeforge enroll rotate [--server URL] [--node NAME] [--root DIR]\n"
		"                 [--restart CMD] [--wait SECS] [--poll SECS]\n"
		"\n"
		"On a node (first boot, before munged): make a fresh X25519 key pair,\n"
		"claim this node's secrets from the boot server, open the sealed\n"
		"answer and write the munge key where the node's profile has it\n"
		"(munge.key_path, mode, owner: /etc/munge/munge.key, 0400, munge by\n"
		"default) and, on controllers, StoragePass= in\n"
		"/etc/slurm/slurmdbd.conf (0600, owner slurm).  The private key is\n"
		"wiped after use.\n"
		"\n"
		"  --server URL     boot server (default: nodeforge.server= of /proc/cmdline)\n"
		"  --node NAME      this node (default: nodeforge.node= of /proc/cmdline)\n"
		"  --mac MAC        this node's MAC (default: BOOTIF=, or the first NIC)\n"
		"  --root DIR       write below DIR; owners from DIR/etc/passwd\n"
		"  --bind ADDR      send from this local address\n"
		"  --sysroot DIR    read /proc/cmdline and /sys below DIR\n"
		"  --timeout SECS   give up on one attempt after SECS (default 30)\n"
		"  --retry SECS     retry an unreachable server for SECS (default 0);\n"
		"                   an answer, even a refusal, is never retried\n"
		"\n"
		"  rotate           poll the server during a munge key rotation: keep\n"
		"                   the staged key beside the key (KEY.next), switch\n"
		"                   when this node's group may, run --restart CMD\n"
		"                   (default: systemctl restart munge.service), until\n"
		"                   the switch is recorded or --wait SECS (default 600)\n"
		"  --restart CMD    rotate: what makes munged take the new key\n"
		"  --wait SECS      rotate: give up after SECS (default 600)\n"
		"  --poll SECS      rotate: ask the server every SECS (default 5)\n"
		"\n"
		"On the boot server:\n"
		"  open HOSTLIST    let these inventory nodes claim once within DURATION\n"
		"                   (30s, 15m, 2h, 1d); --reenroll drops an earlier claim\n"
		"  list             windows, claims and refusals\n"
		"  answer           answer one claim read from stdin as if it came from\n"
		"                   ADDR (for an HTTP front other than 'nodeforge serve');\n"
		"                   prints the JSON answer, exit 0 only when accepted;\n"
		"                   --rotate: a rotation poll (POST /api/v1/rotate)\n"
		"\n"
		"  --for DURATION   open: how long the nodes may claim\n"
		"  --reenroll       open: drop the nodes' earlier claims\n"
		"  --peer ADDR      answer: the address the claim came from\n"
		"  --rotate         answer: the claim is a rotation poll\n"
		"  --enroll-state DIR  state directory, mode 0700 (default: the site's\n"
		"                   server.state_dir, else /var/lib/nodeforge; also\n"
		"                   --state)\n"
		"  --tree DIR       the served tree: refuse a state dir or secret inside it\n"
		"  -i, --inventory FILE  racks.yaml (open: check names; answer: required)\n"
		"\n"
		"Exit status: 0 enrolled, window opened or answer accepted, 1 failure or refusal,\n"
		"2 usage error.\n",
	.run = cmd_enroll,
};

struct enroll_opts {
	const char *server, *node, *mac, *root, *bind;
	const char *state, *tree, *inventory, *peer;
	long long seconds;
	long timeout, retry, wait, poll_ms;
	const char *restart;
	int reenroll, rotate;
};

static int defaults_from_cmdline(struct nf_global *g, struct enroll_opts *o,
				 char **server, char **node);

/* "90", "30s", "15m", "2h", "1d" */
static int parse_duration(const char *s, long long *out)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || v <= 0)
		return -1;
	switch (*end) {
	case '\0':
	case 's':
		break;
	case 'm':
		v *= 60;
		break;
	case 'h':
		v *= 3600;
		break;
	case 'd':
		v *= 86400;
		break;
	default:
		return -1;
	}
	if (*end && end[1])
		return -1;
	*out = v;
	return 0;
}

static int load_server(struct nf_global *g, const struct enroll_opts *o,
		       struct nf_enroll **e)
{
	int r;

	if ((r = nf_cmd_setup(g, o->inventory)))
		return r;
	r = nf_enroll_from_site(g->ctx, g->site, g->inv, o->state, o->tree, e);
	return r ? nf_cmd_fail(g, "enroll", r) : 0;
}

static int enroll_open(struct nf_global *g, const struct enroll_opts *o,
		       const char *hosts)
{
	struct nf_enroll *e = NULL;
	struct nf_emit *em;
	char **names = NULL;
	size_t n = 0;
	int r;

	if (nf_hostlist_expand(hosts, &names, &n, 100000))
		return nf_usage_error("enroll", "'%s' is not a hostlist", hosts);
	if ((r = load_server(g, o, &e))) {
		nf_strv_free(names, n);
		return r;
	}
	for (size_t i = 0; g->inv && i < n; i++)
		if (!nf_inventory_find(g->inv, names[i])) {
			fprintf(stderr,
				"nodeforge enroll: '%s' is not a node of '%s'\n",
				names[i], o->inventory);
			r = NF_EXIT_FAILURE;
			goto out;
		}
	if ((r = nf_enroll_open(e, names, n, o->seconds, o->reenroll))) {
		r = nf_cmd_fail(g, "enroll", r);
		goto out;
	}
	if (nf_emit_new(&em, stdout, g->json)) {
		r = NF_EXIT_FAILURE;
		goto out;
	}
	nf_emit_int(em, "nodes", "opened enrollment for %lld node(s)", (long long)n);
	nf_emit_int(em, "seconds", " for %lld s\n", o->seconds);
	nf_emit_end(em);
	nf_emit_free(em);
out:
	nf_strv_free(names, n);
	nf_enroll_free(e);
	return r;
}

static const char *fmt_time(long long t, char *buf, size_t sz)
{
	time_t tt = (time_t)t;
	struct tm tm;

	gmtime_r(&tt, &tm);
	strftime(buf, sz, "%Y-%m-%dT%H:%M:%SZ", &tm);
	return buf;
}

static int enroll_list(struct nf_global *g, const struct enroll_opts *o)
{
	struct nf_enroll *e = NULL;
	struct nf_emit *em;
	json_t *st, *v, *ref;
	const char *k;
	char t1[32], t2[32];
	long long now = (long long)time(NULL);
	size_t i;
	int r;

	if ((r = load_server(g, o, &e)))
		return r;
	r = nf_enroll_state(e, &st);
	nf_enroll_free(e);
	if (r)
		return nf_cmd_fail(g, "enroll", r);
	if (nf_emit_new(&em, stdout, g->json)) {
		json_decref(st);
		return NF_EXIT_FAILURE;
	}
	nf_emit_text(em, "windows:\n");
	nf_emit_arr_open(em, "windows");
	json_object_foreach(json_object_get(st, "windows"), k, v) {
		long long until = json_integer_value(json_object_get(v, "until"));

		nf_emit_obj_open(em, NULL);
		nf_emit_str(em, "node", "  %-20s", k);
		nf_emit_str(em, "opened", " %s", fmt_time(json_integer_value(
				json_object_get(v, "opened")), t1, sizeof(t1)));
		nf_emit_str(em, "until", " .. %s", fmt_time(until, t2, sizeof(t2)));
		nf_emit_bool(em, "open", "  open: %s\n", now <= until);
		nf_emit_obj_close(em);
	}
	nf_emit_arr_close(em);
	nf_emit_text(em, "claims:\n");
	nf_emit_arr_open(em, "claims");
	json_object_foreach(json_object_get(st, "claims"), k, v) {
		nf_emit_obj_open(em, NULL);
		nf_emit_str(em, "node", "  %-20s", k);
		nf_emit_str(em, "at", " %s", fmt_time(json_integer_value(
				json_object_get(v, "at")), t1, sizeof(t1)));
		nf_emit_str(em, "peer", " from %s",
			    json_string_value(json_object_get(v, "peer")));
		nf_emit_str(em, "munge_fingerprint", " key %s\n",
			    json_string_value(json_object_get(v, "munge_fingerprint")));
		nf_emit_obj_close(em);
	}
	nf_emit_arr_close(em);
	ref = json_object_get(st, "refusals");
	nf_emit_text(em, "refusals:\n");
	nf_emit_arr_open(em, "refusals");
	json_array_foreach(ref, i, v) {
		nf_emit_obj_open(em, NULL);
		nf_emit_str(em, "at", "  %s", fmt_time(json_integer_value(
				json_object_get(v, "at")), t1, sizeof(t1)));
		nf_emit_ext(em, "node", " %s",
			    json_string_value(json_object_get(v, "node")));
		nf_emit_ext(em, "peer", " from %s",
			    json_string_value(json_object_get(v, "peer")));
		nf_emit_ext(em, "reason", " %s:",
			    json_string_value(json_object_get(v, "reason")));
		nf_emit_ext(em, "message", " %s\n",
			    json_string_value(json_object_get(v, "message")));
		nf_emit_obj_close(em);
	}
	nf_emit_arr_close(em);
	nf_emit_end(em);
	nf_emit_free(em);
	json_decref(st);
	return 0;
}

static int enroll_answer(struct nf_global *g, const struct enroll_opts *o)
{
	struct nf_enroll *e = NULL;
	char buf[NF_ENROLL_BODY_MAX + 1];
	size_t n = 0;
	json_t *resp = NULL;
	int status = 0, r;
	char *s;

	if (!o->inventory || !o->peer)
		return nf_usage_error("enroll",
				      "answer needs --inventory FILE and --peer ADDR");
	while (n < sizeof(buf)) {
		size_t got = fread(buf + n, 1, sizeof(buf) - n, stdin);

		if (!got)
			break;
		n += got;
	}
	if ((r = load_server(g, o, &e)))
		return r;
	r = o->rotate ? nf_rotate_poll(e, o->peer, buf, n, &resp, &status)
		      : nf_enroll_claim(e, o->peer, buf, n, &resp, &status);
	nf_enroll_free(e);
	if (r)
		return nf_cmd_fail(g, "enroll", r);
	json_object_set_new(resp, "status", json_integer(status));
	s = json_dumps(resp, JSON_COMPACT);
	json_decref(resp);
	if (!s)
		return NF_EXIT_FAILURE;
	puts(s);
	free(s);
	return status == 200 ? 0 : NF_EXIT_FAILURE;
}

static int enroll_node(struct nf_global *g, struct enroll_opts *o)
{
	struct nf_enroll_client_opts co = { 0 };
	struct nf_enroll_result res;
	char *server = NULL, *node = NULL;
	struct nf_emit *em;
	int r;

	if ((r = defaults_from_cmdline(g, o, &server, &node))) {
		free(server);
		free(node);
		return r;
	}
	co.server = o->server;
	co.node = o->node;
	co.mac = o->mac;
	co.root = o->root;
	co.bind = o->bind;
	co.timeout_s = o->timeout;
	co.retry_s = o->retry;
	r = nf_enroll_client(g->ctx, &co, &res);
	if (r) {
		r = nf_cmd_fail(g, "enroll", r);
		goto out;
	}
	if (nf_emit_new(&em, stdout, g->json)) {
		r = NF_EXIT_FAILURE;
		goto out;
	}
	nf_emit_str(em, "node", "enrolled %s", o->node);
	nf_emit_str(em, "role", " (%s):", res.role);
	nf_emit_str(em, "munge_fingerprint", " munge key %s", res.munge_fingerprint);
	nf_emit_bool(em, "slurmdbd_password", res.slurmdbd_password
		     ? ", slurmdbd password written\n" : "\n",
		     res.slurmdbd_password);
	nf_emit_end(em);
	nf_emit_free(em);
out:
	free(server);
	free(node);
	return r;
}

static int defaults_from_cmdline(struct nf_global *g, struct enroll_opts *o,
				 char **server, char **node)
{
	if (!o->server && !nf_cmdline_get(g->ctx, "nodeforge.server", server))
		o->server = *server;
	if (!o->node && !nf_cmdline_get(g->ctx, "nodeforge.node", node))
		o->node = *node;
	if (!o->server || !o->node)
		return nf_usage_error("enroll",
				      "missing --%s (and no nodeforge.%s= on the "
				      "kernel command line)",
				      o->server ? "node" : "server",
				      o->server ? "node" : "server");
	return 0;
}

static int enroll_rotate(struct nf_global *g, struct enroll_opts *o)
{
	struct nf_rotate_client_opts co = { 0 };
	struct nf_rotate_result res;
	char *server = NULL, *node = NULL;
	struct nf_emit *em;
	int r;

	if ((r = defaults_from_cmdline(g, o, &server, &node)))
		goto out;
	co.server = o->server;
	co.node = o->node;
	co.root = o->root;
	co.bind = o->bind;
	co.restart_cmd = o->restart ? o->restart : "systemctl restart munge.service";
	co.timeout_s = o->timeout;
	co.wait_s = o->wait;
	co.poll_ms = o->poll_ms;
	r = nf_rotate_client(g->ctx, &co, &res);
	if (r) {
		r = nf_cmd_fail(g, "enroll", r);
		goto out;
	}
	if (nf_emit_new(&em, stdout, g->json)) {
		r = NF_EXIT_FAILURE;
		goto out;
	}
	nf_emit_str(em, "node", "%s", o->node);
	nf_emit_bool(em, "switched", res.switched ? " switched" : " no rotation",
		     res.switched);
	nf_emit_str(em, "munge_fingerprint", ": munge key %s\n",
		    res.munge_fingerprint);
	nf_emit_end(em);
	nf_emit_free(em);
out:
	free(server);
	free(node);
	return r;
}

static int cmd_enroll(struct nf_global *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "server", required_argument, NULL, 'S' },
		{ "node", required_argument, NULL, 'n' },
		{ "mac", required_argument, NULL, 'm' },
		{ "root", required_argument, NULL, 'r' },
		{ "bind", required_argument, NULL, 'b' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "retry", required_argument, NULL, 'Y' },
		{ "state", required_argument, NULL, 'd' },
		{ "enroll-state", required_argument, NULL, 'd' },
		{ "tree", required_argument, NULL, 't' },
		{ "inventory", required_argument, NULL, 'i' },
		{ "peer", required_argument, NULL, 'p' },
		{ "for", required_argument, NULL, 'f' },
		{ "reenroll", no_argument, NULL, 'R' },
		{ "sysroot", required_argument, NULL, 'y' },
		{ "rotate", no_argument, NULL, 'o' },
		{ "restart", required_argument, NULL, 'x' },
		{ "wait", required_argument, NULL, 'w' },
		{ "poll", required_argument, NULL, 'P' },
		{ 0 }
	};
	struct enroll_opts o = { .timeout = 30, .wait = 600, .poll_ms = 5000 };
	const char *args[3] = { 0 };
	struct nf_args pos = { args, 2 };
	const char *forval = NULL, *node_opt = NULL;
	int o_;

	while ((o_ = nf_getopt_args(&nf_cmd_enroll, argc, argv, "i:", opts,
				   &pos)) != -1) {
		/* what only the node side reads: the server side must not
		 * take it and go on as if it had */
		for (size_t k = 0; o_ > 0 && strchr("SnmrbTYy", o_) && opts[k].name; k++)
			if (opts[k].val == o_ && !node_opt)
				node_opt = opts[k].name;
		switch (o_) {
		case -2: return 0;
		case 'S': o.server = optarg; break;
		case 'n': o.node = optarg; break;
		case 'm': o.mac = optarg; break;
		case 'r': o.root = optarg; break;
		case 'b': o.bind = optarg; break;
		case 'T':
			o.timeout = atol(optarg);
			if (o.timeout <= 0 || o.timeout > 3600)
				return nf_usage_error("enroll",
						      "bad --timeout '%s'", optarg);
			break;
		case 'Y':
			o.retry = atol(optarg);
			if (o.retry < 0 || o.retry > 86400)
				return nf_usage_error("enroll",
						      "bad --retry '%s'", optarg);
			break;
		case 'd': o.state = optarg; break;
		case 't': o.tree = optarg; break;
		case 'i': o.inventory = optarg; break;
		case 'p': o.peer = optarg; break;
		case 'f': forval = optarg; break;
		case 'R': o.reenroll = 1; break;
		case 'y': nf_ctx_set_sysroot(g->ctx, optarg); break;
		case 'o': o.rotate = 1; break;
		case 'x': o.restart = optarg; break;
		case 'w':
			o.wait = atol(optarg);
			if (o.wait <= 0)
				return nf_usage_error("enroll", "bad --wait '%s'",
						      optarg);
			break;
		case 'P': {
			double p = atof(optarg);

			if (p <= 0 || p > 3600)
				return nf_usage_error("enroll", "bad --poll '%s'",
						      optarg);
			o.poll_ms = (long)(p * 1000);
			break;
		}
		default: return NF_EXIT_USAGE;
		}
	}
	if (!pos.n)
		return enroll_node(g, &o);
	if (node_opt && strcmp(args[0], "rotate"))
		return nf_usage_error("enroll", "'--%s' is an option of enroll on a "
				      "node, not of 'enroll %s', which works on "
				      "this machine's --enroll-state DIR", node_opt,
				      args[0]);
	if (!strcmp(args[0], "open")) {
		if (pos.n != 2)
			return nf_usage_error("enroll", "open needs a HOSTLIST");
		if (!forval)
			return nf_usage_error("enroll", "open needs --for DURATION");
		if (parse_duration(forval, &o.seconds))
			return nf_usage_error("enroll",
					      "'%s' is not a duration such as 15m",
					      forval);
		return enroll_open(g, &o, args[1]);
	}
	if (pos.n != 1)
		return nf_usage_error("enroll", "unexpected argument '%s'",
				      args[1]);
	if (!strcmp(args[0], "list"))
		return enroll_list(g, &o);
	if (!strcmp(args[0], "answer"))
		return enroll_answer(g, &o);
	if (!strcmp(args[0], "rotate"))
		return enroll_rotate(g, &o);
	return nf_usage_error("enroll", "unknown subcommand '%s'", args[0]);
}
