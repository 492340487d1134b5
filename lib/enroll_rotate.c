/* SPDX-License-Identifier: MIT */
/*
 * Munge key rotation: the server's plan and answers, and the node's poll.
 */
#include "enroll_int.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
 * in flight only while one group restarts munged.
 *
 * Every write is atomic and ordered so that a driver stopped anywhere
 * leaves a plan that nf_rotate_resume and nf_rotate_finish (or
 * nf_rotate_abort) complete: begin records the plan before it makes the
 * next key and its fingerprint (new_fp) only after; finish and abort keep
 * each key in a file of its own (old_path, new_path) until the plan says
 * finished.  An aborted plan has old and new swapped and `aborted` set. */

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

/* A test hook: NODEFORGE_TEST_CRASH_AT=NAME makes the process SIGKILL
 * itself right after the write of that name (begin-plan, begin-key,
 * begin-ready, go, finish-previous, finish-plan, finish-key, finish-done,
 * finish-cleanup, abort-plan, abort-key, abort-done), so the tests can
 * show that every later run completes from what such a crash leaves */
static void crash_point(const char *name)
{
	const char *at = getenv("NODEFORGE_TEST_CRASH_AT");

	if (at && !strcmp(at, name))
		raise(SIGKILL);
}

static int group_of(const json_t *rot, const char *name);

static const char *rot_str(const json_t *rot, const char *key)
{
	return json_string_value(json_object_get(rot, key));
}

/* *is: whether the key at path has fingerprint fp (0 when it is absent) */
static int key_is(struct nf_enroll *e, const char *path, const char *fp,
		  int *is)
{
	char got[NF_FINGERPRINT_LEN];
	int r;

	*is = 0;
	if (!path || !fp)
		return 0;
	r = nf_munge_fingerprint_file(e->ctx, path, got);
	if (r == -ENOENT)
		return 0;
	if (!r)
		*is = !strcmp(got, fp);
	return r;
}

/* Copy the key at `from` (which must have fingerprint fp) over `to`,
 * keeping the owner and mode of `to` */
static int key_copy(struct nf_enroll *e, const char *from, const char *fp,
		    const char *to)
{
	char got[NF_FINGERPRINT_LEN];
	uint8_t *k;
	size_t kl;
	int r;

	if ((r = nf_secret_read(e->ctx, from, NF_MUNGE_KEY_MAX, &k, &kl)))
		return r;
	nf_fingerprint(k, kl, got);
	if (strcmp(got, fp))
		r = nf_fail(e->ctx, NF_E_CHECKSUM,
			    "'%s' holds key %s, not %s: not copied to '%s'",
			    from, got, fp, to);
	else if (!(r = nf_secret_replace(e->ctx, to, k, kl, 0400)))
		r = nf_en_own(e, to, -1);
	nf_wipe_free(k, kl + 1);
	return r;
}

/* The old key, for a node's proof: this server's own key when it is
 * the old one (under nodeforge-serve.service, the credential systemd
 * copied at start: the file on disk, the plan's old_path, is root's),
 * else the plan's old_path */
static int old_key_read(struct nf_enroll *e, const json_t *rot,
			const char *oldfp, uint8_t **key, size_t *klen)
{
	char got[NF_FINGERPRINT_LEN];

	if (e->munge_key &&
	    !nf_secret_read(e->ctx, e->munge_key, NF_MUNGE_KEY_MAX, key, klen)) {
		nf_fingerprint(*key, *klen, got);
		if (!strcmp(got, oldfp))
			return 0;
		nf_wipe_free(*key, *klen + 1);
		*key = NULL;
	}
	return nf_secret_read(e->ctx, json_string_value(json_object_get(
			      rot, "old_path")), NF_MUNGE_KEY_MAX, key, klen);
}

static char *state_path(struct nf_enroll *e, const char *leaf)
{
	return nf_asprintf("%s/%s", e->dir, leaf);
}

