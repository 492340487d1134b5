/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cmd.h"

#define NF_STATUS_MAX (64u << 20)

const char *const nf_status_state_args[] = { "not-seen", "booting", "verified",
					     "failed", NULL };

static int cmd_status(struct nf_global *g, int argc, char **argv);

const struct nf_cmd nf_cmd_status = {
	.name = "status",
	.summary = "show which nodes booted, passed or failed, and why",
	.help = "usage: nodeforge status [NODE | HOSTLIST] [--state STATE] [--rack RACK]\n"
		"                        [--role ROLE] [--server URL] [--timeout SECONDS]\n"
		"                        [--unknown] [--json]\n"
		"\n"
		"Ask a boot server ('nodeforge serve') for every node's state and print\n"
		"the rack view: node, state (not seen, booting, verified, failed), rack,\n"
		"image, time of the last event and, for failures, the root cause.\n"
		"With one node name: that node's last verdict, each root cause with\n"
		"what was expected, what the node saw and the remedy.  A hostlist\n"
		"(gpu-[01-04],cpu-01) lists only those nodes.\n"
		"\n"
		"  -S, --server URL   the boot server (default: the site's server.url,\n"
		"                     else http://127.0.0.1:8080)\n"
		"      --state STATE  only nodes in STATE: not-seen, booting, verified,\n"
		"                     failed\n"
		"      --rack RACK    only the nodes of rack RACK\n"
		"      --role ROLE    only the nodes of role ROLE\n"
		"      --timeout SECONDS\n"
		"                     give up after SECONDS (default: 10)\n"
		"      --unknown      only the machines not in the inventory that\n"
		"                     asked to boot (kept across server restarts):\n"
		"                     MAC, address, first and last seen; the plain\n"
		"                     list (no node, --state, --rack or --role) ends\n"
		"                     with them too.  The server forgets a machine\n"
		"                     not seen for 7 days and keeps at most 4096: a\n"
		"                     full table is said so (JSON: unknown_full)\n"
		"\n"
		"A rack or role that no node of the server's inventory has is a usage\n"
		"error naming those it has.\n"
		"\n"
		"Exit status: 0 every node listed is verified (always, with --unknown),\n"
		"3 a node listed is failed, booting or not seen, 1 the server cannot be\n"
		"reached or does not know a node named, 2 usage error.  With --json an\n"
		"error is also an object {\"server\", \"error\"} on stdout.\n",
	.run = cmd_status,
};

