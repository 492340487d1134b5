/* SPDX-License-Identifier: MIT */
/* nodeforge image list|show|prune: the images a build published. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "cmd.h"

static int cmd_image(struct nf_global *g, int argc, char **argv);

const struct nf_cmd nf_cmd_image = {
	.name = "image",
	.summary = "list, show and prune the images a build published",
	.help = "usage: nodeforge image list [ROLE...] [--images DIR] [--tree DIR]...\n"
		"       nodeforge image show ROLE[@SHA]|MANIFEST [--images DIR] [--pubkey PUB]\n"
		"       nodeforge image prune [ROLE...] --keep N [--tree DIR]...\n"
		"                             [--images DIR] [--dry-run]\n"
		"\n"
		"A build publishes each image of a role as OUT/ROLE/ROLE-<id>.* (OUT:\n"
		"--images; id: the first 12 hex digits of the rootfs sha256) and\n"
		"points ROLE.current at the newest.  Without a ROLE, every role of OUT.\n"
		"\n"
		"list: one line per image, newest first: ROLE@ID, when it was built,\n"
		"its size, and 'current', 'booted' (a --tree names it), 'signed'.\n"
		"\n"
		"show: one image (the role's current one, ROLE@SHA with 12 to 64 hex\n"
		"digits, or its MANIFEST file): its files, its manifest's summary and\n"
		"its signature checked with PUB (default: OUT/signing.pub, the key the\n"
		"build put there).\n"
		"\n"
		"prune: remove every file of each image but the N newest of its role;\n"
		"the current image and every image a --tree names are never removed.\n"
		"It takes the build's lock on OUT/ROLE: it fails while a build of the\n"
		"role runs.\n"
		"\n"
		"      --images DIR   the build output (default: out; also -o, --out)\n"
		"  -t, --tree DIR     a boot tree 'nodeforge pxe --out' rendered; its\n"
		"                     images stay (repeat for several trees)\n"
		"  -k, --keep N       prune: images kept per role besides those\n"
		"  -n, --dry-run      prune: say what would go, remove nothing\n"
		"  -p, --pubkey PUB   show: the key the signature is checked with\n"
		"\n"
		"With --json: list and prune {\"images\": [{role, id, built, size,\n"
		"files, current, booted, signed, pruned}]}; show one such object with\n"
		"its manifest's summary and signature.\n"
		"\n"
		"Exit status: 0 ok, 1 failure (unreadable output, a bad signature, a\n"
		"build running), 2 usage error (an unknown role names the known ones).\n",
	.run = cmd_image,
};

#define MAX_ROLES 64
#define MAX_TREES 16

struct image_cli {
	const char *verb;
	const char *pos[MAX_ROLES + 1];
	size_t npos;
	const char *out;
	const char *trees[MAX_TREES];
	size_t ntrees;
	const char *keep;
	const char *pubkey;
	int dry_run;
};

/* ------------------------------------------------------------- render */

static void emit_time(struct nf_emit *e, const char *key, const char *fmt,
		      long long t)
{
	time_t tt = (time_t)t;
	struct tm tm;
	char buf[32] = "";

	if (gmtime_r(&tt, &tm))
		strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
	nf_emit_str(e, key, fmt, buf);
}

/* One image's fields; PRUNE: and whether it goes */
static void emit_image_fields(struct nf_emit *e, const struct nf_image *im,
			      int trees, int prune)
{
	char name[96];

	snprintf(name, sizeof(name), "%s@%s", im->role, im->id);
	if (prune)
		nf_emit_text(e, "%s ", im->pruned ? "remove" : "keep  ");
	nf_emit_text(e, "%-28s ", name);
	nf_emit_ext(e, "role", NULL, im->role);
	nf_emit_str(e, "id", NULL, im->id);
	emit_time(e, "built", "%s ", im->built);
	nf_emit_int(e, "size", NULL, (long long)im->size);
	nf_emit_text(e, "%8.1f MiB", (double)im->size / (1024.0 * 1024.0));
	nf_emit_arr_open(e, "files");
	for (size_t i = 0; i < im->nfiles; i++)
		nf_emit_ext(e, NULL, NULL, im->files[i]);
	nf_emit_arr_close(e);
	nf_emit_bool(e, "current", im->current ? "  current" : NULL,
		     im->current);
	if (trees)
		nf_emit_bool(e, "booted", im->booted ? "  booted" : NULL,
			     im->booted);
	nf_emit_bool(e, "signed", im->is_signed ? "  signed" : "  unsigned",
		     im->is_signed);
	if (prune)
		nf_emit_bool(e, "pruned", NULL, im->pruned);
	nf_emit_text(e, "\n");
}

