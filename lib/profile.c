/* SPDX-License-Identifier: MIT */
/*
 * Role profiles: loading, inheritance and the resolved profile.  How a
 * profile merges into what it inherits: lib/profile_merge.c.
 *
 * Kernel arguments with the same key and different values are an error,
 * wherever they come from: remove the inherited one first.
 */
#include "profile_int.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define NF_INHERIT_DEPTH 16
/* the YAML adapter's own cap; a profile near it is already absurd */
#define NF_PROFILE_MAX_BYTES (4u << 20)

struct nf_profile {
	char *name;
	json_t *json;
	json_t *locs;
	json_t *distros; /* profile name -> its distros: (nf_profile_check_distro) */
};

static const struct nf_field top_fields_base[] = {
	{ "description", NF_T_STR },
	{ "abstract", NF_T_BOOL },
	{ "inherits", NF_T_STRLIST },
	/* the site distros a profile is made for (a driver pinned to one
	 * release's kernel); a role that inherits it elsewhere is refused */
	{ "distros", NF_T_STRLIST,
	  .choices = nf_site_distros },
};

/* The top-level schema: the fixed keys plus one section per facet of the
 * context's table; NULL only for ENOMEM */
static struct nf_field *top_schema_new(const struct nf_facet_table *ft)
{
	size_t n = 0;
	struct nf_field *top = calloc(NF_ARRAY_SIZE(top_fields_base) + ft->n + 1,
				      sizeof(*top));

	if (!top)
		return NULL;
	for (size_t i = 0; i < NF_ARRAY_SIZE(top_fields_base); i++)
		top[n++] = top_fields_base[i];
	for (size_t i = 0; i < ft->n; i++)
		top[n++] = (struct nf_field){ ft->v[i]->name,
					      ft->v[i]->map ? NF_T_MAP : NF_T_OBJ,
					      ft->v[i]->schema };
	return top;
}

static int valid_name(const char *s)
{
	if (!s || !*s || strlen(s) > 64)
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
		      *s == '-' || *s == '_'))
			return 0;
	return 1;
}

/* ------------------------------------------------------------- loading */

struct loaded {
	char name[72];
	json_t *json;
	json_t *locs;
};

/* A refused profile file is a finding about that file, not an I/O error:
 * lint reports it with the others and a build stops on it */
