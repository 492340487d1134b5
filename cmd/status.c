/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"

#define NF_STATUS_MAX (64u << 20)

static int cmd_status(struct nf_global *g, int argc, char **argv);

const struct nf_cmd nf_cmd_status = {
	.name = "status",
	.summary = "show which nodes booted, passed or failed, and why",
	.help = "usage: nodeforge status [--server URL] [--timeout SECONDS] [--unknown] [--json]\n"
		"\n"
		"Ask a boot server ('nodeforge serve') for every node's state and print\n"
		"the rack view: node, state (not seen, booting, verified, failed),\n"
		"image, time of the last event and, for failures, the root cause.\n"
		"\n"
		"  -S, --server URL   the boot server (default: the site's server.url,\n"
		"                     else http://127.0.0.1:8080)\n"
		"      --timeout N    give up after N seconds (default: 10)\n"
		"      --unknown      only the machines not in the inventory that\n"
		"                     asked to boot (kept across server restarts):\n"
		"                     MAC, address, first and last seen\n"
		"\n"
		"Exit status: 0 ok, 1 the server cannot be reached, 2 usage error.\n",
	.run = cmd_status,
};

static const char *str(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

/* Does s start with a character a terminal acts on rather than shows: a
 * C0 control, DEL, a C1 control (U+0080..U+009F, CSI among them) or a
 * bidirectional override that reorders the rest of the line?  Its length
 * in bytes, 0 for a printable one.  Strings from jansson are valid UTF-8. */
static size_t control_len(const unsigned char *s)
{
	if (*s < 0x20 || *s == 0x7f)
		return 1;
	if (s[0] == 0xc2 && s[1] >= 0x80 && s[1] <= 0x9f)
		return 2;
	if (s[0] == 0xe2 && s[1] == 0x80 &&
	    ((s[2] >= 0x8e && s[2] <= 0x8f) || (s[2] >= 0xaa && s[2] <= 0xae)))
		return 3; /* LRM, RLM, LRE..RLO */
	if (s[0] == 0xe2 && s[1] == 0x81 && s[2] >= 0xa6 && s[2] <= 0xa9)
		return 3; /* LRI..PDI */
	return 0;
}

/* Every string in the server's answer came from a node or passed through
 * one (a verdict's root cause and image): shown as text, a control byte
 * becomes \xNN (and a backslash \\), so a node cannot forge lines,
 * colours or a window title on the operator's terminal.  JSON output is
 * escaped by jansson instead. */
static char *text_escape(const char *s)
{
	size_t n = 0;
	char *out, *o;

	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		n += *p == '\\' ? 2 : (*p < 0x20 || *p >= 0x7f) ? 4 : 1;
	if (!(o = out = malloc(n + 1)))
		return NULL;
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		size_t c = control_len(p);

		if (*p == '\\') {
			*o++ = '\\';
			*o++ = *p++;
		} else if (!c) {
			*o++ = (char)*p++;
		} else {
			while (c--)
				o += sprintf(o, "\\x%02x", *p++);
		}
	}
	*o = '\0';
	return out;
}

/* The strings of one row as they are shown; freed together */
struct shown {
	int json;
	char *v[8];
	size_t n;
};

static const char *show(struct shown *sh, const char *s)
{
	char *e;

	if (sh->json || !s)
		return s;
	if (sh->n == sizeof(sh->v) / sizeof(*sh->v) || !(e = text_escape(s)))
		return "?";
	return sh->v[sh->n++] = e;
}

static void shown_free(struct shown *sh)
{
	while (sh->n)
		free(sh->v[--sh->n]);
}