static int emit_list(struct nf_global *g, const struct nf_images *l,
		     int trees, int prune)
{
	struct nf_emit *e;

	if (nf_emit_new(&e, stdout, g->json))
		return NF_EXIT_FAILURE;
	nf_emit_arr_open(e, "images");
	for (size_t i = 0; i < l->n; i++)
		if (!g->quiet || g->json) {
			nf_emit_obj_open(e, NULL);
			emit_image_fields(e, &l->v[i], trees, prune);
			nf_emit_obj_close(e);
		}
	nf_emit_arr_close(e);
	nf_emit_end(e);
	nf_emit_free(e);
	return 0;
}

/* -------------------------------------------------------------- roles */

/* The roles of OUT into ROLES; each role named must be one of them */
static int check_roles(struct nf_global *g, const struct image_cli *c,
		       char ***roles, size_t *n)
{
	char known[1024] = "";
	int r = nf_images_roles(g->ctx, c->out, roles, n);

	if (r)
		return nf_cmd_fail(g, "image", r);
	for (size_t i = 0; i < *n; i++)
		nf_cmd_known_add(known, sizeof(known), (*roles)[i]);
	for (size_t k = 0; k < c->npos; k++) {
		size_t i = 0;

		while (i < *n && strcmp((*roles)[i], c->pos[k]))
			i++;
		if (i == *n)
			return nf_usage_error("image", "no image of role '%s' in "
					      "'%s'; roles: %s", c->pos[k],
					      c->out, *known ? known : "none");
	}
	return 0;
}

/* The roles a verb works on: those named, else every role of OUT */
static size_t nroles(const struct image_cli *c, size_t n)
{
	return c->npos ? c->npos : n;
}

static const char *role_at(const struct image_cli *c, char **roles, size_t i)
{
	return c->npos ? c->pos[i] : roles[i];
}

/* --------------------------------------------------------------- verbs */

static int image_list(struct nf_global *g, const struct image_cli *c)
{
	struct nf_images l = { 0 };
	char **roles = NULL;
	size_t n = 0;
	int r = 0, rc;

	if ((rc = check_roles(g, c, &roles, &n)))
		goto out;
	for (size_t i = 0; i < nroles(c, n) && !r; i++)
		r = nf_images_scan(g->ctx, c->out, role_at(c, roles, i), &l);
	for (size_t i = 0; i < c->ntrees && !r; i++)
		r = nf_images_mark_booted(g->ctx, &l, c->trees[i]);
	rc = r ? nf_cmd_fail(g, "image", r) : emit_list(g, &l, c->ntrees > 0, 0);
out:
	nf_images_free(&l);
	nf_strv_free(roles, n);
	return rc;
}