/* The second half of begin: the next key, then its fingerprint in the plan
 * (a plan without new_fp hands nothing out: a crash before it is redone) */
static int begin_key(struct nf_enroll *e, json_t *rot,
		     char fp[NF_FINGERPRINT_LEN])
{
	const char *next = rot_str(rot, "new_path");
	int r;

	if (!next)
		return nf_fail(e->ctx, NF_E_PARSE, "the rotation plan in '%s' "
			       "has no new_path", e->dir);
	if (unlink(next) < 0 && errno != ENOENT)
		return nf_fail(e->ctx, -errno, "cannot remove '%s': %s", next,
			       strerror(errno));
	if ((r = nf_munge_key_new(e->ctx, next, NULL, fp)) ||
	    (r = nf_en_own(e, next, -1)))
		return r;
	crash_point("begin-key");
	json_object_set_new(rot, "new_fp", json_string(fp));
	if ((r = rot_save(e, rot)))
		return r;
	crash_point("begin-ready");
	return 0;
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
		const char *nfp = rot_str(rot, "new_fp");

		r = nf_fail(e->ctx, -EBUSY,
			    "a munge key rotation is already in progress (%s): "
			    "continue it with 'nodeforge keys rotate munge "
			    "--resume' or undo it with 'nodeforge keys rotate "
			    "munge --abort'", nfp ? nfp : "no new key yet");
		goto out;
	}
	if ((r = nf_en_state_load(e, &st)))
		goto out;
	if ((r = nf_munge_fingerprint_file(e->ctx, e->munge_key, oldfp)))
		goto out;
	if (!(next = state_path(e, "munge.key.next"))) {
		r = -ENOMEM;
		goto out;
	}
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
	/* the intent first, without the new key's fingerprint */
	rot = json_pack("{s:i,s:s,s:s,s:s,s:o,s:i,s:b,s:o,s:I}", "version",
			1, "old_fp", oldfp, "old_path", e->munge_key,
			"new_path", next, "groups", groups, "go", -1,
			"finished", 0, "nodes", nodes, "started",
			(json_int_t)now_of(e));
	if (!rot) {
		r = -ENOMEM;
		goto out;
	}
	if ((r = rot_save(e, rot)))
		goto out;
	crash_point("begin-plan");
	r = begin_key(e, rot, fp);
out:
	free(v);
	free(next);
	json_decref(st);
	json_decref(rot);
	nf_en_unlock(fd);
	return r;
}

int nf_rotate_resume(struct nf_enroll *e, char fp[NF_FINGERPRINT_LEN])
{
	json_t *rot = NULL;
	const char *nfp;
	int fd = nf_en_lock(e), r;

	if (fd < 0)
		return fd;
	if (!(r = nf_en_rot_load(e, &rot)) && !rot)
		r = nf_fail(e->ctx, NF_E_NOTFOUND,
			    "no munge key rotation to resume in '%s'", e->dir);
	if (!r) {
		if ((nfp = rot_str(rot, "new_fp")))
			snprintf(fp, NF_FINGERPRINT_LEN, "%s", nfp);
		else
			r = begin_key(e, rot, fp);
	}
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
	if (!(r = nf_en_rot_load(e, &rot)) &&
	    (!rot || !rot_str(rot, "new_fp")))
		r = nf_fail(e->ctx, NF_E_NOTFOUND, "no munge key rotation");
	if (!r) {
		json_object_set_new(rot, "go", json_integer(group));
		if (!(r = rot_save(e, rot)))
			crash_point("go");
	}
	json_decref(rot);
	nf_en_unlock(fd);
	return r;
}

/* The new key becomes the server's key; the old one is kept (0400) in the
 * state dir to answer stragglers, which present it as proof.  Each step
 * checks what the one before left, so a run stopped anywhere is completed
 * by the next: the old key is copied out (never over a copy that already
 * holds it), the plan points at the copy, the server's key is replaced
 * (owner and mode kept), the plan is marked finished, the next key's file
 * goes.  Until the plan says finished both keys are read from their own
 * files, so no node is refused in between. */
