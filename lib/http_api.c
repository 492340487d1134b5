/* SPDX-License-Identifier: MIT */
/*
 * The boot server's API: the node list and one node's view, verdicts
 * (checked, signed by enrolled nodes, stored durably), unknown MACs (rate
 * limited per address), and the enrollment and rotation endpoints.
 */
#include "serve_int.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ----------------------------------------------------------------- API */

/* 404 naming the node asked for */
static int send_unknown_node(struct nf_srv_req *rq, const char *name)
{
	char q[72], msg[128];

	nf_quote_value(name, q, sizeof(q));
	snprintf(msg, sizeof(msg), "no node '%s' in the inventory", q);
	return nf_srv_send_error(rq, 404, msg);
}

static json_t *node_view(struct nf_server *s, json_t *n, int full)
{
	const char *name = json_string_value(json_object_get(n, "name"));
	json_t *st = json_object_get(s->state, name ? name : "");
	json_t *v = json_pack("{s:O?, s:O?, s:O?, s:O?, s:O?}", "name",
			      json_object_get(n, "name"), "mac",
			      json_object_get(n, "mac"), "ip",
			      json_object_get(n, "ip"), "role",
			      json_object_get(n, "role"), "rack",
			      json_object_get(n, "rack"));
	static const char *const keys[] = { "state", "image", "booted_at",
					    "verdict_at", "root_cause",
					    "result" };

	if (!v)
		return NULL;
	json_object_set_new(v, "state", json_string("not seen"));
	for (size_t i = 0; st && i < NF_ARRAY_SIZE(keys); i++) {
		json_t *x = json_object_get(st, keys[i]);

		if (x)
			json_object_set(v, keys[i], x);
	}
	if (full && json_object_get(st, "verdict"))
		json_object_set(v, "verdict", json_object_get(st, "verdict"));
	return v;
}

static int api_nodes(struct nf_server *s, struct nf_srv_req *rq,
		     const char *name)
{
	json_t *out, *arr, *n, *unk;
	size_t i;
	const char *k;
	json_t *v;

	pthread_mutex_lock(&s->lock);
	nf_srv_index_refresh(s);
	if (name) {
		n = nf_srv_index_node(s, name);
		out = n ? node_view(s, n, 1) : NULL;
		pthread_mutex_unlock(&s->lock);
		if (!n)
			return send_unknown_node(rq, name);
		return nf_srv_send_json(rq, 200, out);
	}
	out = json_object();
	arr = json_array();
	unk = json_array();
	json_array_foreach(json_object_get(s->index, "nodes"), i, n)
		json_array_append_new(arr, node_view(s, n, 0));
	json_object_foreach(s->unknown, k, v)
		json_array_append(unk, v);
	pthread_mutex_unlock(&s->lock);
	json_object_set_new(out, "nodes", arr);
	json_object_set_new(out, "unknown", unk);
	/* a full table replaces its oldest entries: say so */
	json_object_set_new(out, "unknown_max", json_integer(NF_HTTP_UNKNOWN_MAX));
	json_object_set_new(out, "unknown_full",
			    json_boolean(json_array_size(unk) >= NF_HTTP_UNKNOWN_MAX));
	return nf_srv_send_json(rq, 200, out);
}

/* Validate a verdict; NULL when good, else the reason */
const char *nf_verdict_check(const json_t *v, const char *name, char *buf,
			     size_t sz)
{
	const char *res = json_string_value(json_object_get(v, "result"));
	json_t *node = json_object_get(v, "node"), *rc, *x;
	char a[72], b[72];
	size_t i;

	if (!json_is_object(v))
		return "verdict must be a JSON object";
	if (!res || (strcmp(res, "pass") && strcmp(res, "fail"))) {
		nf_quote_value(res, a, sizeof(a));
		snprintf(buf, sz, "'result' must be \"pass\" or \"fail\", not %s%s%s",
			 res ? "'" : "", res ? a : "missing", res ? "'" : "");
		return buf;
	}
	if (node && (!json_is_string(node) ||
		     strcmp(json_string_value(node), name))) {
		nf_quote_value(json_string_value(node), a, sizeof(a));
		nf_quote_value(name, b, sizeof(b));
		snprintf(buf, sz, "'node' is '%s' but the URL names '%s'",
			 json_is_string(node) ? a : "(not a string)", b);
		return buf;
	}
	if (json_object_get(v, "image") &&
	    !json_is_string(json_object_get(v, "image")))
		return "'image' must be a string";
	rc = json_object_get(v, "root_causes");
	if (rc && !json_is_array(rc))
		return "'root_causes' must be a list";
	json_array_foreach(rc, i, x)
		if (!json_is_string(json_object_get(x, "id")) ||
		    (json_object_get(x, "message") &&
		     !json_is_string(json_object_get(x, "message"))))
			return "'root_causes' entries need a string 'id'";
	return NULL;
}