static const char *str(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

/* The strings of one row as they are shown; freed together */
struct shown {
	int json;
	char *v[12];
	size_t n;
};

static const char *show(struct shown *sh, const char *s)
{
	char *e;

	if (sh->json || !s)
		return s;
	if (sh->n == sizeof(sh->v) / sizeof(*sh->v) || !(e = nf_text_escape(s)))
		return "?";
	return sh->v[sh->n++] = e;
}

static void shown_free(struct shown *sh)
{
	while (sh->n)
		free(sh->v[--sh->n]);
}

/* The server's answer to GET PATH below SERVER, as JSON; 0, or an error
 * with its message in err */
static int fetch(struct nf_global *g, const char *server, const char *path,
		 long timeout, json_t **out, char *err, size_t errlen)
{
	size_t sl = strlen(server), len;
	char *url = NULL, *body = NULL;
	json_error_t je;
	int r;

	*out = NULL;
	if (asprintf(&url, "%.*s%s", (int)(sl - (sl && server[sl - 1] == '/')),
		     server, path) < 0) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	r = nf_http_get(g->ctx, url, NF_STATUS_MAX, timeout * 1000, &body, &len);
	if (r) {
		snprintf(err, errlen, "%s", nf_error_text(g->ctx, r));
	} else {
		*out = json_loadb(body, len, 0, &je);
		if (!json_is_object(*out)) {
			json_decref(*out);
			*out = NULL;
			snprintf(err, errlen, "'%s' did not answer with JSON", url);
			r = NF_E_PARSE;
		}
	}
	free(body);
	free(url);
	return r;
}

/* An error as the caller asked for it: a line on stderr, and with --json
 * also an object on stdout; both name the server */
static int status_error(struct nf_global *g, const char *server, const char *msg)
{
	if (g->json) {
		json_t *o = json_pack("{s:s, s:s}", "server", server, "error", msg);

		json_dumpf(o, stdout, JSON_INDENT(2));
		fputc('\n', stdout);
		json_decref(o);
	}
	fprintf(stderr, "nodeforge status: %s (server %s)\n", msg, server);
	return NF_EXIT_FAILURE;
}

/* status NODE, its header: name, state, role, rack, addresses, times */
static void node_header(struct nf_global *g, struct nf_emit *e,
			const char *server, json_t *n, const char *st)
{
	struct shown sh = { .json = g->json };

	nf_emit_str(e, "server", NULL, server);
	nf_emit_str(e, "name", "%s: ", show(&sh, str(n, "name")));
	nf_emit_str(e, "state", "%s", show(&sh, st));
	nf_emit_str(e, "role", " (role %s", show(&sh, str(n, "role")));
	nf_emit_str(e, "rack", ", rack %s)\n", show(&sh, str(n, "rack")));
	nf_emit_str(e, "mac", "  mac      %s\n", show(&sh, str(n, "mac")));
	nf_emit_str(e, "ip", "  address  %s\n", show(&sh, str(n, "ip")));
	shown_free(&sh);
	nf_emit_str(e, "image", "  image    %s\n", show(&sh, str(n, "image")));
	nf_emit_str(e, "booted_at", "  booted   %s\n", show(&sh, str(n, "booted_at")));
	nf_emit_str(e, "verdict_at", "  verdict  %s\n", show(&sh, str(n, "verdict_at")));
	shown_free(&sh);
}

/* status NODE: the node's header, then its last verdict as 'nodeforge
 * verify' shows it on the node (one renderer for both) */
static int show_node(struct nf_global *g, const char *server, const char *name,
		     long timeout)
{
	char *path = NULL, err[1024];
	json_t *n = NULL, *v;
	const char *st;
	struct nf_emit *e;
	int r;

	if (asprintf(&path, "/api/v1/nodes/%s", name) < 0)
		return NF_EXIT_FAILURE;
	r = fetch(g, server, path, timeout, &n, err, sizeof(err));
	free(path);
	if (r)
		return status_error(g, server, err);
	st = str(n, "state") ?: "not seen";
	v = json_object_get(n, "verdict");
	if (nf_emit_new(&e, stdout, g->json)) {
		json_decref(n);
		return NF_EXIT_FAILURE;
	}
	node_header(g, e, server, n, st);
	if (json_is_object(v)) {
		struct nf_verdict_view vw = {
			.width = nf_cmd_term_width(), .colour = nf_cmd_colour(),
			.verbose = g->verbose, .role = str(n, "role"),
		};

		nf_emit_text(e, "\n");
		nf_verdict_render(e, v, &vw);
	} else {
		nf_emit_arr_open(e, "root_causes");
		nf_emit_arr_close(e);
		nf_emit_text(e, "  no verdict yet\n");
	}
	r = nf_emit_end(e) ? NF_EXIT_FAILURE : strcmp(st, "verified") ? NF_EXIT_FINDINGS : 0;
	nf_emit_free(e);
	json_decref(n);
	return r;
}

/* Is node n listed: in the hostlist (when given), of the state, the rack
 * and the role asked (when asked)? */
static int listed(json_t *n, char **names, size_t nnames, const char *state,
		  const char *rack, const char *role)
{
	const char *name = str(n, "name") ?: "", *st = str(n, "state") ?: "not seen";
	size_t i;

	if (state && strcmp(state, st))
		return 0;
	if (rack && (!str(n, "rack") || strcmp(rack, str(n, "rack"))))
		return 0;
	if (role && (!str(n, "role") || strcmp(role, str(n, "role"))))
		return 0;
	if (!nnames)
		return 1;
	for (i = 0; i < nnames; i++)
		if (!strcmp(names[i], name))
			return 1;
	return 0;
}

/* VALUE (of --rack or --role) is the KEY of some node: else a usage
 * error naming the values the nodes have */
static int known_value(json_t *nodes, const char *key, const char *value)
{
	char known[2048] = "";
	json_t *n;
	size_t i;

	if (!value)
		return 0;
	json_array_foreach(nodes, i, n) {
		const char *v = str(n, key);

		if (!v || !*v)
			continue;
		if (!strcmp(v, value))
			return 0;
		nf_cmd_known_add(known, sizeof(known), v);
	}
	return nf_usage_error("status", "no node of the server's inventory has "
			      "%s '%s'; %ss: %s", key, value, key,
			      *known ? known : "none");
}

static void free_names(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

static const char *const states[] = { "not seen", "booting", "verified",
				      "failed" };

/* What was asked: the server, the nodes and the filters */
struct status_args {
	const char *server, *state, *rack, *role, *which;
	long timeout;
	int only_unknown;
	char **names;
	size_t nnames;
};

/* Parse: the options and the node names; -1 to go on, else the exit */
static int parse_args(struct nf_global *g, int argc, char **argv,
		      struct status_args *a)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "server", required_argument, NULL, 'S' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "unknown", no_argument, NULL, 'U' },
		{ "state", required_argument, NULL, 's' },
		{ "rack", required_argument, NULL, 'r' },
		{ "role", required_argument, NULL, 'R' },
		{ 0 }
	};
	struct nf_args args = { &a->which, 1, 0, " (name several nodes as one "
				"hostlist: gpu-[01-04],cpu-01)" };
	char *end;
	size_t i;
	int o, r;

	while ((o = nf_getopt_args(&nf_cmd_status, argc, argv, "S:", opts,
				   &args)) != -1) {
		switch (o) {
		case -2: return 0;
		case -3: return NF_EXIT_USAGE;
		case 'S': a->server = optarg; break;
		case 'U': a->only_unknown = 1; break;
		case 'r': a->rack = optarg; break;
		case 'R': a->role = optarg; break;
		case 's':
			a->state = NULL;
			for (i = 0; i < sizeof(states) / sizeof(*states); i++)
				if (!strcmp(optarg, states[i]) ||
				    (!strcmp(optarg, "not-seen") && i == 0))
					a->state = states[i];
			if (!a->state)
				return nf_usage_error("status", "invalid --state '%s' "
						      "(not-seen, booting, verified "
						      "or failed)", optarg);
			break;
		case 'T':
			a->timeout = strtol(optarg, &end, 10);
			if (*end || a->timeout <= 0 || a->timeout > 3600)
				return nf_usage_error("status", "invalid --timeout "
						      "'%s'", optarg);
			break;
		}
	}
	if (a->which && a->only_unknown)
		return nf_usage_error("status", "--unknown lists machines not in "
				      "the inventory: it takes no node names");
	if (a->which && nf_hostlist_expand(a->which, &a->names, &a->nnames, 100000))
		return nf_usage_error("status", "'%s' is not a node name or a "
				      "hostlist", a->which);
	if (a->server)
		return -1;
	if ((r = nf_cmd_setup(g, NULL)))
		return r;
	if (g->site)
		a->server = json_string_value(json_object_get(
			json_object_get(nf_site_json(g->site), "server"), "url"));
	if (a->server) {
		char what[512];

		snprintf(what, sizeof(what), "the server asked (%s)", a->server);
		nf_cmd_site_note(g, "status", what);
	}
	if (!a->server)
		a->server = "http://127.0.0.1:8080";
	return -1;
}

