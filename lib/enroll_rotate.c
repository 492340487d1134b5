/* SPDX-License-Identifier: MIT */
/*
 * Munge key rotation: the server's plan and answers, and the node's poll.
 */
#include "enroll_int.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------- rotation
 *
 * A munge key rotation is a plan in STATE/rotation.json:
 *   {old_fp, new_fp, old_path, new_path, groups: [[names]...], go,
 *    finished, nodes: {name: {staged, switched}}}
 * groups: the controllers first, then the other nodes rack by rack.  Nodes
 * poll POST /api/v1/rotate with {name, pubkey, nonce, have, proof}: `have`
 * is the fingerprint of the key they hold and `proof` an HMAC-SHA256 with
 * that key over "nodeforge-rotate-v1" NUL name NUL nonce pubkey, so only a
 * node holding a cluster key learns the next one.  The answer's `action`:
 *   stage   the next key is sealed in the answer: keep it beside the key
 *   switch  the node's group may switch now (next key sealed again)
 *   done    the node holds the new key (recorded as switched)
 *   none    no rotation
 * The driver (nf_rotate_begin, nf_rotate_go, nf_rotate_finish) moves `go`
 * from group to group once the previous one has switched, so two keys are
 * in flight only while one group restarts munged. */

#define ROTATE_FILE "rotation.json"
#define ROTATE_AAD "nodeforge-rotate-v1"

int nf_en_rot_load(struct nf_enroll *e, json_t **out)
{
	char *p = nf_asprintf("%s/%s", e->dir, ROTATE_FILE), *buf;
	json_t *j;
	size_t len;
	int r;

	if (!p)
		return -ENOMEM;
	r = nf_read_file(e->ctx, p, STATE_MAX, &buf, &len);
	if (r == -ENOENT) {
		free(p);
		*out = NULL;
		return 0;
	}
	if (r) {
		free(p);
		return r;
	}
	j = json_loadb(buf, len, 0, NULL);
	free(buf);
	if (!json_is_object(j) || !json_is_array(json_object_get(j, "groups")) ||
	    !json_is_object(json_object_get(j, "nodes"))) {
		json_decref(j);
		r = nf_fail(e->ctx, NF_E_PARSE, "'%s' is not a rotation plan", p);
		free(p);
		return r;
	}
	free(p);
	*out = j;
	return 0;
}

static int rot_save(struct nf_enroll *e, json_t *j)
{
	return nf_en_json_save(e, ROTATE_FILE, j);
}

int nf_rotate_status(struct nf_enroll *e, json_t **out)
{
	int fd = nf_en_lock(e), r;

	if (fd < 0)
		return fd;
	r = nf_en_rot_load(e, out);
	nf_en_unlock(fd);
	if (!r && !*out)
		r = nf_fail(e->ctx, NF_E_NOTFOUND,
			    "no munge key rotation in '%s'", e->dir);
	return r;
}

static int rack_cmp(const void *a, const void *b)
{
	const struct enode *x = *(const struct enode *const *)a;
	const struct enode *y = *(const struct enode *const *)b;
	int r;

	/* nodes without a rack go last */
	if (!*x->rack != !*y->rack)
		return *x->rack ? -1 : 1;
	r = strcmp(x->rack, y->rack);
	return r ? r : strcmp(x->name, y->name);
}

