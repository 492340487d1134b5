/* SPDX-License-Identifier: MIT */
/*
 * Munge key rotation, the node's side: nodeforge keys rotate-client polls
 * the server (lib/enroll_rotate_serve.c), checks its answer and stages or
 * switches the node's munge key.
 */
#include "enroll_int.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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
	     !nf_en_rot_answer_proof(key, klen, node, nonce, action, sealed, want) &&
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
	if (nf_en_rot_proof(key, klen, node, nonce, pub, proof))
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