/* Select: the server's node list, every filter and name asked known to
 * it; 0, or the exit status */
static int select_nodes(struct nf_global *g, const struct status_args *a,
			json_t **doc)
{
	char err[1024];
	json_t *nodes, *n;
	size_t i, k;
	int r;

	if ((r = fetch(g, a->server, "/api/v1/nodes", a->timeout, doc, err,
		       sizeof(err))))
		return status_error(g, a->server, err);
	nodes = json_object_get(*doc, "nodes");
	if (!json_is_array(nodes))
		return status_error(g, a->server, "the answer has no node list");
	if ((r = known_value(nodes, "rack", a->rack)) ||
	    (r = known_value(nodes, "role", a->role)))
		return r;
	for (i = 0; i < a->nnames; i++) {
		int found = 0;

		json_array_foreach(nodes, k, n)
			found |= str(n, "name") && !strcmp(str(n, "name"), a->names[i]);
		if (!found) {
			snprintf(err, sizeof(err), "no node '%s' in the server's "
				 "inventory", a->names[i]);
			return status_error(g, a->server, err);
		}
	}
	return 0;
}

static int is_listed(const struct status_args *a, json_t *n)
{
	return !a->only_unknown &&
	       listed(n, a->names, a->nnames, a->state, a->rack, a->role);
}

