/* SPDX-License-Identifier: MIT */
/* nodeforge keys rotate munge: drive a munge key rotation (a handler of
 * 'nodeforge keys', see cmd/keys.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cmd.h"
#include "keys.h"

static int count_done(const json_t *rot, const json_t *group, const char *what)
{
	const json_t *nodes = json_object_get(rot, "nodes");
	size_t i;
	json_t *n;
	int c = 0;

	json_array_foreach(group, i, n)
		if (json_object_get(json_object_get(nodes, json_string_value(n)),
				    what))
			c++;
	return c;
}

/* Wait until every node of `group` (or of every group: NULL) has `what`,
 * or `secs` pass; returns how many are missing */
static int wait_for(struct nf_global *g, struct nf_enroll *e, int group,
		    const char *what, long secs)
{
	for (long waited = 0;; waited += 100) {
		json_t *rot, *groups, *gr;
		size_t i;
		int missing = 0, r = nf_rotate_status(e, &rot);

		if (r)
			return nf_cmd_fail(g, "keys", r), -1;
		groups = json_object_get(rot, "groups");
		json_array_foreach(groups, i, gr)
			if (group < 0 || (size_t)group == i)
				missing += (int)json_array_size(gr) -
					   count_done(rot, gr, what);
		json_decref(rot);
		if (!missing || waited >= secs * 1000)
			return missing;
		usleep(100 * 1000);
	}
}

/* The plan as text or JSON; how many nodes have not switched (to the new
 * key, or back to the old one after an abort), -1 when it cannot be read */
static int report(struct nf_global *g, struct nf_enroll *e)
{
	struct nf_emit *em;
	json_t *rot, *gr, *n;
	size_t i, j;
	int late = 0, aborted, finished;
	int r = nf_rotate_status(e, &rot);

	if (r) {
		nf_cmd_fail(g, "keys", r);
		return -1;
	}
	if (nf_emit_new(&em, stdout, g->json)) {
		json_decref(rot);
		return -1;
	}
	aborted = json_is_true(json_object_get(rot, "aborted"));
	finished = json_is_true(json_object_get(rot, "finished"));
	/* an aborted plan has old and new swapped */
	nf_emit_str(em, "old_fingerprint", aborted ? "aborted the munge key "
		    "rotation to %s" : "rotated munge key %s",
		    json_string_value(json_object_get(rot, "old_fp")));
	nf_emit_str(em, "new_fingerprint", aborted ? ": back to %s\n" :
		    " -> %s\n", json_string_value(json_object_get(rot, "new_fp")));
	nf_emit_bool(em, "aborted", NULL, aborted);
	nf_emit_bool(em, "finished", NULL, finished);
	nf_emit_arr_open(em, "nodes");
	json_array_foreach(json_object_get(rot, "groups"), i, gr)
		json_array_foreach(gr, j, n) {
			const char *name = json_string_value(n);
			json_t *rec = json_object_get(json_object_get(rot, "nodes"),
						      name);
			int sw = json_object_get(rec, "switched") != NULL;

			late += !sw;
			nf_emit_obj_open(em, NULL);
			nf_emit_str(em, "node", "  %-20s", name);
			nf_emit_int(em, "group", " group %lld", (long long)i);
			nf_emit_bool(em, "staged", " staged: %s",
				     json_object_get(rec, "staged") != NULL);
			nf_emit_bool(em, "switched", " switched: %s\n", sw);
			nf_emit_obj_close(em);
		}
	nf_emit_arr_close(em);
	nf_emit_int(em, "not_switched", !late ? NULL : aborted ?
		    "%lld node(s) still hold the aborted key: they switch back "
		    "when they next poll ('nodeforge enroll rotate')\n" :
		    "%lld node(s) did not switch: they switch when they next "
		    "poll ('nodeforge enroll rotate')\n", late);
	if (finished && !aborted)
		nf_emit_text(em, "set secrets.munge_key.fingerprint to %s in the "
			     "site file and rebuild the images\n",
			     json_string_value(json_object_get(rot, "new_fp")));
	if (!finished)
		nf_emit_text(em, "the rotation is not finished: 'nodeforge keys "
			     "rotate munge --resume' continues it, '--abort' "
			     "undoes it\n");
	nf_emit_end(em);
	nf_emit_free(em);
	json_decref(rot);
	return late;
}

/* The plan's state: -1 none readable, else its `go`; *phase one of
 * "running", "finishing", "finished", "aborted" */
static long long plan_state(struct nf_global *g, struct nf_enroll *e,
			    const char **phase, size_t *ngroups)
{
	json_t *rot;
	long long go;
	int r = nf_rotate_status(e, &rot);

	if (r) {
		nf_cmd_fail(g, "keys", r);
		return -2;
	}
	*phase = json_is_true(json_object_get(rot, "aborted")) ? "aborted"
		 : json_is_true(json_object_get(rot, "finished")) ? "finished"
		 : json_is_true(json_object_get(rot, "finishing")) ? "finishing"
		 : "running";
	*ngroups = json_array_size(json_object_get(rot, "groups"));
	go = json_integer_value(json_object_get(rot, "go"));
	json_decref(rot);
	return go;
}