int nf_rotate_begin(struct nf_enroll *e, char fp[NF_FINGERPRINT_LEN])
{
	char oldfp[NF_FINGERPRINT_LEN], *next = NULL;
	json_t *st = NULL, *rot = NULL, *groups, *nodes, *g = NULL;
	const struct enode **v = NULL;
	size_t nv = 0;
	int fd, r;

	if (!e->munge_key)
		return nf_fail(e->ctx, NF_E_NOTFOUND,
			       "no munge key configured (site secrets.munge_key)");
	if ((fd = nf_en_lock(e)) < 0)
		return fd;
	if ((r = nf_en_rot_load(e, &rot)))
		goto out;
	if (rot && !json_is_true(json_object_get(rot, "finished"))) {
		r = nf_fail(e->ctx, -EBUSY,
			    "a munge key rotation is already in progress (%s): "
			    "finish it first", json_string_value(
				    json_object_get(rot, "new_fp")));
		goto out;
	}
	if ((r = nf_en_state_load(e, &st)))
		goto out;
	if ((r = nf_munge_fingerprint_file(e->ctx, e->munge_key, oldfp)))
		goto out;
	next = nf_asprintf("%s/munge.key.next", e->dir);
	if (!next) {
		r = -ENOMEM;
		goto out;
	}
	unlink(next);
	if ((r = nf_munge_key_new(e->ctx, next, NULL, fp)))
		goto out;
	/* The enrolled nodes: controllers, then by rack */
	if (!(v = calloc(e->n + 1, sizeof(*v)))) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < e->n; i++)
		if (json_object_get(json_object_get(st, "claims"),
				    e->nodes[i].name))
			v[nv++] = &e->nodes[i];
	groups = json_array();
	nodes = json_object();
	g = json_array();
	for (size_t i = 0; i < nv; i++)
		if (nf_en_role_gets_password(v[i]->role))
			json_array_append_new(g, json_string(v[i]->name));
	if (json_array_size(g))
		json_array_append(groups, g);
	json_decref(g);
	g = NULL;
	{
		const struct enode **w = calloc(nv + 1, sizeof(*w));
		size_t nw = 0;
		const char *rack = NULL;

		if (!w) {
			json_decref(groups);
			json_decref(nodes);
			r = -ENOMEM;
			goto out;
		}
		for (size_t i = 0; i < nv; i++)
			if (!nf_en_role_gets_password(v[i]->role))
				w[nw++] = v[i];
		qsort(w, nw, sizeof(*w), rack_cmp);
		for (size_t i = 0; i < nw; i++) {
			if (!g || strcmp(rack, w[i]->rack)) {
				if (g)
					json_array_append_new(groups, g);
				g = json_array();
				rack = w[i]->rack;
			}
			json_array_append_new(g, json_string(w[i]->name));
		}
		if (g)
			json_array_append_new(groups, g);
		g = NULL;
		free(w);
	}
	for (size_t i = 0; i < nv; i++)
		json_object_set_new(nodes, v[i]->name, json_object());
	json_decref(rot);
	rot = json_pack("{s:i,s:s,s:s,s:s,s:s,s:o,s:i,s:b,s:o,s:I}", "version",
			1, "old_fp", oldfp, "new_fp", fp, "old_path",
			e->munge_key, "new_path", next, "groups", groups, "go",
			-1, "finished", 0, "nodes", nodes, "started",
			(json_int_t)now_of(e));
	r = rot ? rot_save(e, rot) : -ENOMEM;
out:
	free(v);
	free(next);
	json_decref(st);
	json_decref(rot);
	nf_en_unlock(fd);
	return r;
}

int nf_rotate_go(struct nf_enroll *e, int group)
{
	json_t *rot = NULL;
	int fd = nf_en_lock(e), r;

	if (fd < 0)
		return fd;
	if (!(r = nf_en_rot_load(e, &rot)) && !rot)
		r = nf_fail(e->ctx, NF_E_NOTFOUND, "no munge key rotation");
	if (!r) {
		json_object_set_new(rot, "go", json_integer(group));
		r = rot_save(e, rot);
	}
	json_decref(rot);
	nf_en_unlock(fd);
	return r;
}

/* The new key becomes the server's key; the old one is kept (0400) in the
 * state dir to answer stragglers, which present it as proof */