static int image_prune(struct nf_global *g, const struct image_cli *c)
{
	struct nf_image_prune_opts o = { .trees = c->trees, .ntrees = c->ntrees,
					 .dry_run = c->dry_run };
	struct nf_images l = { 0 };
	char **roles = NULL, *end;
	size_t n = 0;
	long keep;
	int r = 0, rc;

	if (!c->keep)
		return nf_usage_error("image", "prune needs --keep N (the newest "
				      "images kept per role)");
	errno = 0;
	keep = strtol(c->keep, &end, 10);
	if (errno || *end || end == c->keep || keep < 0 || keep > 100000)
		return nf_usage_error("image", "--keep '%s' is not a number of "
				      "images (0 to 100000)", c->keep);
	o.keep = (size_t)keep;
	if ((rc = check_roles(g, c, &roles, &n)))
		goto out;
	for (size_t i = 0; i < nroles(c, n) && !r; i++)
		r = nf_images_prune(g->ctx, c->out, role_at(c, roles, i), &o, &l);
	/* what was removed before a failure is still said */
	rc = emit_list(g, &l, c->ntrees > 0, 1);
	if (r)
		rc = nf_cmd_fail(g, "image", r);
out:
	nf_images_free(&l);
	nf_strv_free(roles, n);
	return rc;
}

/* ---------------------------------------------------------------- show */

static void emit_manifest(struct nf_emit *e, const json_t *m)
{
	const json_t *a = json_object_get(m, "archive"), *en;
	long long files = 0, dirs = 0, links = 0, other = 0;
	size_t i;

	json_array_foreach(json_object_get(m, "entries"), i, en) {
		const char *t = json_string_value(json_object_get(en, "type"));

		if (t && !strcmp(t, "file"))
			files++;
		else if (t && !strcmp(t, "dir"))
			dirs++;
		else if (t && !strcmp(t, "symlink"))
			links++;
		else
			other++;
	}
	nf_emit_obj_open(e, "manifest");
	nf_emit_ext(e, "archive", "archive:    %s\n",
		    json_string_value(json_object_get(a, "name")) ?: "");
	nf_emit_ext(e, "sha256", "sha256:     %s\n",
		    json_string_value(json_object_get(a, "sha256")) ?: "");
	nf_emit_int(e, "archive_size", "bytes:      %lld\n",
		    (long long)json_integer_value(json_object_get(a, "size")));
	nf_emit_ext(e, "format", "format:     %s",
		    json_string_value(json_object_get(m, "format")) ?: "");
	nf_emit_ext(e, "compressor", ", %s\n",
		    json_string_value(json_object_get(m, "compressor")) ?: "");
	emit_time(e, "epoch", "epoch:      %s (file times)\n",
		  json_integer_value(json_object_get(m, "epoch")));
	nf_emit_ext(e, "nodeforge_version", "nodeforge:  %s",
		    json_string_value(json_object_get(m, "nodeforge_version")) ?: "");
	nf_emit_ext(e, "nodeforge_commit", " (%s)\n",
		    json_string_value(json_object_get(m, "nodeforge_commit")) ?: "");
	nf_emit_int(e, "entries", "entries:    %lld", (long long)i);
	nf_emit_int(e, "files", " (%lld files", files);
	nf_emit_int(e, "dirs", ", %lld directories", dirs);
	nf_emit_int(e, "symlinks", ", %lld symlinks", links);
	nf_emit_int(e, "other", ", %lld other)\n", other);
	nf_emit_obj_close(e);
}

/* The signature: checked when the key is there, else only said */
static int emit_signature(struct nf_global *g, struct nf_emit *e,
			  const char *manifest, const char *pub, int is_signed)
{
	int r;

	if (!is_signed) {
		nf_emit_str(e, "signature", "signature:  %s\n", "none");
		return 0;
	}
	if (access(pub, R_OK) != 0) {
		nf_emit_str(e, "signature", "signature:  %s", "not checked");
		nf_emit_text(e, " (no key '%s'; --pubkey PUB)\n", pub);
		return 0;
	}
	r = nf_manifest_verify(g->ctx, manifest, pub);
	nf_emit_str(e, "signature", "signature:  %s", r ? "bad" : "verified");
	nf_emit_ext(e, "pubkey", " with %s", pub);
	if (r) {
		nf_emit_ext(e, "error", ": %s", nf_error_text(g->ctx, r));
	}
	nf_emit_text(e, "\n");
	return r ? NF_EXIT_FAILURE : 0;
}