static int refuse(struct nf_ctx *ctx, struct nf_diags *diags, const char *path,
		  int code, const char *fmt, ...)
{
	char why[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	nf_diag_add(diags, path, 1, 1, NF_SEV_ERROR, "%s", why);
	return nf_fail(ctx, code, "%s: %s", path, why);
}

/* Profiles are read only as regular files: a symlink could point at
 * /dev/zero, a FIFO blocks the reader forever, a directory reads as
 * nothing.  O_NONBLOCK makes opening a FIFO return at once so fstat can
 * refuse it. */
static int read_profile(struct nf_ctx *ctx, const char *path, char **out,
			size_t *outlen, struct nf_diags *diags)
{
	char *buf = NULL;
	size_t len = 0;
	struct stat st;
	int fd, r;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW);
	if (fd < 0 && errno == ELOOP)
		return refuse(ctx, diags, path, NF_E_INVALID,
			      "refusing a symbolic link: a profile must be a regular file");
	if (fd < 0)
		return nf_fail(ctx, -errno, "cannot read '%s': %s", path,
			       strerror(errno));
	if (fstat(fd, &st)) {
		r = nf_fail(ctx, -errno, "cannot read '%s': %s", path,
			    strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		r = refuse(ctx, diags, path, NF_E_INVALID,
			   "not a regular file: a profile must be one");
		goto out;
	}
	/* read to the end, the buffer growing with the file: a file that
	 * grew past the cap since fstat is refused all the same */
	if (st.st_size > (off_t)NF_PROFILE_MAX_BYTES ||
	    (r = nf_read_fd(fd, NF_PROFILE_MAX_BYTES, &buf, &len)) == NF_E_LIMIT) {
		r = refuse(ctx, diags, path, NF_E_LIMIT,
			   "larger than %u bytes: not a profile",
			   NF_PROFILE_MAX_BYTES);
		goto out;
	}
	if (r) {
		r = r == -ENOMEM ? r : nf_fail(ctx, r, "cannot read '%s': %s",
					       path, strerror(-r));
		goto out;
	}
	*out = buf;
	*outlen = len;
	buf = NULL;
	r = 0;
out:
	free(buf);
	close(fd);
	return r;
}

static int load_file(struct nf_ctx *ctx, const char *name, json_t **json,
		     json_t **locs, struct nf_diags *diags)
{
	const struct nf_facet_table *ft;
	struct nf_field *top;
	char *path, *buf = NULL;
	size_t len = 0;
	int r;

	if ((r = nf_ctx_facets(ctx, &ft)))
		return r;
	if (!(top = top_schema_new(ft)))
		return -ENOMEM;
	if (!(path = nf_asprintf("%s/%s.yaml", nf_ctx_profiles_dir(ctx), name))) {
		free(top);
		return -ENOMEM;
	}
	*locs = json_object();
	r = read_profile(ctx, path, &buf, &len, diags);
	if (r == 0)
		r = nf_yaml_load_buf(ctx, path, buf, len, json, *locs, diags);
	free(buf);
	/* an empty file (or only comments) is most likely a truncated one:
	 * as a role it would build an image with no facets at all */
	if (r == 0 && json_object_size(*json) == 0) {
		json_decref(*json);
		*json = NULL;
		r = refuse(ctx, diags, path, NF_E_INVALID,
			   "empty profile: a profile needs at least one key");
	}
	if (r == 0 && nf_schema_check(*json, top, "", *locs, diags)) {
		json_decref(*json);
		*json = NULL;
		r = nf_fail(ctx, NF_E_INVALID, "'%s' has errors", path);
	}
	free(top);
	if (r) {
		json_decref(*locs);
		*locs = NULL;
	}
	free(path);
	return r;
}

struct resolver {
	struct nf_ctx *ctx;
	struct nf_diags *diags;
	const char *stack[NF_INHERIT_DEPTH];
	int depth;
	int abstract; /* the profile asked for says abstract: true */
	json_t *chain; /* names in resolution order */
	json_t *distros; /* profile name -> its distros: list */
};

/* Resolve `name` into (json, locs), recursively through inherits */
/* " (did you mean 'R'?); roles: A, B" for WORD (NULL: the list alone):
 * only roles are offered, never a partial profile */
static void roles_hint(struct nf_ctx *ctx, const char *word, char *buf,
		       size_t sz)
{
	char **names = NULL;
	size_t n = 0, len;
	const char *s;

	buf[0] = '\0';
	if (nf_profile_roles(ctx, &names, &n) || !n) {
		nf_strv_free(names, n);
		return;
	}
	if (word && (s = nf_suggest(word, (const char *const *)names, n)))
		snprintf(buf, sz, " (did you mean '%s'?)", s);
	len = strlen(buf);
	snprintf(buf + len, sz - len, "; roles:");
	for (size_t i = 0; i < n; i++) {
		len = strlen(buf);
		snprintf(buf + len, sz - len, "%s %s", i ? "," : "", names[i]);
	}
	nf_strv_free(names, n);
}

static int resolve(struct resolver *rv, const char *name, const json_t *from_locs,
		   const char *from_path, json_t **json, json_t **locs)
{
	json_t *self = NULL, *slocs = NULL, *out, *olocs, *inh;
	struct merge m = { rv->ctx, rv->diags, 0 };
	size_t i;
	json_t *p;
	int r;

	for (int d = 0; d < rv->depth; d++)
		if (!strcmp(rv->stack[d], name)) {
			const char *file;
			unsigned line, col;
			char chain[512] = "";

			for (int e = d; e < rv->depth; e++) {
				strncat(chain, rv->stack[e], sizeof(chain) - strlen(chain) - 1);
				strncat(chain, " -> ", sizeof(chain) - strlen(chain) - 1);
			}
			strncat(chain, name, sizeof(chain) - strlen(chain) - 1);
			nf_locs_get(from_locs, from_path, &file, &line, &col);
			nf_diag_add(rv->diags, file ? file : "", line, col,
				    NF_SEV_ERROR, "inheritance cycle: %s", chain);
			return nf_fail(rv->ctx, NF_E_CYCLE, "inheritance cycle: %s",
				       chain);
		}
	if (rv->depth >= NF_INHERIT_DEPTH) {
		const char *file;
		unsigned line, col;

		nf_locs_get(from_locs, from_path, &file, &line, &col);
		nf_diag_add(rv->diags, file ? file : "", line, col, NF_SEV_ERROR,
			    "inheritance deeper than %d profiles: '%s' inherits '%s'",
			    NF_INHERIT_DEPTH, rv->stack[rv->depth - 1], name);
		return nf_fail(rv->ctx, NF_E_LIMIT,
			       "inheritance deeper than %d profiles: '%s' inherits '%s'",
			       NF_INHERIT_DEPTH, rv->stack[rv->depth - 1], name);
	}
	if (!valid_name(name)) {
		const char *file;
		unsigned line, col;

		nf_locs_get(from_locs, from_path, &file, &line, &col);
		nf_diag_add(rv->diags, file ? file : "", line, col, NF_SEV_ERROR,
			    "'%s' is not a profile name (a-z, 0-9, '-', '_')", name);
		return nf_fail(rv->ctx, NF_E_INVALID, "'%s' is not a profile name",
			       name);
	}
	{
		char *path = nf_asprintf("%s/%s.yaml", nf_ctx_profiles_dir(rv->ctx), name);
		struct stat st;
		/* lstat: a dangling symlink is refused as a symlink */
		int missing = path && lstat(path, &st) != 0;

		free(path);
		if (missing && from_locs) {
			const char *file;
			unsigned line, col;

			nf_locs_get(from_locs, from_path, &file, &line, &col);
			nf_diag_add(rv->diags, file ? file : "", line, col,
				    NF_SEV_ERROR, "inherited profile '%s' not found in '%s'",
				    name, nf_ctx_profiles_dir(rv->ctx));
			return nf_fail(rv->ctx, NF_E_NOTFOUND,
				       "inherited profile '%s' not found", name);
		}
		if (missing) {
			char hint[1024];

			roles_hint(rv->ctx, name, hint, sizeof(hint));
			return nf_fail(rv->ctx, NF_E_NOTFOUND,
				       "no profile '%s' in '%s'%s", name,
				       nf_ctx_profiles_dir(rv->ctx), hint);
		}
	}
	r = load_file(rv->ctx, name, &self, &slocs, rv->diags);
	if (r)
		return r;
	if (rv->depth == 0)
		rv->abstract = json_is_true(json_object_get(self, "abstract"));
	rv->stack[rv->depth++] = name;
	out = json_object();
	olocs = json_object();
	inh = json_object_get(self, "inherits");
	json_array_foreach(inh, i, p) {
		json_t *pj = NULL, *pl = NULL;
		char ipath[64];

		snprintf(ipath, sizeof(ipath), "inherits[%zu]", i);
		r = resolve(rv, json_string_value(p), slocs, ipath, &pj, &pl);
		if (r)
			goto fail;
		nf_prof_merge_top(&m, &out, &olocs, &pj, &pl);
		json_decref(pj);
		json_decref(pl);
	}
	json_object_del(self, "inherits");
	json_object_del(self, "abstract");
	if (json_object_get(self, "distros")) {
		json_object_set(rv->distros, name, json_object_get(self, "distros"));
		json_object_del(self, "distros");
	}
	nf_prof_merge_top(&m, &out, &olocs, &self, &slocs);
	if (m.failed) {
		r = nf_fail(rv->ctx, NF_E_INVALID, "profile '%s' does not merge",
			    name);
		goto fail;
	}
	rv->depth--;
	{
		int seen = 0;

		json_array_foreach(rv->chain, i, p)
			seen |= !strcmp(json_string_value(p), name);
		if (!seen)
			json_array_append_new(rv->chain, json_string(name));
	}
	json_decref(self);
	json_decref(slocs);
	*json = out;
	*locs = olocs;
	return 0;
fail:
	rv->depth--;
	json_decref(self);
	json_decref(slocs);
	json_decref(out);
	json_decref(olocs);
	return r;
}

/* ------------------------------------------------------------- kernel args */

/* Keys the kernel takes more than once, each occurrence meaningful */
static int repeatable(const char *key)
{
	return !strcmp(key, "console");
}

/* Name a kernel argument that conflicts with an earlier one, with both
 * positions; last holds each argument's last index in args before i */
static void report_conflict(struct nf_profile *p, struct nf_diags *diags,
			    const json_t *srcs,
			    const json_t *last, size_t i, const char *s,
			    const char *t, const char *k1)
{
	const char *file = NULL, *of = NULL;
	unsigned line = 0, col = 0, ol = 0, oc = 0;
	char path[64], opath[64], where[600] = "";
	size_t nk = json_array_size(json_object_get(
		json_object_get(p->json, "kernel"), "args"));
	size_t oi = (size_t)json_integer_value(json_object_get(last, t));

	snprintf(path, sizeof(path), "kernel.args[%zu]", i);
	if (nf_profile_where(p, path, &file, &line, &col))
		nf_profile_where(p, json_string_value(json_array_get(srcs, i)),
				 &file, &line, &col);
	snprintf(opath, sizeof(opath), "kernel.args[%zu]", oi);
	if (oi < nk && !nf_profile_where(p, opath, &of, &ol, &oc) && of)
		snprintf(where, sizeof(where), " (%s:%u:%u)", of, ol, oc);
	nf_diag_add(diags, file ? file : p->name, line, col, NF_SEV_ERROR,
		    "kernel argument '%s' conflicts with '%s'%s; "
		    "remove the inherited one with '!%s'", s, t, where, k1);
}

/* Collect every facet's boot arguments; conflicting values are errors */
static int collect_boot_args(struct nf_ctx *ctx, const struct nf_facet_table *ft,
			     struct nf_profile *p, struct nf_diags *diags,
			     json_t **out)
{
	json_t *args = json_array(), *res = json_array();
	json_t *srcs = json_array();
	json_t *bykey = json_object();    /* key -> first accepted with it */
	json_t *accepted = json_object(); /* the arguments in res */
	json_t *last = json_object();     /* argument -> its last index so far */
	int bad = 0;
	size_t i;
	json_t *a;

	for (size_t f = 0; f < ft->n; f++) {
		const struct nf_facet *fc = ft->v[f];
		json_t *sec = json_object_get(p->json, fc->name);
		size_t before = json_array_size(args);

		if (!fc->boot_args || !sec)
			continue;
		fc->boot_args(sec, args);
		for (i = before; i < json_array_size(args); i++)
			json_array_append_new(srcs, json_string(fc->name));
	}
	/* linear: the first accepted argument with a key and the last index of
	 * each argument are hash-indexed (jansson objects) */
	json_array_foreach(args, i, a) {
		const char *s = json_string_value(a);
		char k1[128];
		int kr = nf_kargs_key(s, k1, sizeof(k1));
		int has_val = kr == 1;
		json_t *at;

		if (has_val && !repeatable(k1) && (at = json_object_get(bykey, k1))) {
			/* the first accepted argument with that key: the same
			 * argument again is dropped, another value conflicts */
			const char *t = json_string_value(json_array_get(res,
					(size_t)json_integer_value(at)));

			if (strcmp(s, t)) {
				report_conflict(p, diags, srcs, last, i, s, t, k1);
				bad = 1;
			}
		} else if (!json_object_get(accepted, s)) {
			if (kr >= 0 && !json_object_get(bykey, k1))
				json_object_set_new(bykey, k1,
					json_integer((json_int_t)json_array_size(res)));
			json_object_set(accepted, s, json_true());
			json_array_append(res, a);
		}
		json_object_set_new(last, s, json_integer((json_int_t)i));
	}
	json_decref(bykey);
	json_decref(accepted);
	json_decref(last);
	json_decref(args);
	json_decref(srcs);
	if (bad) {
		json_decref(res);
		return nf_fail(ctx, NF_E_CONFLICT, "conflicting kernel arguments");
	}
	*out = res;
	return 0;
}

int nf_profile_kernel_args(struct nf_ctx *ctx, const struct nf_profile *p,
			   char **out)
{
	json_t *args = json_object_get(p->json, "boot_args");
	size_t i, len = 1;
	json_t *a;
	char *s;

	if (!json_is_array(args))
		return nf_fail(ctx, NF_E_INVALID, "profile '%s' has no boot_args",
			       p->name);
	json_array_foreach(args, i, a)
		len += strlen(json_string_value(a)) + 1;
	if (!(s = malloc(len)))
		return -ENOMEM;
	*s = '\0';
	json_array_foreach(args, i, a) {
		if (i)
			strcat(s, " ");
		strcat(s, json_string_value(a));
	}
	*out = s;
	return 0;
}

/* ------------------------------------------------------------- site */

static void apply_site(const struct nf_facet_table *ft, struct nf_profile *p,
		       const struct nf_site *site)
{
	const json_t *pub = nf_site_public(site);

	json_object_set(p->json, "site", (json_t *)pub);
	for (size_t f = 0; f < ft->n; f++) {
		json_t *sec = json_object_get(p->json, ft->v[f]->name);

		if (sec && ft->v[f]->from_site)
			ft->v[f]->from_site(sec, pub);
	}
}

/* ------------------------------------------------------------- public */

int nf_profile_runs(const json_t *prof, const char *daemon)
{
	const json_t *d = json_object_get(json_object_get(prof, "slurm"),
					  "daemons");
	size_t i;
	json_t *v;

	json_array_foreach(d, i, v)
		if (json_is_string(v) && !strcmp(json_string_value(v), daemon))
			return 1;
	return 0;
}

const json_t *nf_profile_get(const json_t *prof, const char *path)
{
	const json_t *v = prof;

	while (v && path && *path) {
		size_t n = strcspn(path, ".");

		v = json_object_getn(v, path, n);
		path += n + (path[n] == '.');
	}
	return v;
}

int nf_profile_runs_when(const json_t *prof, const json_t *obj)
{
	const char *when = json_string_value(json_object_get(obj, "when"));

	return !when || json_is_true(nf_profile_get(prof, when));
}

int nf_profile_resolve(struct nf_ctx *ctx, const char *name,
		       const struct nf_site *site, struct nf_profile **out,
		       struct nf_diags *diags)
{
	struct resolver rv = { .ctx = ctx, .diags = diags };
	const struct nf_facet_table *ft;
	struct nf_profile *p;
	json_t *json = NULL, *locs = NULL, *boot = NULL, *res;
	int r;

	if ((r = nf_ctx_facets(ctx, &ft)))
		return r;
	if (!valid_name(name))
		return nf_fail(ctx, NF_E_INVALID,
			       "'%s' is not a profile name (a-z, 0-9, '-', '_')",
			       name);
	rv.chain = json_array();
	rv.distros = json_object();
	r = resolve(&rv, name, NULL, NULL, &json, &locs);
	if (r) {
		json_decref(rv.distros);
		json_decref(rv.chain);
		return r;
	}
	if (rv.abstract) {
		char hint[1024];

		json_decref(json);
		json_decref(locs);
		json_decref(rv.distros);
		json_decref(rv.chain);
		roles_hint(ctx, NULL, hint, sizeof(hint));
		return nf_fail(ctx, NF_E_INVALID,
			       "'%s' is a partial profile (abstract: true), not a role%s",
			       name, hint);
	}
	if (!(p = calloc(1, sizeof(*p)))) {
		json_decref(json);
		json_decref(locs);
		json_decref(rv.distros);
		json_decref(rv.chain);
		return -ENOMEM;
	}
	p->name = nf_strdup(name);
	p->locs = locs;
	p->distros = rv.distros;
	res = json_object();
	json_object_set_new(res, "nodeforge",
			    json_pack("{s:s,s:i}", "version", NF_VERSION, "schema", 1));
	json_object_set_new(res, "role", json_string(name));
	json_object_set_new(res, "inherits", rv.chain);
	json_object_update(res, json);
	json_decref(json);
	p->json = res;
	if (site)
		apply_site(ft, p, site);
	r = collect_boot_args(ctx, ft, p, diags, &boot);
	if (r) {
		nf_profile_free(p);
		return r;
	}
	json_object_set_new(p->json, "boot_args", boot);
	*out = p;
	return 0;
}

void nf_profile_free(struct nf_profile *p)
{
	if (!p)
		return;
	free(p->name);
	json_decref(p->json);
	json_decref(p->locs);
	json_decref(p->distros);
	free(p);
}

const json_t *nf_profile_json(const struct nf_profile *p)
{
	return p->json;
}

const char *nf_profile_name(const struct nf_profile *p)
{
	return p->name;
}

int nf_profile_check_distro(struct nf_ctx *ctx, const struct nf_profile *p,
			    const char *distro)
{
	const char *prof;
	json_t *list, *v;
	size_t i;

	if (!distro || !p->distros)
		return 0;
	json_object_foreach(p->distros, prof, list) {
		char names[256] = "";
		int ok = 0;

		json_array_foreach(list, i, v) {
			ok |= json_is_string(v) && !strcmp(json_string_value(v), distro);
			snprintf(names + strlen(names), sizeof(names) - strlen(names),
				 "%s%s", i ? ", " : "", json_string_value(v));
		}
		if (!ok)
			return nf_fail(ctx, NF_E_CONFLICT, "role '%s': profile '%s' "
				       "is made for %s (its distros:), and this "
				       "site's distro is %s: build another role, "
				       "or write a profile with %s's own pins",
				       p->name, prof, names, distro, distro);
	}
	return 0;
}

int nf_profile_where(const struct nf_profile *p, const char *path,
		     const char **file, unsigned *line, unsigned *col)
{
	return nf_locs_get(p->locs, path, file, line, col);
}

int nf_profile_load_json(struct nf_ctx *ctx, const char *path,
			 struct nf_profile **out)
{
	struct nf_profile *p;
	json_error_t err;
	json_t *j;
	const char *role;

	j = json_load_file(path, JSON_REJECT_DUPLICATES, &err);
	/* a file that cannot be opened has no position to name */
	if (!j && access(path, R_OK))
		return nf_fail(ctx, -errno, "cannot read '%s': %s", path,
			       strerror(errno));
	if (!j)
		return nf_fail(ctx, NF_E_PARSE, "%s:%d:%d: %s", path, err.line,
			       err.column, err.text);
	role = json_string_value(json_object_get(j, "role"));
	if (!json_is_object(j) || !role || !json_is_array(json_object_get(j, "boot_args"))) {
		json_decref(j);
		return nf_fail(ctx, NF_E_INVALID,
			       "'%s' is not a resolved nodeforge profile", path);
	}
	if (!(p = calloc(1, sizeof(*p)))) {
		json_decref(j);
		return -ENOMEM;
	}
	p->name = nf_strdup(role);
	p->json = j;
	p->locs = json_object();
	*out = p;
	return 0;
}

static int cmpstr(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int nf_profile_list(struct nf_ctx *ctx, char ***names, size_t *n)
{
	const char *dir = nf_ctx_profiles_dir(ctx);
	DIR *d = opendir(dir);
	struct dirent *de;
	char **v = NULL;
	size_t cnt = 0;

	if (!d)
		return nf_fail(ctx, -errno, "cannot open profiles directory '%s': %s",
			       dir, strerror(errno));
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		char **nv;

		if (len < 6 || strcmp(de->d_name + len - 5, ".yaml") ||
		    !strncmp(de->d_name, "site", 4))
			continue;
		if (!(nv = realloc(v, (cnt + 1) * sizeof(*v))))
			break;
		v = nv;
		v[cnt] = strndup(de->d_name, len - 5);
		if (!valid_name(v[cnt])) {
			free(v[cnt]);
			continue;
		}
		cnt++;
	}
	closedir(d);
	qsort(v, cnt, sizeof(*v), cmpstr);
	*names = v;
	*n = cnt;
	return 0;
}

int nf_profile_roles(struct nf_ctx *ctx, char ***names, size_t *n)
{
	size_t out = 0;
	int r = nf_profile_list(ctx, names, n);

	for (size_t i = 0; !r && i < *n; i++) {
		json_t *self = NULL, *locs = NULL;
		struct nf_diags d;
		int role;

		nf_diags_init(&d);
		/* a file that does not load is no role either: resolving
		 * it says why */
		role = !load_file(ctx, (*names)[i], &self, &locs, &d) &&
		       !json_is_true(json_object_get(self, "abstract"));
		json_decref(self);
		json_decref(locs);
		nf_diags_free(&d);
		if (role)
			(*names)[out++] = (*names)[i];
		else
			free((*names)[i]);
	}
	if (!r)
		*n = out;
	return r;
}

int nf_profile_lint(struct nf_ctx *ctx, const struct nf_profile *p,
		    struct nf_diags *diags)
{
	struct nf_facet_lint l = { ctx, p, diags };
	const struct nf_facet_table *ft;
	int r;

	if ((r = nf_ctx_facets(ctx, &ft)))
		return r;
	for (size_t i = 0; i < ft->n; i++) {
		json_t *sec = json_object_get(p->json, ft->v[i]->name);

		if (sec && ft->v[i]->lint)
			ft->v[i]->lint(&l, sec);
	}
	return 0;
}
