/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include "changes.h"
#include "cmd.h"

static int cmd_diff(struct nf_global *g, int argc, char **argv);

const struct nf_cmd nf_cmd_diff = {
	.name = "diff",
	.summary = "show what changed between two image manifests",
	.help = "usage: nodeforge diff A.manifest.json B.manifest.json\n"
		"\n"
		"List the entries added, removed or changed (content, mode, owner,\n"
		"type, symlink target, device number, xattrs) from image A to\n"
		"image B, one line per change, sorted by path.  --json for a\n"
		"machine-readable list.\n"
		"\n"
		"Exit status: 0 identical, 3 differences, 1 failure, 2 usage.\n",
	.run = cmd_diff,
};


void nf_emit_changes(struct nf_emit *e, const char *key, const json_t *list)
{
	size_t i;
	json_t *c;

	nf_emit_arr_open(e, key);
	json_array_foreach(list, i, c) {
		const json_t *x = json_object_get(c, "expected");
		const json_t *y = json_object_get(c, "seen");
		char *xs = x ? json_dumps(x, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
		char *ys = y ? json_dumps(y, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;

		nf_emit_obj_open(e, NULL);
		nf_emit_str(e, "change", "%-8s ",
			    json_string_value(json_object_get(c, "change")));
		nf_emit_ext(e, "path", "%s",
			    json_string_value(json_object_get(c, "path")));
		if (x && nf_emit_is_json(e))
			nf_emit_json(e, "expected", (json_t *)x);
		if (y && nf_emit_is_json(e))
			nf_emit_json(e, "seen", (json_t *)y);
		nf_emit_obj_close(e);
		if (xs && ys)
			nf_emit_text(e, ": %s -> %s", xs, ys);
		else if (xs || ys)
			nf_emit_text(e, " (%s)", xs ? xs : ys);
		nf_emit_text(e, "\n");
		free(xs);
		free(ys);
	}
	nf_emit_arr_close(e);
}

static int cmd_diff(struct nf_global *g, int argc, char **argv)
{
	json_t *a = NULL, *b = NULL, *changes = NULL;
	struct nf_emit *e = NULL;
	int o, r, rc;

	while ((o = nf_getopt(&nf_cmd_diff, argc, argv, "", NULL)) != -1)
		return o == -2 ? 0 : NF_EXIT_USAGE;
	if (argc - optind != 2)
		return nf_usage_error("diff", "need two manifests");
	if ((r = nf_manifest_load(g->ctx, argv[optind], &a)) ||
	    (r = nf_manifest_load(g->ctx, argv[optind + 1], &b))) {
		rc = nf_cmd_fail(g, "diff", r);
		goto out;
	}
	changes = json_array();
	if (!changes || (r = nf_manifest_diff(g->ctx, a, b, changes))) {
		rc = nf_cmd_fail(g, "diff", r ? r : -ENOMEM);
		goto out;
	}
	if (nf_emit_new(&e, stdout, g->json)) {
		rc = NF_EXIT_FAILURE;
		goto out;
	}
	nf_emit_changes(e, "changes", changes);
	nf_emit_int(e, "count", g->quiet ? NULL : "%lld changes\n",
		    (long long)json_array_size(changes));
	nf_emit_end(e);
	rc = json_array_size(changes) ? NF_EXIT_FINDINGS : NF_EXIT_OK;
out:
	nf_emit_free(e);
	json_decref(a);
	json_decref(b);
	json_decref(changes);
	return rc;
}
