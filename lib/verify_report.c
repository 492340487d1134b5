/* SPDX-License-Identifier: MIT */
/*
 * What becomes of a verify run: its JSON document, JUnit, the health
 * action (drain or resume through scontrol) and the verdict published
 * for the gate and the boot server.
 */
#include "verify_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void set_str(json_t *o, const char *k, const char *s)
{
	if (s)
		json_object_set_new(o, k, json_string(s));
}

json_t *nf_verify_json(const struct nf_verify *v)
{
	json_t *doc = json_object(), *checks = json_array(), *roots = json_array();

	for (size_t i = 0; i < v->n; i++) {
		const struct nf_check_result *r = &v->v[i].res;
		json_t *c = json_object();

		json_object_set_new(c, "id", json_string(r->id));
		json_object_set_new(c, "facet", json_string(r->facet));
		json_object_set_new(c, "verdict", json_string(nf_verdict_name(r->verdict)));
		set_str(c, "summary", r->summary);
		set_str(c, "expected", r->expected);
		set_str(c, "seen", r->seen);
		set_str(c, "remedy", r->remedy);
		set_str(c, "reason", r->reason);
		set_str(c, "cause", r->cause);
		json_object_set_new(c, "elapsed_us", json_integer(r->elapsed_us));
		json_array_append_new(checks, c);
		if ((r->verdict == NF_V_FAIL || r->verdict == NF_V_HUNG) && !r->cause) {
			json_t *rc = json_pack("{s:s}", "id", r->id);

			set_str(rc, "message", r->verdict == NF_V_HUNG ? r->reason : r->seen);
			json_array_append_new(roots, rc);
		}
	}
	/* the boot server's verdict format (nodeforge serve) */
	json_object_set_new(doc, "result",
			    json_string(nf_verify_passed(v) ? "pass" : "fail"));
	if (v->host) {
		json_object_set_new(doc, "node", json_stringn(v->host, strcspn(v->host, ".")));
		set_str(doc, "host", v->host);
	}
	set_str(doc, "role", v->role);
	json_object_set_new(doc, "version", json_string(NF_VERSION));
	json_object_set_new(doc, "elapsed_ms", json_integer(v->elapsed_ms));
	json_object_set_new(doc, "counts",
			    json_pack("{s:i, s:i, s:i, s:i, s:i}",
				      "pass", (int)nf_verify_tally(v, NF_V_PASS),
				      "fail", (int)nf_verify_tally(v, NF_V_FAIL),
				      "skip", (int)nf_verify_tally(v, NF_V_SKIP),
				      "hung", (int)nf_verify_tally(v, NF_V_HUNG),
				      "warn", (int)nf_verify_tally(v, NF_V_WARN)));
	json_object_set_new(doc, "root_causes", roots);
	json_object_set_new(doc, "checks", checks);
	return doc;
}

int nf_verify_write_junit(struct nf_ctx *ctx, const struct nf_verify *v,
			  const char *path)
{
	struct nf_junit_case *cs = calloc(v->n ? v->n : 1, sizeof(*cs));
	char **texts = calloc(v->n ? v->n : 1, sizeof(*texts));
	int r = 0;

	if (!cs || !texts) {
		free(cs);
		free(texts);
		return -ENOMEM;
	}
	for (size_t i = 0; i < v->n && !r; i++) {
		const struct nf_check_result *c = &v->v[i].res;

		cs[i] = (struct nf_junit_case){ .classname = c->facet, .name = c->id,
						.verdict = c->verdict,
						.secs = c->elapsed_us / 1e6 };
		if (c->verdict == NF_V_WARN)
			texts[i] = nf_asprintf("warning: %s\nremedy: %s", c->seen ? c->seen : "",
					       c->remedy ? c->remedy : "");
		else if (c->verdict == NF_V_SKIP)
			cs[i].message = c->reason;
		else if (c->verdict != NF_V_PASS) {
			cs[i].message = c->verdict == NF_V_HUNG ? c->reason : c->seen;
			texts[i] = nf_asprintf("expected: %s\nseen: %s\nremedy: %s",
					       c->expected ? c->expected : "",
					       c->seen ? c->seen : "",
					       c->remedy ? c->remedy : "");
		}
		if ((c->verdict == NF_V_WARN || c->verdict == NF_V_FAIL ||
		     c->verdict == NF_V_HUNG) && !texts[i])
			r = -ENOMEM;
		cs[i].text = texts[i];
	}
	if (!r)
		r = nf_junit_write(ctx, path, "nodeforge-verify", v->host ? v->host : "",
				   cs, v->n, v->elapsed_ms / 1000.0);
	for (size_t i = 0; i < v->n; i++)
		free(texts[i]);
	free(texts);
	free(cs);
	return r;
}