/* Abort (or complete an abort): back to the old key; waits up to secs for
 * the nodes that took the new key to switch back */
static int do_abort(struct nf_global *g, struct nf_enroll *e, long secs)
{
	int r = nf_rotate_abort(e), late;
	json_t *rot = NULL;

	if (r)
		return nf_cmd_fail(g, "keys", r);
	r = nf_rotate_status(e, &rot);
	json_decref(rot);
	if (r == NF_E_NOTFOUND) {
		/* nothing had been handed out: the plan is gone */
		struct nf_emit *em;

		if (nf_emit_new(&em, stdout, g->json))
			return NF_EXIT_FAILURE;
		nf_emit_bool(em, "aborted", NULL, 1);
		nf_emit_arr_open(em, "nodes");
		nf_emit_arr_close(em);
		nf_emit_text(em, "aborted the munge key rotation before its "
			     "key was handed out\n");
		nf_emit_end(em);
		nf_emit_free(em);
		return 0;
	}
	if (wait_for(g, e, -1, "switched", secs) < 0)
		return NF_EXIT_FAILURE;
	late = report(g, e);
	return late ? NF_EXIT_FAILURE : 0;
}

int nf_keys_rotate(struct nf_global *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "state", required_argument, NULL, 'd' },
		{ "enroll-state", required_argument, NULL, 'd' },
		{ "inventory", required_argument, NULL, 'i' },
		{ "stage-timeout", required_argument, NULL, 's' },
		{ "group-timeout", required_argument, NULL, 'g' },
		{ "status", no_argument, NULL, 'S' },
		{ "resume", no_argument, NULL, 'R' },
		{ "abort", no_argument, NULL, 'A' },
		{ 0 }
	};
	const char *state = NULL, *invpath = "racks.yaml", *what = NULL;
	const char *phase = NULL;
	struct nf_args args = { &what, 1 };
	long stage_to = 300, group_to = 120;
	struct nf_enroll *e = NULL;
	char fp[NF_FINGERPRINT_LEN];
	int status_only = 0, resume = 0, abort_ = 0, o, r, late;
	long long go;
	size_t ngroups = 0;

	optind = 1;
	while ((o = nf_getopt_args(&nf_cmd_keys, argc, argv, "i:", opts,
				   &args)) != -1) {
		switch (o) {
		case -2: return 0;
		case 'd': state = optarg; break;
		case 'i': invpath = optarg; break;
		case 's': stage_to = atol(optarg); break;
		case 'g': group_to = atol(optarg); break;
		case 'S': status_only = 1; break;
		case 'R': resume = 1; break;
		case 'A': abort_ = 1; break;
		default: return NF_EXIT_USAGE;
		}
	}
	if (!what || strcmp(what, "munge"))
		return nf_usage_error("keys", "rotate: only 'munge' keys rotate");
	if (stage_to < 0 || group_to < 0)
		return nf_usage_error("keys", "rotate: bad timeout");
	if (status_only + resume + abort_ > 1)
		return nf_usage_error("keys", "rotate: --status, --resume and "
				      "--abort exclude each other");
	if ((r = nf_cmd_setup(g, invpath)))
		return r;
	if ((r = nf_enroll_from_site(g->ctx, g->site, g->inv, state, NULL,
				     &e))) {
		r = nf_cmd_fail(g, "keys", r);
		goto out;
	}
	if (status_only) {
		r = report(g, e) < 0 ? NF_EXIT_FAILURE : 0;
		goto out;
	}
	if (abort_) {
		r = do_abort(g, e, group_to);
		goto out;
	}
	r = resume ? nf_rotate_resume(e, fp) : nf_rotate_begin(e, fp);
	if (r) {
		r = nf_cmd_fail(g, "keys", r);
		goto out;
	}
	if ((go = plan_state(g, e, &phase, &ngroups)) < -1) {
		r = NF_EXIT_FAILURE;
		goto out;
	}
	/* a resumed abort is completed as an abort */
	if (!strcmp(phase, "aborted")) {
		r = do_abort(g, e, group_to);
		goto out;
	}
	if (!strcmp(phase, "running")) {
		if (go < 0) {
			if (!g->quiet && !g->json)
				fprintf(stderr, "nodeforge keys: staging %s on "
					"the enrolled nodes\n", fp);
			if (wait_for(g, e, -1, "staged", stage_to) < 0) {
				r = NF_EXIT_FAILURE;
				goto out;
			}
		}
		for (size_t i = go < 0 ? 0 : (size_t)go; i < ngroups; i++) {
			if ((r = nf_rotate_go(e, (int)i))) {
				r = nf_cmd_fail(g, "keys", r);
				goto out;
			}
			if (wait_for(g, e, (int)i, "switched", group_to) < 0) {
				r = NF_EXIT_FAILURE;
				goto out;
			}
		}
	}
	if ((r = nf_rotate_finish(e))) {
		r = nf_cmd_fail(g, "keys", r);
		goto out;
	}
	late = report(g, e);
	r = late ? NF_EXIT_FAILURE : 0;
out:
	nf_enroll_free(e);
	return r;
}