int nf_rotate_finish(struct nf_enroll *e)
{
	json_t *rot = NULL;
	char *prev = NULL, *next = NULL;
	const char *np, *oldfp, *newfp;
	int fd = nf_en_lock(e), r, is;

	if (fd < 0)
		return fd;
	if (!(r = nf_en_rot_load(e, &rot)) && !rot)
		r = nf_fail(e->ctx, NF_E_NOTFOUND, "no munge key rotation");
	if (r)
		goto out;
	np = rot_str(rot, "new_path");
	oldfp = rot_str(rot, "old_fp");
	newfp = rot_str(rot, "new_fp");
	if (json_is_true(json_object_get(rot, "aborted"))) {
		r = nf_fail(e->ctx, -EINVAL, "the munge key rotation was "
			    "aborted: nothing to finish");
		goto out;
	}
	if (!np || !oldfp || !newfp) {
		r = nf_fail(e->ctx, NF_E_NOTFOUND, "the munge key rotation has "
			    "no new key yet: run 'nodeforge keys rotate munge "
			    "--resume'");
		goto out;
	}
	prev = state_path(e, "munge.key.previous");
	next = state_path(e, "munge.key.next");
	if (!prev || !next) {
		r = -ENOMEM;
		goto out;
	}
	if (json_is_true(json_object_get(rot, "finished")))
		goto cleanup;
	if ((r = key_is(e, prev, oldfp, &is)))
		goto out;
	if (!is) {
		if ((r = key_is(e, e->munge_key, oldfp, &is)))
			goto out;
		if (!is) {
			r = nf_fail(e->ctx, NF_E_CHECKSUM,
				    "neither '%s' nor '%s' holds the old munge "
				    "key %s: cannot finish the rotation",
				    e->munge_key, prev, oldfp);
			goto out;
		}
		if ((r = unlink(prev) < 0 && errno != ENOENT ? -errno : 0) ||
		    (r = key_copy(e, e->munge_key, oldfp, prev)))
			goto out;
		crash_point("finish-previous");
	}
	if (!json_is_true(json_object_get(rot, "finishing"))) {
		json_object_set_new(rot, "old_path", json_string(prev));
		json_object_set_new(rot, "finishing", json_true());
		if ((r = rot_save(e, rot)))
			goto out;
		crash_point("finish-plan");
	}
	if ((r = key_is(e, e->munge_key, newfp, &is)))
		goto out;
	if (!is) {
		if ((r = key_copy(e, np, newfp, e->munge_key)))
			goto out;
		crash_point("finish-key");
	}
	json_object_del(rot, "finishing");
	json_object_set_new(rot, "old_path", json_string(prev));
	json_object_set_new(rot, "new_path", json_string(e->munge_key));
	json_object_set_new(rot, "finished", json_true());
	json_object_set_new(rot, "go", json_integer(INT32_MAX));
	if ((r = rot_save(e, rot)))
		goto out;
	crash_point("finish-done");
cleanup:
	if (strcmp(next, e->munge_key) && unlink(next) == 0)
		crash_point("finish-cleanup");
out:
	free(prev);
	free(next);
	json_decref(rot);
	nf_en_unlock(fd);
	return r;
}

/* Abort: the plan turns around (old and new swapped, every group may
 * switch), so nodes that took the new key are handed the old one again
 * on their next poll, proving the new one; then the server's key is the
 * old one again.  Nodes of groups never let switch are known to hold the
 * old key and count as back at once. */