int nf_verify_server_url(struct nf_ctx *ctx, const char *sysroot, char **url)
{
	char *buf = NULL;
	int r = nf_cmdline_get_at(NULL, sysroot, "nodeforge.server", &buf);

	if (r == -ENOENT || (!r && !*buf)) {
		free(buf);
		return nf_fail(ctx, NF_E_NOTFOUND,
			       "no nodeforge.server= on the kernel command line");
	}
	if (r)
		return nf_fail(ctx, r, "cannot read '%s/proc/cmdline': %s",
			       sysroot ? sysroot : "", r < 0 ? strerror(-r) : nf_strerror(r));
	if (strncmp(buf, "http://", 7) && strncmp(buf, "https://", 8)) {
		r = nf_fail(ctx, NF_E_INVALID,
			    "nodeforge.server '%s' is not an http(s) URL", buf);
		free(buf);
		return r;
	}
	*url = buf;
	return 0;
}

static int health_exec(struct nf_ctx *ctx, struct nf_vcheck *c,
		       const char *const *argv, char **out)
{
	int st = 0, r = nf_v_exec(c, argv, NULL, out, &st);

	if (r == NF_E_TIMEOUT)
		return nf_fail(ctx, r, "'%s %s' did not answer in time", argv[0], argv[1]);
	if (r)
		return nf_fail(ctx, r, "cannot run '%s': %s", argv[0],
			       r < 0 ? strerror(-r) : nf_strerror(r));
	if (st)
		return nf_fail(ctx, NF_E_EXTERNAL, "'%s %s' exited with %d", argv[0],
			       argv[1], st);
	return 0;
}

int nf_verify_health(struct nf_ctx *ctx, const struct nf_verify *v,
		     const struct nf_verify_opts *o, const char **action)
{
	struct nf_vcheck c = { 0 };
	char node[256], reason[512], arg_node[300];
	char *out = NULL;
	int r;

	*action = "none";
	snprintf(node, sizeof(node), "%s", v->host ? v->host : "");
	node[strcspn(node, ".")] = '\0';
	if (!*node || strpbrk(node, " \t="))
		return nf_fail(ctx, NF_E_INVALID, "bad host name '%s'", node);
	if ((r = nf_vrun_new(ctx, NULL, o, &c.run)))
		return r;
	now(&c.deadline);
	add_ms(&c.deadline, 5000);
	snprintf(arg_node, sizeof(arg_node), "nodename=%s", node);
	if (!nf_verify_passed(v)) {
		const struct nf_check_result *root = &v->v[0].res;
		const char *argv[] = { "scontrol", "update", arg_node, "state=drain",
				       reason, NULL };

		snprintf(reason, sizeof(reason), "reason=nodeforge: %s%s%.120s", root->id,
			 root->seen ? ": " : "", root->seen ? root->seen : "");
		r = health_exec(ctx, &c, argv, NULL);
		if (!r)
			*action = "drain";
	} else {
		const char *show[] = { "scontrol", "show", "node", node, "-o", NULL };
		const char *argv[] = { "scontrol", "update", arg_node, "state=resume", NULL };
		const char *rs, *st;

		r = health_exec(ctx, &c, show, &out);
		if (!r) {
			rs = strstr(out, " Reason=");
			st = strstr(out, " State=");
			/* resume only what this tool drained itself */
			if (rs && !strncmp(rs + 8, "nodeforge:", 10) && st &&
			    strstr(st, "DRAIN") && strstr(st, "DRAIN") < st + 64) {
				r = health_exec(ctx, &c, argv, NULL);
				if (!r)
					*action = "resume";
			}
		}
		free(out);
	}
	nf_vrun_unref(c.run);
	return r;
}

/* The secret file a facet names as the key the node signs its verdicts
 * with (NF_SECRET_SIGNS), at the place the profile's section puts it */