/* WHAT as the output directory, the role and the hex digits asked for
 * ("": the current image): ROLE, ROLE@SHA, or OUT/ROLE/ROLE-<id>.manifest.json */
static int parse_ref(const char *what, const char *out_opt, char *out,
		     char *role, char *sha)
{
	const char *at = strchr(what, '@'), *base = strrchr(what, '/');
	char *slash;
	size_t sl;

	snprintf(out, PATH_MAX, "%s", out_opt);
	if (!at && strstr(what, ".manifest.json")) {
		/* OUT/ROLE/ROLE-<id>.manifest.json */
		snprintf(out, PATH_MAX, "%.*s", base ? (int)(base - what) : 0, what);
		slash = strrchr(out, '/');
		snprintf(role, 256, "%s", slash ? slash + 1 : out);
		if (slash)
			*slash = '\0';
		else
			snprintf(out, PATH_MAX, ".");
		if (!*role || !nf_image_file_id(role, base ? base + 1 : what, sha))
			return nf_usage_error("image", "'%s' is not a published "
					      "image's manifest (OUT/ROLE/ROLE-"
					      "<id>.manifest.json)", what);
		return 0;
	}
	snprintf(role, 256, "%.*s", at ? (int)(at - what) : (int)strlen(what),
		 what);
	snprintf(sha, 72, "%s", at ? at + 1 : "");
	sl = strlen(sha);
	if (at && (sl < 12 || sl > 64 || strspn(sha, "0123456789abcdef") != sl))
		return nf_usage_error("image", "invalid image '%s': ROLE@SHA with "
				      "12 to 64 lower-case hex digits", what);
	return 0;
}

/* The image SHA names among L (ROLE's): its id is SHA's first 12 digits
 * and, SHA longer, its rootfs sha256 starts with SHA; "": the current */
static const struct nf_image *pick(const struct nf_images *l, const char *sha)
{
	for (size_t i = 0; i < l->n; i++)
		if (*sha ? !strncmp(l->v[i].id, sha, 12) : l->v[i].current)
			return &l->v[i];
	return NULL;
}

/* The rootfs sha256 the manifest records starts with SHA */
static int sha_matches(const json_t *m, const char *sha)
{
	const char *h = json_string_value(json_object_get(
		json_object_get(m, "archive"), "sha256"));

	return h && !strncmp(h, sha, strlen(sha));
}

static int show_one(struct nf_global *g, const struct image_cli *c,
		    const char *out, const struct nf_image *im, const json_t *m,
		    const char *mpath)
{
	char pub[PATH_MAX + 16];
	struct nf_emit *e;
	int rc;

	snprintf(pub, sizeof(pub), "%s", c->pubkey ? c->pubkey : out);
	if (!c->pubkey)
		strcat(pub, "/signing.pub");
	if (nf_emit_new(&e, stdout, g->json))
		return NF_EXIT_FAILURE;
	nf_emit_text(e, "image:      ");
	emit_image_fields(e, im, 0, 0);
	emit_manifest(e, m);
	rc = emit_signature(g, e, mpath, pub, im->is_signed);
	nf_emit_end(e);
	nf_emit_free(e);
	return rc;
}