static int api_verdict(struct nf_server *s, struct nf_srv_req *rq,
		       const char *name)
{
	json_error_t je;
	json_t *v, *st, *rc0, *node;
	const char *why, *res, *ip;
	char when[32], cause[512] = "", peer[INET6_ADDRSTRLEN], whybuf[256];
	const char *body;
	size_t len;
	long long signed_at = 0;
	int r, local;

	if (!(body = nf_srv_request_body(rq, &len)))
		return nf_srv_send_error(rq, 413, "verdict larger than 64 KiB");
	v = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
	if (!v)
		return nf_srv_send_error(rq, 400, "malformed JSON");
	if ((why = nf_verdict_check(v, name, whybuf, sizeof(whybuf)))) {
		json_decref(v);
		return nf_srv_send_error(rq, 400, why);
	}
	res = json_string_value(json_object_get(v, "result"));
	rc0 = json_array_get(json_object_get(v, "root_causes"), 0);
	if (rc0)
		snprintf(cause, sizeof(cause), "%s%s%s",
			 json_string_value(json_object_get(rc0, "id")),
			 json_object_get(rc0, "message") ? ": " : "",
			 json_string_value(json_object_get(rc0, "message")) ?: "");
	else if (!strcmp(res, "fail"))
		snprintf(cause, sizeof(cause), "failed (no root cause given)");
	nf_srv_iso_now(when);
	nf_srv_request_peer(s->http, rq, peer, sizeof(peer), &local);
	pthread_mutex_lock(&s->lock);
	nf_srv_index_refresh(s);
	if (!(node = nf_srv_index_node(s, name))) {
		pthread_mutex_unlock(&s->lock);
		json_decref(v);
		return send_unknown_node(rq, name);
	}
	/* a node reports for itself: from its inventory address (a request
	 * from this machine itself is the operator's) */
	ip = json_string_value(json_object_get(node, "ip"));
	if (!local && ip && *ip && strcmp(ip, peer)) {
		pthread_mutex_unlock(&s->lock);
		json_decref(v);
		snprintf(cause, sizeof(cause), "verdict for '%s' from %s, not its "
			 "inventory address %s", name, peer, ip);
		return nf_srv_send_error(rq, 403, cause);
	}
	/* an enrolled node signs its verdict with its munge key */
	if (s->enroll) {
		pthread_mutex_lock(&s->enroll_lock);
		r = nf_enroll_verdict_auth(
			s->enroll, name,
			nf_srv_request_header(rq, "X-Nodeforge-Time"),
			nf_srv_request_header(rq, "X-Nodeforge-Proof"), body,
			len);
		if (r < 0)
			snprintf(cause, sizeof(cause), "%s",
				 nf_error_text(nf_enroll_ctx(s->enroll), r));
		pthread_mutex_unlock(&s->enroll_lock);
		if (r < 0) {
			pthread_mutex_unlock(&s->lock);
			json_decref(v);
			return nf_srv_send_error(
				rq, r == NF_E_SIGNATURE ? 403 : 500, cause);
		}
		/* signed and inside the clock window: still only newer than
		 * the last one taken from this node, or anyone who saw it
		 * could post it again */
		if (r == 0) {
			long long last = json_integer_value(json_object_get(
				json_object_get(s->state, name), "signed_at"));

			signed_at = strtoll(nf_srv_request_header(
				rq, "X-Nodeforge-Time"), NULL, 10);
			if (signed_at <= last) {
				pthread_mutex_unlock(&s->lock);
				json_decref(v);
				snprintf(cause, sizeof(cause), "the verdict of '%s' "
					 "is dated %lld, not after the last one "
					 "taken from it (%lld): a replay", name,
					 signed_at, last);
				return nf_srv_send_error(rq, 403, cause);
			}
		}
	}
	st = json_object_get(s->state, name);
	st = st ? json_deep_copy(st) : json_pack("{s:s}", "name", name);
	json_object_set_new(st, "state", json_string(!strcmp(res, "pass")
							     ? "verified"
							     : "failed"));
	json_object_set_new(st, "result", json_string(res));
	json_object_set_new(st, "verdict_at", json_string(when));
	if (signed_at)
		json_object_set_new(st, "signed_at", json_integer(signed_at));
	if (*cause)
		json_object_set_new(st, "root_cause", json_string(cause));
	else
		json_object_del(st, "root_cause");
	if (json_is_string(json_object_get(v, "image")))
		json_object_set(st, "image", json_object_get(v, "image"));
	json_object_set_new(st, "verdict", v);
	json_object_set(s->state, name, st);
	json_object_del(s->dirty, name);
	/* a batch snapshotted before this verdict holds write_lock until its
	 * files are renamed; one snapshotted after already has the verdict */
	pthread_mutex_unlock(&s->lock);
	pthread_mutex_lock(&s->write_lock);
	/* durable before the node hears "stored" */
	r = nf_srv_state_write(s, name, st);
	pthread_mutex_unlock(&s->write_lock);
	json_decref(st);
	if (r)
		return nf_srv_send_error(rq, 500, "cannot store the verdict");
	return nf_srv_send_json(rq, 200, json_pack("{s:s}", "stored", name));
}