static const char *signing_key(const struct nf_verify *v)
{
	for (size_t i = 0; i < nf_nfacets; i++) {
		const struct nf_facet *f = nf_facets[i];
		struct nf_secret_file sf[NF_SECRETS_MAX];
		const json_t *sec = NULL;
		size_t n;

		if (!f->secrets)
			continue;
		for (size_t j = 0; j < v->n && !sec; j++)
			if (!strcmp(v->v[j].facet, f->name))
				sec = v->v[j].section;
		n = f->secrets(sec, sf, NF_ARRAY_SIZE(sf));
		for (size_t k = 0; k < n; k++)
			if (sf[k].flags & NF_SECRET_SIGNS)
				return sf[k].path;
	}
	return NULL;
}

int nf_verify_publish(struct nf_ctx *ctx, const struct nf_verify *v,
		      const struct nf_verify_opts *o, const char *verdict_path)
{
	/* the node's files: --root, else the sysroot a fixture run reads them
	 * from (never the real /run of the machine running the fixture) */
	const char *root = o->root && strcmp(o->root, "/") ? o->root
			   : o->sysroot && *o->sysroot ? o->sysroot : "";
	char path[4096], dir[4096];
	json_t *doc = nf_verify_json(v);
	char *s = json_dumps(doc, JSON_INDENT(2) | JSON_SORT_KEYS), *url = NULL;
	unsigned m;
	int r;

	if (!s) {
		json_decref(doc);
		return -ENOMEM;
	}
	if (verdict_path) {
		snprintf(path, sizeof(path), "%s", verdict_path);
	} else {
		snprintf(dir, sizeof(dir), "%s/run", root);
		mkdir(dir, 0755);
		snprintf(dir, sizeof(dir), "%s/run/nodeforge", root);
		mkdir(dir, 0755);
		snprintf(path, sizeof(path), "%s/verdict.json", dir);
	}
	r = nf_write_atomic(ctx, path, s, strlen(s), 0644);
	free(s);
	if (r) {
		json_decref(doc);
		return r;
	}
	/* the rest is best effort: the motd, the key, the post to the
	 * server warn at most */
	m = nf_err_mark(ctx);
	if (!verdict_path) {
		const struct nf_check_result *c = v->n ? &v->v[0].res : NULL;
		char *motd;

		snprintf(dir, sizeof(dir), "%s/run/motd.d", root);
		mkdir(dir, 0755);
		snprintf(path, sizeof(path), "%s/nodeforge", dir);
		const struct nf_check_result *w = NULL;

		for (size_t i = 0; i < v->n && !w; i++)
			if (v->v[i].res.verdict == NF_V_WARN)
				w = &v->v[i].res;
		motd = (nf_verify_passed(v) || !c) && w
			? nf_asprintf("nodeforge verify: PASS (warning: %s: %s)\n"
				      "  details: /run/nodeforge/verdict.json\n",
				      w->id, w->seen ? w->seen : "")
			: nf_verify_passed(v) || !c
			? nf_asprintf("nodeforge verify: PASS\n")
			: nf_asprintf("nodeforge verify: FAIL: %s: %s\n"
				      "  details: /run/nodeforge/verdict.json\n",
				      c->id, c->seen ? c->seen : c->reason ? c->reason : "");
		if (motd)
			nf_write_atomic(ctx, path, motd, strlen(motd), 0644);
		free(motd);
	}
	if (nf_verify_server_url(ctx, o->sysroot, &url) == 0) {
		size_t ul = strlen(url);
		char *post;

		while (ul > 0 && url[ul - 1] == '/')
			url[--ul] = '\0';
		const char *node = json_string_value(json_object_get(doc, "node"));
		uint8_t *key = NULL;
		size_t klen = 0;

		post = nf_asprintf("%s/api/v1/nodes/%s/verdict", url, node);
		/* an enrolled node signs its verdict with the key a facet
		 * names for it (munge's) */
		{
			const char *kp = signing_key(v);
			char *kf = kp ? nf_asprintf("%s%s", root, kp) : NULL;

			if (kf && nf_secret_read(ctx, kf, NF_MUNGE_KEY_MAX,
						 &key, &klen))
				key = NULL;
			free(kf);
		}
		if (post && nf_http_post_json(ctx, post, doc, 3000, node, key,
					      klen))
			nf_log(ctx, NF_LOG_WARN, "%s", nf_errmsg(ctx));
		if (key)
			nf_wipe_free(key, klen + 1);
		free(post);
		free(url);
	}
	nf_err_drop(ctx, m);
	json_decref(doc);
	return 0;
}