static int cmd_status(struct nf_global *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "server", required_argument, NULL, 'S' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "unknown", no_argument, NULL, 'U' },
		{ 0 }
	};
	int only_unknown = 0;
	const char *server = NULL;
	long timeout = 10;
	char *url, *body = NULL;
	size_t len, i;
	json_t *doc, *nodes, *n, *unk;
	json_error_t je;
	struct nf_emit *e;
	static const char *const states[] = { "not seen", "booting", "verified",
					      "failed" };
	size_t counts[4] = { 0 };
	int o, r;

	while ((o = nf_getopt(&nf_cmd_status, argc, argv, "S:", opts)) != -1) {
		switch (o) {
		case -2: return 0;
		case -3: return NF_EXIT_USAGE;
		case 'S': server = optarg; break;
		case 'U': only_unknown = 1; break;
		case 'T': {
			char *end;

			timeout = strtol(optarg, &end, 10);
			if (*end || timeout <= 0 || timeout > 3600)
				return nf_usage_error("status", "invalid --timeout "
						      "'%s'", optarg);
			break;
		}
		}
	}
	if (optind < argc)
		return nf_usage_error("status", "unexpected argument '%s'",
				      argv[optind]);
	if (!server) {
		if ((r = nf_cmd_site_optional(g, "status")))
			return r;
		if (g->site)
			server = json_string_value(json_object_get(
				json_object_get(nf_site_json(g->site), "server"),
				"url"));
		if (!server)
			server = "http://127.0.0.1:8080";
	}
	url = malloc(strlen(server) + 32);
	if (!url)
		return NF_EXIT_FAILURE;
	sprintf(url, "%.*s/api/v1/nodes",
		(int)strlen(server) - (server[strlen(server) - 1] == '/'), server);
	r = nf_http_get(g->ctx, url, NF_STATUS_MAX, timeout * 1000, &body, &len);
	if (r) {
		free(url);
		return nf_cmd_fail(g, "status", r);
	}
	doc = json_loadb(body, len, 0, &je);
	free(body);
	nodes = json_object_get(doc, "nodes");
	if (!json_is_array(nodes)) {
		fprintf(stderr, "nodeforge status: '%s' did not answer with a "
			"node list\n", url);
		free(url);
		json_decref(doc);
		return NF_EXIT_FAILURE;
	}
	free(url);
	if (nf_emit_new(&e, stdout, g->json)) {
		json_decref(doc);
		return NF_EXIT_FAILURE;
	}
	nf_emit_str(e, "server", NULL, server);
	if (!only_unknown)
		nf_emit_text(e, "%-20s %-9s %-40s %-20s %s\n", "NODE", "STATE",
			     "IMAGE", "TIME", "ROOT CAUSE");
	if (!only_unknown)
		nf_emit_arr_open(e, "nodes");
	json_array_foreach(nodes, i, n) {
		if (only_unknown)
			break;
		const char *st = str(n, "state") ?: "not seen";
		const char *when = str(n, "verdict_at") ?: str(n, "booted_at");
		struct shown sh = { .json = g->json };

		for (size_t k = 0; k < sizeof(states) / sizeof(*states); k++)
			counts[k] += !strcmp(st, states[k]);
		nf_emit_obj_open(e, NULL);
		nf_emit_str(e, "name", "%-20s ", show(&sh, str(n, "name")));
		nf_emit_str(e, "state", "%-9s ", show(&sh, st));
		nf_emit_str(e, "image", "%-40s ", show(&sh, str(n, "image")));
		nf_emit_str(e, "time", "%-20s ", show(&sh, when));
		nf_emit_str(e, "role", NULL, show(&sh, str(n, "role")));
		nf_emit_str(e, "rack", NULL, show(&sh, str(n, "rack")));
		nf_emit_str(e, "root_cause", "%s\n",
			    show(&sh, !strcmp(st, "failed") ? str(n, "root_cause")
							   : NULL));
		nf_emit_obj_close(e);
		shown_free(&sh);
	}
	if (!only_unknown)
		nf_emit_arr_close(e);
	unk = json_object_get(doc, "unknown");
	nf_emit_arr_open(e, "unknown");
	json_array_foreach(unk, i, n) {
		struct shown sh = { .json = g->json };

		nf_emit_obj_open(e, NULL);
		nf_emit_str(e, "mac", "unknown MAC %s ", show(&sh, str(n, "mac")));
		nf_emit_str(e, "from", "from %s ", show(&sh, str(n, "from") ?: "?"));
		nf_emit_str(e, "first_seen", "first asked to boot at %s, ",
			    show(&sh, str(n, "first_seen") ?: str(n, "seen_at")));
		nf_emit_str(e, "seen_at", "last at %s\n",
			    show(&sh, str(n, "seen_at")));
		nf_emit_obj_close(e);
		shown_free(&sh);
	}
	nf_emit_arr_close(e);
	if (only_unknown) {
		nf_emit_int(e, "unknown_count", "%lld unknown machine(s)\n",
			    (long long)json_array_size(unk));
		goto end;
	}
	nf_emit_obj_open(e, "summary");
	nf_emit_int(e, "nodes", "%lld nodes: ", (long long)json_array_size(nodes));
	nf_emit_int(e, "verified", "%lld verified, ", (long long)counts[2]);
	nf_emit_int(e, "failed", "%lld failed, ", (long long)counts[3]);
	nf_emit_int(e, "booting", "%lld booting, ", (long long)counts[1]);
	nf_emit_int(e, "not_seen", "%lld not seen\n", (long long)counts[0]);
	nf_emit_obj_close(e);
end:
	r = nf_emit_end(e) ? NF_EXIT_FAILURE : 0;
	nf_emit_free(e);
	json_decref(doc);
	return r;
}
