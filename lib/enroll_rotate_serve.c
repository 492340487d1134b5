/* SPDX-License-Identifier: MIT */
/*
 * Munge key rotation, the server's side: the proofs a node and the server
 * give each other, and the answer to a node's poll (POST /api/v1/rotate).
 * The plan these answers follow is lib/enroll_rotate.c's.
 */
#include "enroll_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The node's proof: an HMAC-SHA256 with the key it holds over
 * "nodeforge-rotate-v1" NUL name NUL nonce pubkey */
int nf_en_rot_proof(const uint8_t *key, size_t klen, const char *name,
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

int nf_en_rot_answer_proof(const uint8_t *key, size_t klen,
			   const char *name, const uint8_t nonce[16],
			   const char *action, const char *sealed,
			   uint8_t out[32])
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
		nf_en_refuse(e, NULL, peer_addr, 400, "malformed", response,
		       http_status, "malformed rotation request");
		goto out;
	}
	n = nf_en_find_node(e, name);
	if (!n) {
		nf_en_refuse(e, name, peer_addr, 403, "unknown-node", response,
		       http_status, "'%s' is not a node of the inventory", name);
		goto out;
	}
	if (nf_en_peer_ipv4(peer_addr, &peer) || peer != n->ip) {
		nf_en_refuse(e, name, peer_addr, 403, "wrong-address", response,
		       http_status, "rotation request for '%s' came from %s, "
		       "not from its inventory address", name,
		       peer_addr ? peer_addr : "?");
		goto out;
	}
	if (!rot) {
		*response = json_pack("{s:s,s:s}", "node", name, "action", "none");
		*http_status = 200;
		goto out;
	}
	oldfp = json_string_value(json_object_get(rot, "old_fp"));
	newfp = json_string_value(json_object_get(rot, "new_fp"));
	/* a plan whose next key is not made yet hands nothing out */
	if (!oldfp || !newfp) {
		*response = json_pack("{s:s,s:s}", "node", name, "action", "none");
		*http_status = 200;
		goto out;
	}
	nrec = json_object_get(json_object_get(rot, "nodes"), name);
	holds_new = !strcmp(have, newfp);
	if ((!holds_new && strcmp(have, oldfp)) ||
	    (!nrec && !json_object_get(json_object_get(st, "claims"), name))) {
		nf_en_refuse(e, name, peer_addr, 403, "not-in-rotation", response,
		       http_status, "'%s' holds key %s: not part of the rotation "
		       "%s -> %s; re-enroll it", name, have, oldfp, newfp);
		goto out;
	}
	r = holds_new ? nf_secret_read(e->ctx, json_string_value(
				json_object_get(rot, "new_path")),
				NF_MUNGE_KEY_MAX, &key, &klen)
		      : nf_en_rot_old_key(e, rot, oldfp, &key, &klen);
	if (r || nf_en_rot_proof(key, klen, name, nonce, pub, want) ||
	    !nf_memeq_ct(want, proof, 32)) {
		if (r) {
			nf_log(e->ctx, NF_LOG_ERR, "rotate: %s", nf_errmsg(e->ctx));
			nf_en_respond_err(response, http_status, 500, "server",
				    "the server cannot read its keys");
			goto out;
		}
		nf_en_refuse(e, name, peer_addr, 403, "bad-proof", response,
		       http_status, "'%s' does not prove it holds key %s", name,
		       have);
		goto out;
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
		nf_en_rot_save(e, rot);
	}
	if (holds_new) {
		if (!json_object_get(nrec, "switched")) {
			json_object_set_new(nrec, "switched", json_integer(now));
			nf_log(e->ctx, NF_LOG_INFO,
			       "rotate: '%s' switched to %s", name, newfp);
			nf_en_rot_save(e, rot);
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
	grp = nf_en_rot_group(rot, name);
	action = grp >= 0 && grp <= json_integer_value(json_object_get(rot, "go"))
			 ? "switch" : "stage";
	if (!json_object_get(nrec, "staged")) {
		json_object_set_new(nrec, "staged", json_integer(now));
		nf_en_rot_save(e, rot);
	}
	{
		char *b64 = nf_b64_encode(blob, bloblen), *ab = NULL;
		uint8_t ap[32];

		if (b64 && !nf_en_rot_answer_proof(key, klen, name, nonce, action, b64, ap))
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