/* Whether `peer` may add another unknown MAC now: each address adds at
 * most NF_HTTP_UNKNOWN_PER_PEER per NF_HTTP_UNKNOWN_WINDOW seconds, so
 * one flooding client cannot fill the table and hide the machines that
 * come after it (a new machine asks from its own DHCP address).  Under
 * s->lock. */
static int unknown_budget(struct nf_server *s, const char *peer)
{
	long long now = (long long)time(NULL), start;
	json_t *p = json_object_get(s->unknown_peers, peer);

	if (!p) {
		/* forget every address once the table of them is full */
		if (json_object_size(s->unknown_peers) >= NF_HTTP_UNKNOWN_MAX)
			json_object_clear(s->unknown_peers);
		json_object_set_new(s->unknown_peers, peer,
				    json_pack("[I,i]", now, 1));
		return 1;
	}
	start = json_integer_value(json_array_get(p, 0));
	if (now - start >= NF_HTTP_UNKNOWN_WINDOW) {
		json_array_set_new(p, 0, json_integer(now));
		json_array_set_new(p, 1, json_integer(1));
		return 1;
	}
	if (json_integer_value(json_array_get(p, 1)) >= NF_HTTP_UNKNOWN_PER_PEER)
		return 0;
	json_array_set_new(p, 1, json_integer(
		json_integer_value(json_array_get(p, 1)) + 1));
	return 1;
}

static int api_unknown(struct nf_server *s, struct nf_srv_req *rq,
		       const char *mac)
{
	char when[32], peer[INET6_ADDRSTRLEN], file[18];
	json_t *rec = NULL;
	uint8_t m[6];
	int known, local;

	if (nf_mac_parse(mac, m))
		return nf_srv_send_error(rq, 400, "malformed MAC");
	nf_srv_iso_now(when);
	nf_srv_request_peer(s->http, rq, peer, sizeof(peer), &local);
	nf_mac_format(m, '-', file);
	pthread_mutex_lock(&s->lock);
	nf_srv_index_refresh(s);
	known = json_object_get(s->by_mac, file) != NULL;
	if (!known && !json_object_get(s->unknown, file) &&
	    unknown_budget(s, peer)) {
		char key[18];

		nf_srv_unknown_make_room(s);
		nf_mac_format(m, ':', key);
		rec = json_pack("{s:s, s:s, s:s, s:s}", "mac", key, "first_seen",
				when, "seen_at", when, "from", peer);
		/* the table's copy may change while rec is written */
		json_object_set_new(s->unknown, file, json_deep_copy(rec));
	} else if (!known && json_object_get(s->unknown, file)) {
		json_t *old = json_object_get(s->unknown, file);

		/* written again at most hourly, so that expiry after a
		 * restart counts from a recent sighting */
		int stale = nf_srv_unknown_seen(old) + 3600 <= time(NULL);

		json_object_set_new(old, "seen_at", json_string(when));
		if (stale)
			rec = json_deep_copy(old);
	}
	pthread_mutex_unlock(&s->lock);
	/* a new machine is kept across restarts: this list is how an
	 * operator finds a new rack */
	if (rec) {
		char *p = nf_asprintf("%s/unknown/%s.json", s->state_dir, file);
		char *txt = json_dumps(rec, JSON_INDENT(1) | JSON_SORT_KEYS);

		if (p && txt)
			nf_write_atomic(NULL, p, txt, strlen(txt), 0644);
		free(p);
		free(txt);
		json_decref(rec);
	}
	return nf_srv_send_buf(rq, 200, "text/plain", "recorded\n", 9);
}