int nf_rotate_abort(struct nf_enroll *e)
{
	json_t *rot = NULL, *nodes, *rec;
	char *prev = NULL;
	const char *oldfp, *newfp, *np, *name, *held;
	int fd = nf_en_lock(e), r, is;

	if (fd < 0)
		return fd;
	if (!(r = nf_en_rot_load(e, &rot)) && !rot)
		r = nf_fail(e->ctx, NF_E_NOTFOUND,
			    "no munge key rotation to abort in '%s'", e->dir);
	if (r)
		goto out;
	oldfp = rot_str(rot, "old_fp");
	newfp = rot_str(rot, "new_fp");
	np = rot_str(rot, "new_path");
	if (!json_is_true(json_object_get(rot, "aborted")) &&
	    json_is_true(json_object_get(rot, "finished"))) {
		r = nf_fail(e->ctx, -EINVAL, "the munge key rotation to %s is "
			    "finished: nothing to abort (rotate again to change "
			    "the key)", newfp ? newfp : "?");
		goto out;
	}
	if (!newfp) {
		/* nothing was handed out: the plan and its key go */
		char *p = state_path(e, ROTATE_FILE);

		if (np)
			unlink(np);
		r = !p ? -ENOMEM : unlink(p) < 0 && errno != ENOENT
			? nf_fail(e->ctx, -errno, "cannot remove '%s': %s", p,
				  strerror(errno)) : 0;
		free(p);
		goto out;
	}
	if (!(prev = state_path(e, "munge.key.previous"))) {
		r = -ENOMEM;
		goto out;
	}
	if (!json_is_true(json_object_get(rot, "aborted"))) {
		long long go = json_integer_value(json_object_get(rot, "go"));
		const char *keep_old = NULL;
		json_t *v;

		if ((r = key_is(e, e->munge_key, oldfp, &is)))
			goto out;
		if (is) {
			keep_old = e->munge_key;
		} else {
			if ((r = key_is(e, prev, oldfp, &is)))
				goto out;
			keep_old = is ? prev : NULL;
		}
		if (!keep_old || !np) {
			r = nf_fail(e->ctx, NF_E_CHECKSUM,
				    "neither '%s' nor '%s' holds the old munge "
				    "key %s: cannot abort the rotation",
				    e->munge_key, prev, oldfp);
			goto out;
		}
		nodes = json_object_get(rot, "nodes");
		json_object_foreach(nodes, name, v) {
			int sw = json_object_get(v, "switched") != NULL;

			rec = json_object();
			if (!sw && group_of(rot, name) > go)
				json_object_set_new(rec, "switched",
						    json_integer(now_of(e)));
			json_object_set_new(nodes, name, rec);
		}
		/* the strings swapped belong to rot: new ones first */
		v = json_pack("{s:s,s:s,s:s,s:s}", "old_fp", newfp, "new_fp",
			      oldfp, "old_path", np, "new_path", keep_old);
		if (!v || json_object_update(rot, v)) {
			json_decref(v);
			r = -ENOMEM;
			goto out;
		}
		json_decref(v);
		json_object_set_new(rot, "go", json_integer(INT32_MAX));
		json_object_set_new(rot, "aborted", json_true());
		json_object_set_new(rot, "finished", json_false());
		json_object_del(rot, "finishing");
		if ((r = rot_save(e, rot)))
			goto out;
		crash_point("abort-plan");
	}
	/* after the swap: new_fp is the key the site goes back to */
	newfp = rot_str(rot, "new_fp");
	held = rot_str(rot, "new_path");
	if ((r = key_is(e, e->munge_key, newfp, &is)))
		goto out;
	if (!is) {
		if ((r = key_copy(e, held, newfp, e->munge_key)))
			goto out;
		crash_point("abort-key");
	}
	if (!json_is_true(json_object_get(rot, "finished"))) {
		json_object_set_new(rot, "new_path", json_string(e->munge_key));
		json_object_set_new(rot, "finished", json_true());
		if ((r = rot_save(e, rot)))
			goto out;
		crash_point("abort-done");
	}
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
		      : old_key_read(e, rot, oldfp, &key, &klen);
	if (r || rotate_proof(key, klen, name, nonce, pub, want) ||
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