int nf_rotate_finish(struct nf_enroll *e)
{
	json_t *rot = NULL;
	char *prev = NULL;
	const char *np;
	int fd = nf_en_lock(e), r;

	if (fd < 0)
		return fd;
	if (!(r = nf_en_rot_load(e, &rot)) && !rot)
		r = nf_fail(e->ctx, NF_E_NOTFOUND, "no munge key rotation");
	if (r)
		goto out;
	np = json_string_value(json_object_get(rot, "new_path"));
	prev = nf_asprintf("%s/munge.key.previous", e->dir);
	if (!prev || !np) {
		r = -ENOMEM;
		goto out;
	}
	/* same file system is not guaranteed: copy old, then rename new over
	 * the key (link first so a crash never leaves no key) */
	{
		uint8_t *k;
		size_t kl;
		int dfd;

		if ((r = nf_secret_read(e->ctx, e->munge_key, NF_MUNGE_KEY_MAX,
					&k, &kl)))
			goto out;
		dfd = open(e->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		r = dfd < 0 ? -errno
			    : nf_secret_write_at(e->ctx, dfd,
						 "munge.key.previous", k, kl,
						 0400, -1, -1);
		if (dfd >= 0)
			close(dfd);
		nf_wipe_free(k, kl + 1);
		if (r)
			goto out;
		if ((r = nf_secret_read(e->ctx, np, NF_MUNGE_KEY_MAX, &k, &kl)))
			goto out;
		r = nf_write_atomic(e->ctx, e->munge_key, k, kl, 0400);
		nf_wipe_free(k, kl + 1);
		if (r)
			goto out;
		unlink(np);
	}
	json_object_set_new(rot, "old_path", json_string(prev));
	json_object_set_new(rot, "new_path", json_string(e->munge_key));
	json_object_set_new(rot, "finished", json_true());
	json_object_set_new(rot, "go", json_integer(INT32_MAX));
	r = rot_save(e, rot);
out:
	free(prev);
	json_decref(rot);
	nf_en_unlock(fd);
	return r;
}

static int group_of(const json_t *rot, const char *name)
{
	size_t i, j;
	json_t *g, *n;

	json_array_foreach(json_object_get(rot, "groups"), i, g)
		json_array_foreach(g, j, n)
			if (!strcmp(json_string_value(n), name))
				return (int)i;
	return -1;
}

static int rotate_proof(const uint8_t *key, size_t klen, const char *name,
			const uint8_t nonce[16], const uint8_t pub[32],
			uint8_t out[32])
{
	uint8_t msg[AAD_MAX + 32];
	size_t n = nf_en_aad(msg, ROTATE_AAD, name, nonce);

	memcpy(msg + n, pub, 32);
	return nf_hmac_sha256(key, klen, msg, n + 32, out);
}

/* The server's side: a stage or switch answer carries an HMAC with the
 * key the node holds over "nodeforge-rotate-answer-v1" NUL name NUL nonce
 * action NUL sealed, so only a server holding the cluster's key can
 * direct a node to a new one */
#define ROTATE_ANSWER "nodeforge-rotate-answer-v1"

static int answer_proof(const uint8_t *key, size_t klen, const char *name,
			const uint8_t nonce[16], const char *action,
			const char *sealed, uint8_t out[32])
{
	size_t al = strlen(action) + 1, sl = strlen(sealed);
	/* a longer prefix than AAD_PREFIX: AAD_MAX does not hold it */
	uint8_t *msg = malloc(sizeof(ROTATE_ANSWER) + strlen(name) + 1 + 16 +
			      al + sl);
	size_t n;
	int r;

	if (!msg)
		return -ENOMEM;
	n = nf_en_aad(msg, ROTATE_ANSWER, name, nonce);
	memcpy(msg + n, action, al);
	memcpy(msg + n + al, sealed, sl);
	r = nf_hmac_sha256(key, klen, msg, n + al + sl, out);
	free(msg);
	return r;
}

int nf_rotate_poll(struct nf_enroll *e, const char *peer_addr,
		   const void *body, size_t len, json_t **response,
		   int *http_status)
{
	json_t *req = NULL, *st = NULL, *rot = NULL, *nrec;
	const char *name, *have, *oldfp, *newfp, *action;
	const struct enode *n;
	uint8_t pub[32], nonce[16], proof[32], want[32], aad[AAD_MAX];
	uint8_t *key = NULL, *nkey = NULL, *blob = NULL;
	size_t klen = 0, nklen = 0, bloblen = 0;
	uint32_t peer;
	int fd, r, grp, holds_new;
	long long now = now_of(e);

	*response = NULL;
	if (len > NF_ENROLL_BODY_MAX) {
		nf_en_respond_err(response, http_status, 413, "too-large",
			    "request is larger than 4096 bytes");
		return *response ? 0 : -ENOMEM;
	}
	req = json_loadb(body, len, JSON_REJECT_DUPLICATES, NULL);
	name = json_string_value(json_object_get(req, "name"));
	have = json_string_value(json_object_get(req, "have"));
	if ((fd = nf_en_lock(e)) < 0 || nf_en_state_load(e, &st) || nf_en_rot_load(e, &rot)) {
		nf_en_unlock(fd);
		json_decref(req);
		json_decref(st);
		nf_en_respond_err(response, http_status, 500, "server",
			    "rotation state unavailable");
		return *response ? 0 : -ENOMEM;
	}
	if (!json_is_object(req) || !name || !nf_en_name_ok(name) || !have ||
	    nf_en_field_bytes(req, "pubkey", pub, 32) ||
	    nf_en_field_bytes(req, "nonce", nonce, 16) ||
	    nf_en_field_bytes(req, "proof", proof, 32)) {
		nf_en_refuse(e, st, NULL, peer_addr, 400, "malformed", response,
		       http_status, "malformed rotation request");
		goto save;
	}
	n = nf_en_find_node(e, name);
	if (!n) {
		nf_en_refuse(e, st, name, peer_addr, 403, "unknown-node", response,
		       http_status, "'%s' is not a node of the inventory", name);
		goto save;
	}
	if (nf_en_peer_ipv4(peer_addr, &peer) || peer != n->ip) {
		nf_en_refuse(e, st, name, peer_addr, 403, "wrong-address", response,
		       http_status, "rotation request for '%s' came from %s, "
		       "not from its inventory address", name,
		       peer_addr ? peer_addr : "?");
		goto save;
	}
	if (!rot) {
		*response = json_pack("{s:s,s:s}", "node", name, "action", "none");
		*http_status = 200;
		goto out;
	}
	oldfp = json_string_value(json_object_get(rot, "old_fp"));
	newfp = json_string_value(json_object_get(rot, "new_fp"));
	nrec = json_object_get(json_object_get(rot, "nodes"), name);
	holds_new = !strcmp(have, newfp);
	if ((!holds_new && strcmp(have, oldfp)) ||
	    (!nrec && !json_object_get(json_object_get(st, "claims"), name))) {
		nf_en_refuse(e, st, name, peer_addr, 403, "not-in-rotation", response,
		       http_status, "'%s' holds key %s: not part of the rotation "
		       "%s -> %s; re-enroll it", name, have, oldfp, newfp);
		goto save;
	}
	r = nf_secret_read(e->ctx, json_string_value(json_object_get(
			   rot, holds_new ? "new_path" : "old_path")),
			   NF_MUNGE_KEY_MAX, &key, &klen);
	if (r || rotate_proof(key, klen, name, nonce, pub, want) ||
	    !nf_memeq_ct(want, proof, 32)) {
		if (r) {
			nf_log(e->ctx, NF_LOG_ERR, "rotate: %s", nf_errmsg(e->ctx));
			nf_en_respond_err(response, http_status, 500, "server",
				    "the server cannot read its keys");
			goto out;
		}
		nf_en_refuse(e, st, name, peer_addr, 403, "bad-proof", response,
		       http_status, "'%s' does not prove it holds key %s", name,
		       have);
		goto save;
	}
	/* Enrolled after the plan was made: it joins the last group */
	if (!nrec) {
		json_t *groups = json_object_get(rot, "groups");

		if (!json_array_size(groups))
			json_array_append_new(groups, json_array());
		json_array_append_new(json_array_get(groups,
						     json_array_size(groups) - 1),
				      json_string(name));
		nrec = json_object();
		json_object_set_new(json_object_get(rot, "nodes"), name, nrec);
		rot_save(e, rot);
	}
	if (holds_new) {
		if (!json_object_get(nrec, "switched")) {
			json_object_set_new(nrec, "switched", json_integer(now));
			nf_log(e->ctx, NF_LOG_INFO,
			       "rotate: '%s' switched to %s", name, newfp);
			rot_save(e, rot);
		}
		*response = json_pack("{s:s,s:s}", "node", name, "action", "done");
		*http_status = 200;
		goto out;
	}
	/* Holds the old key (kept in key to prove the answer): send the new
	 * one, sealed */
	r = nf_secret_read(e->ctx, json_string_value(json_object_get(
			   rot, "new_path")), NF_MUNGE_KEY_MAX, &nkey, &nklen);
	if (!r) {
		char *b64 = nf_b64_encode(nkey, nklen);
		size_t cap = b64 ? strlen(b64) + 64 + strlen(name) : 0;
		char *pl = b64 ? malloc(cap) : NULL;
		size_t pn;

		if (pl) {
			pn = (size_t)snprintf(pl, cap,
					      "{\"v\":1,\"node\":\"%s\",\"munge_key\":\"%s\"}",
					      name, b64);
			r = nf_seal(e->ctx, pub, aad,
				    nf_en_aad(aad, ROTATE_AAD, name, nonce),
				    pl, pn, &blob, &bloblen);
			nf_wipe_free(pl, cap);
		} else {
			r = -ENOMEM;
		}
		if (b64)
			nf_wipe_free(b64, strlen(b64));
	}
	if (r) {
		nf_log(e->ctx, NF_LOG_ERR, "rotate: '%s': %s", name,
		       nf_errmsg(e->ctx));
		nf_en_respond_err(response, http_status, 500, "server",
			    "the server cannot seal the next key");
		goto out;
	}
	grp = group_of(rot, name);
	action = grp >= 0 && grp <= json_integer_value(json_object_get(rot, "go"))
			 ? "switch" : "stage";
	if (!json_object_get(nrec, "staged")) {
		json_object_set_new(nrec, "staged", json_integer(now));
		rot_save(e, rot);
	}
	{
		char *b64 = nf_b64_encode(blob, bloblen), *ab = NULL;
		uint8_t ap[32];

		if (b64 && !answer_proof(key, klen, name, nonce, action, b64, ap))
			ab = nf_b64_encode(ap, 32);
		*response = ab ? json_pack("{s:s,s:s,s:s,s:s,s:s}", "node", name,
					   "action", action, "munge_fingerprint",
					   newfp, "sealed", b64, "answer_proof", ab)
			       : NULL;
		*http_status = 200;
		free(b64);
		free(ab);
	}
	goto out;
save:
	nf_en_state_save(e, st);
out:
	if (key)
		nf_wipe_free(key, klen + 1);
	if (nkey)
		nf_wipe_free(nkey, nklen + 1);
	free(blob);
	json_decref(rot);
	json_decref(st);
	json_decref(req);
	nf_en_unlock(fd);
	return *response ? 0 : -ENOMEM;
}

/* ------------------------------------------------- rotation, node side */

/* Open the sealed next key of a rotation answer */
static int rotate_open(struct nf_ctx *ctx, const json_t *j, const char *node,
		       const uint8_t priv[32], const uint8_t nonce[16],
		       uint8_t **key, size_t *klen)
{
	const char *s = json_string_value(json_object_get(j, "sealed"));
	const char *fpsent = json_string_value(json_object_get(j,
							"munge_fingerprint"));
	uint8_t aad[AAD_MAX], *blob = NULL, *pt = NULL;
	size_t bl = 0, pl = 0;
	char fp[NF_FINGERPRINT_LEN];
	json_t *p;
	int r;

	*key = NULL;
	if (!s || nf_b64_decode(s, NF_SEAL_MAX + NF_SEAL_OVERHEAD, &blob, &bl))
		return nf_fail(ctx, NF_E_PARSE, "rotation answer has no sealed key");
	r = nf_seal_open(ctx, priv, aad,
			 nf_en_aad(aad, ROTATE_AAD, node, nonce), blob, bl,
			 &pt, &pl);
	free(blob);
	if (r)
		return r;
	p = json_loadb((char *)pt, pl, JSON_REJECT_DUPLICATES, NULL);
	s = json_string_value(json_object_get(p, "munge_key"));
	r = 0;
	if (!s || !json_is_string(json_object_get(p, "node")) ||
	    strcmp(json_string_value(json_object_get(p, "node")), node) ||
	    nf_b64_decode(s, NF_MUNGE_KEY_MAX, key, klen) ||
	    *klen < NF_MUNGE_KEY_MIN)
		r = nf_fail(ctx, NF_E_PARSE, "sealed key is malformed");
	if (!r) {
		nf_fingerprint(*key, *klen, fp);
		if (!fpsent || strcmp(fp, fpsent))
			r = nf_fail(ctx, NF_E_CHECKSUM,
				    "sealed key is %s, the server announced %s",
				    fp, fpsent ? fpsent : "nothing");
	}
	if (r && *key) {
		nf_wipe_free(*key, *klen);
		*key = NULL;
	}
	if (p) {
		nf_en_json_wipe_str(p, "munge_key");
		json_decref(p);
	}
	nf_wipe_free(pt, pl + 1);
	return r;
}

static int answer_check(struct nf_ctx *ctx, const json_t *j,
			const char *node, const uint8_t nonce[16],
			const char *action, const uint8_t *key, size_t klen)
{
	const char *sealed = json_string_value(json_object_get(j, "sealed"));
	const char *ab = json_string_value(json_object_get(j, "answer_proof"));
	uint8_t want[32], *got = NULL;
	size_t gl = 0;
	int ok;

	ok = sealed && ab && !nf_b64_decode(ab, 32, &got, &gl) && gl == 32 &&
	     !answer_proof(key, klen, node, nonce, action, sealed, want) &&
	     nf_memeq_ct(want, got, 32);
	free(got);
	return ok ? 0 : nf_fail(ctx, NF_E_SIGNATURE,
				"the rotation answer does not prove the server "
				"holds this node's munge key: ignored, nothing "
				"written");
}

static int rotate_request(struct nf_ctx *ctx, const char *node,
			  const uint8_t *key, size_t klen, uint8_t priv[32],
			  uint8_t nonce[16], char **body)
{
	uint8_t pub[32], proof[32];
	char fp[NF_FINGERPRINT_LEN], *a, *b, *c;
	json_t *j;
	int r;

	if ((r = nf_x25519_keypair(ctx, priv, pub)) ||
	    (r = nf_random_bytes(ctx, nonce, 16)))
		return r;
	if (rotate_proof(key, klen, node, nonce, pub, proof))
		return nf_fail(ctx, NF_E_EXTERNAL, "cannot compute the proof");
	nf_fingerprint(key, klen, fp);
	a = nf_b64_encode(pub, 32);
	b = nf_b64_encode(nonce, 16);
	c = nf_b64_encode(proof, 32);
	j = a && b && c ? json_pack("{s:s,s:s,s:s,s:s,s:s}", "name", node,
				    "pubkey", a, "nonce", b, "have", fp,
				    "proof", c)
			: NULL;
	free(a);
	free(b);
	free(c);
	*body = j ? json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(j);
	return *body ? 0 : -ENOMEM;
}

static int read_key_at(struct nf_ctx *ctx, int rootfd, const char *rel,
		       uint8_t **key, size_t *klen)
{
	int fd = openat(rootfd, rel, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	uint8_t buf[NF_MUNGE_KEY_MAX + 1];
	ssize_t n;

	if (fd < 0)
		return nf_fail(ctx, -errno, "cannot read '%s': %s", rel,
			       strerror(errno));
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n < NF_MUNGE_KEY_MIN || n > NF_MUNGE_KEY_MAX) {
		nf_wipe(buf, sizeof(buf));
		return nf_fail(ctx, NF_E_INVALID, "'%s' is not a munge key", rel);
	}
	if (!(*key = malloc((size_t)n))) {
		nf_wipe(buf, sizeof(buf));
		return -ENOMEM;
	}
	memcpy(*key, buf, (size_t)n);
	*klen = (size_t)n;
	nf_wipe(buf, sizeof(buf));
	return 0;
}

int nf_rotate_client(struct nf_ctx *ctx, const struct nf_rotate_client_opts *o,
		     struct nf_rotate_result *res)
{
	const char *root = o->root && *o->root ? o->root : "/";
	char *url = nf_asprintf("%s/api/v1/rotate", o->server);
	time_t t0 = time(NULL);
	struct nf_en_key_place kp;
	char next_rel[sizeof(kp.rel)];
	json_t *prof = NULL;
	long uid, gid;
	int rootfd, r;

	memset(res, 0, sizeof(*res));
	if (!url)
		return -ENOMEM;
	if (!nf_en_name_ok(o->node)) {
		free(url);
		return nf_fail(ctx, NF_E_INVALID, "'%s' is not a node name",
			       o->node);
	}
	rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0) {
		r = nf_fail(ctx, -errno, "cannot open root '%s': %s", root,
			    strerror(errno));
		free(url);
		return r;
	}
	/* the key where the munge facet checks it, the next one beside it */
	r = nf_en_node_profile(ctx, root, &prof);
	if (!r)
		r = nf_en_key_place(ctx, prof, &kp);
	json_decref(prof);
	if (r || (r = nf_root_user(ctx, root, kp.owner, &uid, &gid)))
		goto out;
	snprintf(next_rel, sizeof(next_rel), "%s.next", kp.rel);
	for (;;) {
		uint8_t priv[32], nonce[16], *key = NULL, *next = NULL;
		size_t klen = 0, nlen = 0, rlen = 0;
		char *body = NULL, *resp = NULL;
		const char *action;
		long status = 0;
		int switched_now;
		json_t *j;

		if ((r = read_key_at(ctx, rootfd, kp.rel, &key, &klen)))
			break;
		nf_fingerprint(key, klen, res->munge_fingerprint);
		r = rotate_request(ctx, o->node, key, klen, priv, nonce, &body);
		if (r) {
			nf_wipe_free(key, klen);
			break;
		}
		r = nf_http_post(ctx, url, o->bind, body, strlen(body),
				 NF_ENROLL_RESPONSE_MAX,
				 o->timeout_s > 0 ? o->timeout_s : 30, &resp,
				 &rlen, &status);
		free(body);
		if (r && r != NF_E_NETWORK) {
			nf_wipe_free(key, klen);
			nf_wipe(priv, sizeof(priv));
			break;
		}
		j = r ? NULL : json_loadb(resp, rlen, 0, NULL);
		free(resp);
		action = json_string_value(json_object_get(j, "action"));
		/* a new key only from a server holding the one this node has */
		if (!r && action && (!strcmp(action, "stage") ||
				     !strcmp(action, "switch")))
			r = answer_check(ctx, j, o->node, nonce, action, key, klen);
		nf_wipe_free(key, klen);
		key = NULL;
		if (r == NF_E_SIGNATURE) {
			json_decref(j);
			nf_wipe(priv, sizeof(priv));
			break;
		}
		if (!r && (status != 200 || !action)) {
			const char *m = json_string_value(json_object_get(j, "error"));

			r = nf_fail(ctx, NF_E_SIGNATURE,
				    "server refused the rotation request (HTTP "
				    "%ld): %s", status, m ? m : "no reason given");
			json_decref(j);
			nf_wipe(priv, sizeof(priv));
			break;
		}
		if (!r && (!strcmp(action, "none") || !strcmp(action, "done"))) {
			res->switched = !strcmp(action, "done");
			json_decref(j);
			nf_wipe(priv, sizeof(priv));
			break;
		}
		if (!r && (!strcmp(action, "stage") || !strcmp(action, "switch"))) {
			r = rotate_open(ctx, j, o->node, priv, nonce, &next, &nlen);
			if (!r && !strcmp(action, "stage") && !res->staged) {
				r = nf_secret_write_at(ctx, rootfd, next_rel,
						       next, nlen, kp.mode, uid,
						       gid);
				res->staged = !r;
			} else if (!r && !strcmp(action, "switch")) {
				r = nf_secret_write_at(ctx, rootfd, kp.rel,
						       next, nlen, kp.mode, uid,
						       gid);
				if (!r) {
					unlinkat(rootfd, next_rel, 0);
					res->staged = 1;
					if (o->restart_cmd && *o->restart_cmd) {
						const char *argv[] = {
							"/bin/sh", "-c",
							o->restart_cmd, NULL };
						struct nf_spawn sp = {
							.argv = argv,
							.out = NF_SPAWN_FD,
							.err = NF_SPAWN_FD,
							.fd = 2 };

						if (nf_spawn_run(&sp) ||
						    !WIFEXITED(sp.status) ||
						    WEXITSTATUS(sp.status))
							nf_log(ctx, NF_LOG_ERR,
							       "rotate: '%s' failed",
							       o->restart_cmd);
					}
				}
			}
			if (next)
				nf_wipe_free(next, nlen);
			next = NULL;
		} else if (!r) {
			r = nf_fail(ctx, NF_E_PARSE, "unknown rotation action '%s'",
				    action);
		}
		switched_now = !r && action && !strcmp(action, "switch");
		json_decref(j);
		nf_wipe(priv, sizeof(priv));
		if (r && r != NF_E_NETWORK)
			break;
		if (time(NULL) - t0 >= o->wait_s) {
			r = nf_fail(ctx, NF_E_TIMEOUT,
				    "no switch within %ld s (staged: %s)",
				    o->wait_s, res->staged ? "yes" : "no");
			break;
		}
		/* the switch itself is reported on the next poll at once */
		if (switched_now)
			continue;
		usleep((useconds_t)(o->poll_ms > 0 ? o->poll_ms : 5000) * 1000);
	}
out:
	close(rootfd);
	free(url);
	return r;
}