/* POST /api/v1/enroll, /api/v1/rotate: lib/enroll.c decides, from the
 * peer's address; GET /api/v1/enroll: windows, claims and refusals, to a
 * loopback peer only */
static int api_enroll(struct nf_server *s, struct nf_srv_req *rq,
		      const char *method, int rotate)
{
	char peer[INET6_ADDRSTRLEN] = "";
	json_t *resp = NULL;
	const char *body;
	size_t len;
	int status = 500, r, local;

	if (!strcmp(method, "GET") && !rotate) {
		/* which nodes may claim now is for the operator on the
		 * boot server, not for the network */
		nf_srv_request_peer(s->http, rq, peer, sizeof(peer), &local);
		if (!local)
			return nf_srv_send_error(rq, 403, "the enrollment state "
						 "is served to the boot server "
						 "itself only");
		pthread_mutex_lock(&s->enroll_lock);
		r = nf_enroll_state(s->enroll, &resp);
		pthread_mutex_unlock(&s->enroll_lock);
		return r ? nf_srv_send_error(rq, 500, "enrollment state "
					     "unavailable")
			 : nf_srv_send_json(rq, 200, resp);
	}
	if (strcmp(method, "POST"))
		return nf_srv_send_error(rq, 405, "method not allowed");
	if (!(body = nf_srv_request_body(rq, &len)))
		return nf_srv_send_error(rq, 413, "claim too large");
	nf_srv_request_peer(s->http, rq, peer, sizeof(peer), &local);
	pthread_mutex_lock(&s->enroll_lock);
	r = (rotate ? nf_rotate_poll : nf_enroll_claim)(
		s->enroll, peer, body, len, &resp, &status);
	pthread_mutex_unlock(&s->enroll_lock);
	if (r || !resp)
		return nf_srv_send_error(rq, 500, "enrollment failed");
	return nf_srv_send_json(rq, (unsigned)status, resp);
}

int nf_srv_api(void *data, struct nf_srv_req *rq, const char *method,
	       const char *url)
{
	struct nf_server *s = data;
	const char *p = url + strlen("/api/v1/");
	char name[80];
	int ret = -EIO;
	unsigned status = 200;

	if (!strcmp(p, "nodes")) {
		if (strcmp(method, "GET") && strcmp(method, "HEAD"))
			status = 405;
		else
			ret = api_nodes(s, rq, NULL);
	} else if (!strncmp(p, "nodes/", 6)) {
		const char *rest = p + 6, *slash = strchr(rest, '/');
		size_t n = slash ? (size_t)(slash - rest) : strlen(rest);

		if (n >= sizeof(name)) {
			status = 404;
		} else {
			memcpy(name, rest, n);
			name[n] = '\0';
			if (!nf_srv_valid_name(name))
				status = 404;
			else if (!slash && !strcmp(method, "GET"))
				ret = api_nodes(s, rq, name);
			else if (slash && !strcmp(slash, "/verdict") &&
				 !strcmp(method, "POST"))
				ret = api_verdict(s, rq, name);
			else
				status = slash && !strcmp(slash, "/verdict")
						 ? 405 : 404;
		}
	} else if (!strncmp(p, "unknown/", 8) && !strcmp(method, "GET")) {
		ret = api_unknown(s, rq, p + 8);
	} else if (s->enroll && (!strcmp(p, "enroll") || !strcmp(p, "rotate"))) {
		ret = api_enroll(s, rq, method, p[0] == 'r');
	} else {
		status = 404;
	}
	if (status == 405)
		ret = nf_srv_send_error(rq, 405, "method not allowed");
	else if (status == 404)
		ret = nf_srv_send_error(rq, 404, "not found");
	nf_srv_access_log(s->http, rq, method, url,
			  nf_srv_request_status(rq) ? nf_srv_request_status(rq)
						    : status, 0);
	return ret;
}