static int image_show(struct nf_global *g, const struct image_cli *c)
{
	char out[PATH_MAX], role[256], sha[72], mpath[PATH_MAX + 400];
	const struct nf_image *im;
	struct nf_images l = { 0 };
	json_t *m = NULL;
	int r, rc;

	if (c->npos != 1)
		return nf_usage_error("image", "show takes one image: ROLE, "
				      "ROLE@SHA or a MANIFEST");
	if ((rc = parse_ref(c->pos[0], c->out, out, role, sha)))
		return rc;
	if ((r = nf_images_scan(g->ctx, out, role, &l))) {
		rc = nf_cmd_fail(g, "image", r);
		goto done;
	}
	if (!(im = pick(&l, sha))) {
		fprintf(stderr, "nodeforge image: %s '%s' in '%s/%s'\n",
			*sha ? "no image" : "no current image of role",
			*sha ? c->pos[0] : role, out, role);
		rc = NF_EXIT_FAILURE;
		goto done;
	}
	snprintf(mpath, sizeof(mpath), "%s/%s/%s-%s.manifest.json", out, role, role,
		 im->id);
	if ((r = nf_manifest_load(g->ctx, mpath, &m))) {
		rc = nf_cmd_fail(g, "image", r);
		goto done;
	}
	if (!sha_matches(m, sha)) {
		fprintf(stderr, "nodeforge image: no image '%s' in '%s/%s'\n",
			c->pos[0], out, role);
		rc = NF_EXIT_FAILURE;
		goto done;
	}
	rc = show_one(g, c, out, im, m, mpath);
done:
	json_decref(m);
	nf_images_free(&l);
	return rc;
}

/* ------------------------------------------------------------- options */

static int parse(int argc, char **argv, struct image_cli *c)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "images", required_argument, NULL, 'o' },
		{ "out", required_argument, NULL, 'o' },
		{ "tree", required_argument, NULL, 't' },
		{ "keep", required_argument, NULL, 'k' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "pubkey", required_argument, NULL, 'p' },
		{ 0 }
	};
	struct nf_args a = { .v = c->pos, .max = MAX_ROLES + 1 };
	int o;

	while ((o = nf_getopt_args(&nf_cmd_image, argc, argv, "o:t:k:np:",
				   opts, &a)) != -1) {
		if (o == -2)
			return -1;
		if (o == 'o')
			c->out = optarg;
		else if (o == 't' && c->ntrees < MAX_TREES)
			c->trees[c->ntrees++] = optarg;
		else if (o == 't')
			return nf_usage_error("image", "at most %d --tree",
					      MAX_TREES);
		else if (o == 'k')
			c->keep = optarg;
		else if (o == 'n')
			c->dry_run = 1;
		else if (o == 'p')
			c->pubkey = optarg;
		else
			return NF_EXIT_USAGE;
	}
	if (!a.n)
		return nf_usage_error("image", "which subcommand? list, show or "
				      "prune");
	c->verb = c->pos[0];
	memmove(c->pos, c->pos + 1, --a.n * sizeof(*c->pos));
	c->npos = a.n;
	return 0;
}

/* An option its subcommand does not take is a usage error */
static int check_opts(const struct image_cli *c)
{
	int prune = !strcmp(c->verb, "prune"), show = !strcmp(c->verb, "show");

	if (!prune && (c->keep || c->dry_run))
		return nf_usage_error("image", "--keep and --dry-run are prune's");
	if (!show && c->pubkey)
		return nf_usage_error("image", "--pubkey is show's");
	if (show && c->ntrees)
		return nf_usage_error("image", "--tree is list's and prune's");
	return 0;
}

static int cmd_image(struct nf_global *g, int argc, char **argv)
{
	struct image_cli c = { .out = "out" };
	int rc = parse(argc, argv, &c);

	if (rc)
		return rc < 0 ? 0 : rc;
	if (strcmp(c.verb, "list") && strcmp(c.verb, "show") &&
	    strcmp(c.verb, "prune"))
		return nf_usage_error("image", "unknown subcommand '%s' (list, "
				      "show or prune)", c.verb);
	if ((rc = check_opts(&c)))
		return rc;
	/* show's MANIFEST names its own output directory */
	if (strcmp(c.verb, "show") &&
	    nf_cmd_path_arg("image", "--images", c.out, 0))
		return NF_EXIT_FAILURE;
	for (size_t i = 0; i < c.ntrees; i++)
		if (nf_cmd_path_arg("image", "--tree", c.trees[i], 0))
			return NF_EXIT_FAILURE;
	if (!strcmp(c.verb, "list"))
		return image_list(g, &c);
	if (!strcmp(c.verb, "prune"))
		return image_prune(g, &c);
	return image_show(g, &c);
}