/* One node's row, and its root cause (or last verdict) under it */
static void print_row(struct nf_global *g, struct nf_emit *e, json_t *n,
		      char fmt[4][16], int width, int colour)
{
	const char *st = str(n, "state") ?: "not seen";
	int booting = !strcmp(st, "booting");
	const char *when = booting ? str(n, "booted_at")
			   : str(n, "verdict_at") ?: str(n, "booted_at");
	const char *paint = !colour ? NULL : !strcmp(st, "failed") ? "\033[1;31m"
			    : !strcmp(st, "verified") ? "\033[32m" : NULL;
	struct shown sh = { .json = g->json };
	/* a node booting again still shows its last verdict */
	const char *res = show(&sh, str(n, "result"));
	const char *vat = show(&sh, str(n, "verdict_at"));
	const char *cause = !strcmp(st, "failed") ||
		(booting && res && !strcmp(str(n, "result"), "fail"))
		? str(n, "root_cause") : NULL;

	nf_emit_obj_open(e, NULL);
	nf_emit_str(e, "name", fmt[0], show(&sh, str(n, "name")));
	/* failed in red, verified in green, on a terminal only */
	if (paint)
		nf_emit_text(e, "%s", paint);
	nf_emit_str(e, "state", fmt[1], show(&sh, st));
	if (paint)
		nf_emit_text(e, "\033[0m");
	nf_emit_str(e, "rack", fmt[2], show(&sh, str(n, "rack")));
	nf_emit_str(e, "image", fmt[3], show(&sh, str(n, "image")));
	nf_emit_str(e, "time", "%s", show(&sh, when));
	nf_emit_text(e, "\n");
	nf_emit_str(e, "role", NULL, show(&sh, str(n, "role")));
	nf_emit_str(e, "result", NULL, res);
	nf_emit_str(e, "verdict_at", NULL, vat);
	if (booting && res) {
		char *lv = NULL;

		if (asprintf(&lv, "last verdict: %s at %s%s%s", res,
			     vat ? vat : "?", cause ? ": " : "",
			     cause ? show(&sh, cause) : "") >= 0) {
			nf_emit_text(e, "    ");
			nf_emit_wrap(e, lv, 4, 6, width, 0, 0);
			free(lv);
		}
	} else if (cause) {
		nf_emit_text(e, "    root cause: ");
		nf_emit_wrap(e, show(&sh, cause), 16, 6, width, 0, 0);
	}
	nf_emit_str(e, "root_cause", NULL, show(&sh, cause));
	nf_emit_obj_close(e);
	shown_free(&sh);
}

/* Print the list: the nodes listed, each column as wide as its widest
 * value (the list fits 80 columns where the values do), the root cause on
 * its own line below; counts[] by state; returns how many */
static size_t print_list(struct nf_global *g, struct nf_emit *e,
			 const struct status_args *a, json_t *nodes,
			 size_t counts[4])
{
	int w[4] = { 4, 5, 4, 5 }, width = nf_cmd_term_width();
	int colour = nf_cmd_colour();
	char fmt[4][16];
	size_t i, listed_n = 0;
	json_t *n;

	if (a->only_unknown)
		return 0;
	json_array_foreach(nodes, i, n) {
		const char *f[4] = { str(n, "name"), str(n, "state") ?: "not seen",
				     str(n, "rack"), str(n, "image") };

		if (!is_listed(a, n))
			continue;
		for (size_t k = 0; k < 4; k++)
			if (f[k] && (int)strlen(f[k]) > w[k])
				w[k] = (int)strlen(f[k]) > 64 ? 64 : (int)strlen(f[k]);
	}
	snprintf(fmt[0], sizeof(fmt[0]), "%%-%ds ", w[0]);
	snprintf(fmt[1], sizeof(fmt[1]), "%%-%ds", w[1]);
	snprintf(fmt[2], sizeof(fmt[2]), " %%-%ds ", w[2]);
	snprintf(fmt[3], sizeof(fmt[3]), "%%-%ds ", w[3]);
	nf_emit_text(e, "%-*s %-*s %-*s %-*s %s\n", w[0], "NODE", w[1], "STATE",
		     w[2], "RACK", w[3], "IMAGE", "TIME");
	nf_emit_arr_open(e, "nodes");
	json_array_foreach(nodes, i, n) {
		const char *st = str(n, "state") ?: "not seen";

		if (!is_listed(a, n))
			continue;
		listed_n++;
		for (size_t k = 0; k < sizeof(states) / sizeof(*states); k++)
			counts[k] += !strcmp(st, states[k]);
		print_row(g, e, n, fmt, width, colour);
	}
	nf_emit_arr_close(e);
	return listed_n;
}

/* Print the machines not in the inventory: they belong to no rack, role,
 * state or hostlist, so only the plain list and --unknown show them */
