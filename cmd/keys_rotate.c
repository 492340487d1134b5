/* SPDX-License-Identifier: MIT */
/* nodeforge keys rotate munge: drive a munge key rotation (a handler of
 * 'nodeforge keys', see cmd/keys.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

static void report(struct nf_global *g, struct nf_enroll *e)
{
	struct nf_emit *em;
	json_t *rot, *gr, *n;
	size_t i, j;
	int late = 0;

	if (nf_rotate_status(e, &rot) || nf_emit_new(&em, stdout, g->json))
		return;
	nf_emit_str(em, "old_fingerprint", "rotated munge key %s",
		    json_string_value(json_object_get(rot, "old_fp")));
	nf_emit_str(em, "new_fingerprint", " -> %s\n",
		    json_string_value(json_object_get(rot, "new_fp")));
	nf_emit_bool(em, "finished", NULL,
		     json_is_true(json_object_get(rot, "finished")));
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
	nf_emit_int(em, "not_switched", late ? "%lld node(s) did not switch: "
		    "they switch when they next poll ('nodeforge enroll rotate')\n"
		    : NULL, late);
	if (json_is_true(json_object_get(rot, "finished")))
		nf_emit_text(em, "set secrets.munge_key.fingerprint to %s in the "
			     "site file and rebuild the images\n",
			     json_string_value(json_object_get(rot, "new_fp")));
	nf_emit_end(em);
	nf_emit_free(em);
	json_decref(rot);
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
		{ 0 }
	};
	const char *state = NULL, *invpath = "racks.yaml", *what = NULL;
	struct nf_args args = { &what, 1 };
	long stage_to = 300, group_to = 120;
	struct nf_inventory *inv = NULL;
	struct nf_enroll *e = NULL;
	char fp[NF_FINGERPRINT_LEN];
	int status_only = 0, o, r, late = 0;
	json_t *rot;
	size_t ngroups;

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
		default: return NF_EXIT_USAGE;
		}
	}
	if (!what || strcmp(what, "munge"))
		return nf_usage_error("keys", "rotate: only 'munge' keys rotate");
	if (stage_to < 0 || group_to < 0)
		return nf_usage_error("keys", "rotate: bad timeout");
	if ((r = nf_cmd_site_optional(g, "keys")))
		return r;
	if ((r = nf_cmd_inventory_load(g, "keys", invpath, &inv)))
		return r;
	if ((r = nf_enroll_from_site(g->ctx, g->site, inv, state, NULL, &e))) {
		r = nf_cmd_fail(g, "keys", r);
		goto out;
	}
	if (status_only) {
		if ((r = nf_rotate_status(e, &rot))) {
			r = nf_cmd_fail(g, "keys", r);
			goto out;
		}
		json_decref(rot);
		report(g, e);
		goto out;
	}
	if ((r = nf_rotate_begin(e, fp))) {
		r = nf_cmd_fail(g, "keys", r);
		goto out;
	}
	if (!g->quiet && !g->json)
		fprintf(stderr, "nodeforge keys: staging %s on the enrolled nodes\n",
			fp);
	if (wait_for(g, e, -1, "staged", stage_to) < 0) {
		r = NF_EXIT_FAILURE;
		goto out;
	}
	if ((r = nf_rotate_status(e, &rot))) {
		r = nf_cmd_fail(g, "keys", r);
		goto out;
	}
	ngroups = json_array_size(json_object_get(rot, "groups"));
	json_decref(rot);
	for (size_t i = 0; i < ngroups; i++) {
		int missing;

		if ((r = nf_rotate_go(e, (int)i))) {
			r = nf_cmd_fail(g, "keys", r);
			goto out;
		}
		missing = wait_for(g, e, (int)i, "switched", group_to);
		if (missing < 0) {
			r = NF_EXIT_FAILURE;
			goto out;
		}
		late += missing;
	}
	if ((r = nf_rotate_finish(e))) {
		r = nf_cmd_fail(g, "keys", r);
		goto out;
	}
	report(g, e);
	r = late ? NF_EXIT_FAILURE : 0;
out:
	nf_enroll_free(e);
	nf_inventory_free(inv);
	return r;
}
