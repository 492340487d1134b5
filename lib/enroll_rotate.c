/* SPDX-License-Identifier: MIT */
/*
 * Munge key rotation, the plan: the state file and its driver (begin, go,
 * finish, resume, abort).  The server's answers to nodes are in
 * lib/enroll_rotate_serve.c, the node's poll in lib/enroll_rotate_node.c.
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

int nf_en_rot_load(struct nf_enroll *e, json_t **out)
{
	char *p = nf_asprintf("%s/%s", e->dir, ROTATE_FILE), *buf;
	json_t *j;
	size_t len;
	int r;

	if (!p)
		return -ENOMEM;
	r = nf_read_optional(e->ctx, p, STATE_MAX, &buf, &len);
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

int nf_en_rot_save(struct nf_enroll *e, json_t *j)
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

static const char *rot_str(const json_t *rot, const char *key)
{
	return json_string_value(json_object_get(rot, key));
}

/* The index of the group the plan puts node `name` in; -1 when none */
int nf_en_rot_group(const json_t *rot, const char *name)
{
	size_t i, j;
	json_t *g, *n;

	json_array_foreach(json_object_get(rot, "groups"), i, g)
		json_array_foreach(g, j, n)
			if (!strcmp(json_string_value(n), name))
				return (int)i;
	return -1;
}

/* *is: whether the key at path has fingerprint fp (0 when it is absent) */
static int key_is(struct nf_enroll *e, const char *path, const char *fp,
		  int *is)
{
	char got[NF_FINGERPRINT_LEN];
	unsigned m = nf_err_mark(e->ctx);
	int r;

	*is = 0;
	if (!path || !fp)
		return 0;
	r = nf_munge_fingerprint_file(e->ctx, path, got);
	if (r == -ENOENT) {
		nf_err_drop(e->ctx, m);
		return 0;
	}
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
int nf_en_rot_old_key(struct nf_enroll *e, const json_t *rot,
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
	if ((r = nf_en_rot_save(e, rot)))
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
	if ((r = nf_en_rot_save(e, rot)))
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
		if (!(r = nf_en_rot_save(e, rot)))
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
		if ((r = nf_en_rot_save(e, rot)))
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
	if ((r = nf_en_rot_save(e, rot)))
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
			if (!sw && nf_en_rot_group(rot, name) > go)
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
		if ((r = nf_en_rot_save(e, rot)))
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
		if ((r = nf_en_rot_save(e, rot)))
			goto out;
		crash_point("abort-done");
	}
out:
	free(prev);
	json_decref(rot);
	nf_en_unlock(fd);
	return r;
}