static json_t *print_unknown(struct nf_global *g, struct nf_emit *e,
			     const struct status_args *a, json_t *doc)
{
	json_t *unk = a->only_unknown || (!a->nnames && !a->state && !a->rack &&
					  !a->role)
		? json_object_get(doc, "unknown") : NULL, *n;
	int width = nf_cmd_term_width();
	size_t i;

	nf_emit_arr_open(e, "unknown");
	json_array_foreach(unk, i, n) {
		struct shown sh = { .json = g->json };
		const char *mac = show(&sh, str(n, "mac")),
			   *from = show(&sh, str(n, "from") ?: "?"),
			   *first = show(&sh, str(n, "first_seen") ?: str(n, "seen_at")),
			   *last = show(&sh, str(n, "seen_at"));
		char *line = NULL;

		nf_emit_obj_open(e, NULL);
		nf_emit_str(e, "mac", NULL, mac);
		nf_emit_str(e, "from", NULL, from);
		nf_emit_str(e, "first_seen", NULL, first);
		nf_emit_str(e, "seen_at", NULL, last);
		if (!g->json && asprintf(&line, "unknown MAC %s from %s first asked to "
					 "boot at %s, last at %s", mac ? mac : "-",
					 from ? from : "-", first ? first : "-",
					 last ? last : "-") >= 0) {
			nf_emit_wrap(e, line, 0, 4, width, 0, 0);
			free(line);
		}
		nf_emit_obj_close(e);
		shown_free(&sh);
	}
	nf_emit_arr_close(e);
	return unk;
}

/* --unknown's tail: how many, and whether the server's table is full */
static void print_unknown_count(struct nf_emit *e, json_t *doc, json_t *unk)
{
	json_t *full = json_object_get(doc, "unknown_full");

	nf_emit_int(e, "unknown_count", "%lld unknown machine(s)\n",
		    (long long)json_array_size(unk));
	nf_emit_bool(e, "unknown_full", NULL, json_is_true(full));
	if (json_is_true(full))
		nf_emit_text(e, "the server's table of unknown machines "
			     "is full (%lld): a new one replaces the one "
			     "seen longest ago\n",
			     json_integer_value(json_object_get(doc, "unknown_max")));
}

static void print_summary(struct nf_emit *e, size_t listed_n,
			  const size_t counts[4])
{
	nf_emit_obj_open(e, "summary");
	nf_emit_int(e, "nodes", "%lld nodes: ", (long long)listed_n);
	nf_emit_int(e, "verified", "%lld verified, ", (long long)counts[2]);
	nf_emit_int(e, "failed", "%lld failed, ", (long long)counts[3]);
	nf_emit_int(e, "booting", "%lld booting, ", (long long)counts[1]);
	nf_emit_int(e, "not_seen", "%lld not seen\n", (long long)counts[0]);
	nf_emit_obj_close(e);
}

/* The list (or --unknown) of the nodes selected */
static int print_nodes(struct nf_global *g, const struct status_args *a,
		       json_t *doc)
{
	size_t counts[4] = { 0 }, listed_n;
	struct nf_emit *e;
	json_t *unk;
	int r;

	if (nf_emit_new(&e, stdout, g->json))
		return NF_EXIT_FAILURE;
	nf_emit_str(e, "server", NULL, a->server);
	listed_n = print_list(g, e, a, json_object_get(doc, "nodes"), counts);
	unk = print_unknown(g, e, a, doc);
	if (a->only_unknown)
		print_unknown_count(e, doc, unk);
	else
		print_summary(e, listed_n, counts);
	/* 0 only when every node listed is verified (always, --unknown) */
	r = nf_emit_end(e) ? NF_EXIT_FAILURE
	    : a->only_unknown || counts[2] == listed_n ? 0 : NF_EXIT_FINDINGS;
	nf_emit_free(e);
	return r;
}

static int cmd_status(struct nf_global *g, int argc, char **argv)
{
	struct status_args a = { .timeout = 10 };
	json_t *doc = NULL;
	int r;

	if ((r = parse_args(g, argc, argv, &a)) >= 0)
		goto end;
	/* one plain name, no filter: that node's verdict in full */
	if (a.nnames == 1 && !strpbrk(a.which, "[,") && !a.state && !a.rack &&
	    !a.role)
		r = show_node(g, a.server, a.names[0], a.timeout);
	else if (!(r = select_nodes(g, &a, &doc)))
		r = print_nodes(g, &a, doc);
end:
	free_names(a.names, a.nnames);
	json_decref(doc);
	return r;
}
