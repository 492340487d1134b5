/* SPDX-License-Identifier: MIT */
/*
 * Role profiles: loading, inheritance and the resolved profile.
 *
 * Merge rules (docs/profiles.md):
 *   - mappings merge key by key; a scalar set by the child wins;
 *   - lists merge in order, parent entries first, without duplicates;
 *   - a list entry "!x" removes the inherited entry x; for key=value
 *     strings "!key" removes the entry with that key; for lists of
 *     mappings "!name" removes the entry with that name, and a child entry
 *     with the same name replaces the parent's in place;
 *   - kernel arguments with the same key and different values are an
 *     error, wherever they come from: remove the inherited one first.
 */
#include "internal.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <pthread.h>
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
};

static const struct nf_field top_fields_base[] = {
	{ "description", NF_T_STR },
	{ "abstract", NF_T_BOOL },
	{ "inherits", NF_T_STRLIST },
};

/* One per line of facets.def: the top-level schema's size comes from the
 * list of facets itself, so no facet can fall off its end */
enum {
#define NF_FACET(n) NF_TOP_##n,
#include "facets/facets.def"
#undef NF_FACET
	NF_TOP_FACETS
};

static struct nf_field top_fields[NF_ARRAY_SIZE(top_fields_base) + NF_TOP_FACETS + 1];
static pthread_once_t top_once = PTHREAD_ONCE_INIT;

static void top_init(void)
{
	size_t n = 0;

	for (size_t i = 0; i < NF_ARRAY_SIZE(top_fields_base); i++)
		top_fields[n++] = top_fields_base[i];
	for (size_t i = 0; i < nf_nfacets; i++)
		top_fields[n++] = (struct nf_field){ nf_facets[i]->name, NF_T_OBJ,
						     nf_facets[i]->schema };
	top_fields[n] = (struct nf_field){ 0 };
}

/* The top-level schema: the fixed keys plus one section per facet */
static const struct nf_field *top_schema(void)
{
	pthread_once(&top_once, top_init);
	return top_fields;
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

/* ------------------------------------------------------------- locs */

static int path_has_prefix(const char *path, const char *prefix)
{
	size_t n = strlen(prefix);

	if (strncmp(path, prefix, n))
		return 0;
	return path[n] == '\0' || path[n] == '.' || path[n] == '[';
}

static void locs_drop(json_t *locs, const char *prefix)
{
	const char *k;
	json_t *v;
	void *tmp;

	json_object_foreach_safe(locs, tmp, k, v)
		if (path_has_prefix(k, prefix))
			json_object_del(locs, k);
}

/* Copy the positions of `prefix` and everything under it */
static void locs_copy(json_t *dst, const json_t *src, const char *prefix)
{
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)src, k, v)
		if (path_has_prefix(k, prefix))
			json_object_set(dst, k, v);
}

/* ------------------------------------------------------------- merge */

struct merge {
	struct nf_ctx *ctx;
	struct nf_diags *diags;
	int failed;
};

static void merge_err(struct merge *m, const json_t *locs, const char *path,
		      const char *fmt, const char *a)
{
	const char *file;
	unsigned line, col;

	nf_locs_get(locs, path, &file, &line, &col);
	nf_diag_add(m->diags, file ? file : "", line, col, NF_SEV_ERROR, fmt, a);
	m->failed = 1;
}

/* Identity of a list entry for replacement and removal: a string is its
 * own key, a mapping its name; NULL for entries without one */
static const char *entry_key(const json_t *v)
{
	if (json_is_string(v))
		return json_string_value(v);
	if (json_is_object(v))
		return json_string_value(json_object_get(v, "name"));
	return NULL;
}

/* The part of a key=value string before the first '=' ("hugepages" of
 * "hugepages=64"), which a marker "!hugepages" removes; NULL if none */
static char *kv_prefix(const json_t *e)
{
	const char *s = json_string_value(e), *eq = s ? strchr(s, '=') : NULL;

	return eq ? strndup(s, (size_t)(eq - s)) : NULL;
}

/* Parse "PATH[N]REST" where REST is empty or starts with '.' or '['; N as
 * "%zu" prints it (no leading zeros).  Returns REST or NULL. */
static const char *index_under(const char *k, const char *path, size_t plen,
			       size_t *n)
{
	const char *p = k + plen;
	size_t v = 0;

	if (strncmp(k, path, plen) || *p != '[' || !(*++p >= '0' && *p <= '9'))
		return NULL;
	if (*p == '0' && p[1] != ']')
		return NULL;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (SIZE_MAX - 9) / 10)
			return NULL;
		v = v * 10 + (size_t)(*p - '0');
	}
	if (*p++ != ']' || (*p && *p != '.' && *p != '['))
		return NULL;
	*n = v;
	return p;
}

static void loc_put(json_t *dlocs, const char *path, size_t n,
		    const char *rest, json_t *v)
{
	char buf[1024];

	snprintf(buf, sizeof(buf), "%s[%zu]%s", path, n, rest);
	json_object_set(dlocs, buf, v);
}

/* The positions under `path` after a merge: old_to[i] is where inherited
 * entry i went, src_to[j] where the child's entry j went (SIZE_MAX: gone).
 * An inherited entry that kept its index keeps its positions untouched, so
 * appending to a long list rewrites nothing; one pass over each locs. */
static void locs_remap(json_t *dlocs, const json_t *slocs, const char *path,
		       const size_t *old_to, size_t nold,
		       const size_t *src_to, size_t nsrc)
{
	size_t plen = strlen(path), npend = 0, cap = 0;
	struct pend { char *rest; json_t *v; size_t to; } *pend = NULL;
	const char *k, *rest;
	json_t *v, *kl;
	void *tmp;

	json_object_foreach_safe(dlocs, tmp, k, v) {
		size_t i;

		if (!path_has_prefix(k, path) || !strcmp(k, path))
			continue;
		rest = index_under(k, path, plen, &i);
		if (rest && i < nold && old_to[i] == i)
			continue;
		if (rest && i < nold && old_to[i] != SIZE_MAX) {
			if (npend == cap) {
				struct pend *np = realloc(pend, (cap = cap ? 2 * cap : 64) * sizeof(*np));

				if (!np)
					break;
				pend = np;
			}
			pend[npend++] = (struct pend){ strdup(rest), json_incref(v), old_to[i] };
		}
		json_object_del(dlocs, k);
	}
	for (size_t p = 0; p < npend; p++) {
		if (pend[p].rest)
			loc_put(dlocs, path, pend[p].to, pend[p].rest, pend[p].v);
		free(pend[p].rest);
		json_decref(pend[p].v);
	}
	free(pend);
	/* the list key itself keeps the child's position */
	if ((kl = json_object_get(slocs, path)))
		json_object_set(dlocs, path, kl);
	json_object_foreach((json_t *)slocs, k, v) {
		size_t j;

		if ((rest = index_under(k, path, plen, &j)) && j < nsrc &&
		    src_to[j] != SIZE_MAX)
			loc_put(dlocs, path, src_to[j], rest, v);
	}
}

static void merge_value(struct merge *m, json_t *dst, json_t *dlocs,
			const char *key, json_t *src, const json_t *slocs,
			const char *path);

/* Linear in the length of both lists: the removal markers and the merged
 * list's keys are each indexed in a jansson object (a hash table) instead
 * of comparing every pair */
static void merge_list(struct merge *m, json_t *dst, json_t *dlocs,
		       const char *key, json_t *src, const json_t *slocs,
		       const char *path)
{
	json_t *old = json_object_get(dst, key);
	size_t nold = json_array_size(old), nsrc = json_array_size(src);
	json_t *out = json_array();
	json_t *markers = json_object(); /* "!x" in src: x -> did it remove? */
	json_t *index = json_object();   /* key -> first position in out */
	size_t *old_to = malloc((nold + 1) * sizeof(*old_to));
	size_t *src_to = malloc((nsrc + 1) * sizeof(*src_to));
	/* per position in out: j for the child's entry j, nsrc + i for the
	 * inherited entry i */
	size_t *orig = malloc((nold + nsrc + 1) * sizeof(*orig));
	size_t i, j, n;
	const char *k;
	json_t *e, *s, *at;

	if (!out || !markers || !index || !old_to || !src_to || !orig) {
		merge_err(m, slocs, path, "%s: out of memory", path);
		goto done;
	}
	json_array_foreach(src, j, s) {
		const char *sv = json_string_value(s);

		src_to[j] = SIZE_MAX;
		if (sv && sv[0] == '!')
			json_object_set(markers, sv + 1, json_false());
	}
	/* parent entries, minus the removed: "!x" removes the entry whose key
	 * is x, and the string x=anything */
	json_array_foreach(old, i, e) {
		int gone = 0;

		old_to[i] = SIZE_MAX;
		k = entry_key(e);
		if (k && json_object_size(markers)) {
			char *pre = kv_prefix(e);

			if (json_object_get(markers, k)) {
				json_object_set(markers, k, json_true());
				gone = 1;
			}
			if (pre && json_object_get(markers, pre)) {
				json_object_set(markers, pre, json_true());
				gone = 1;
			}
			free(pre);
		}
		if (gone)
			continue;
		n = json_array_size(out);
		if (k && !json_object_get(index, k))
			json_object_set_new(index, k, json_integer((json_int_t)n));
		json_array_append(out, e);
		old_to[i] = n;
		orig[n] = nsrc + i;
	}
	/* child entries: markers must remove something; same-named mappings
	 * replace in place; duplicates of strings are dropped */
	json_array_foreach(src, j, s) {
		const char *sv = json_string_value(s);

		if (sv && sv[0] == '!') {
			if (!json_is_true(json_object_get(markers, sv + 1))) {
				char spath[1024];

				snprintf(spath, sizeof(spath), "%s[%zu]", path, j);
				merge_err(m, slocs, spath,
					  "'%s' removes nothing: no inherited entry "
					  "has that name", sv + 1);
			}
			continue;
		}
		k = entry_key(s);
		if (k && (at = json_object_get(index, k))) {
			n = (size_t)json_integer_value(at);
			json_array_set(out, n, s);
			/* what it replaces leaves no positions behind */
			if (orig[n] >= nsrc)
				old_to[orig[n] - nsrc] = SIZE_MAX;
			else
				src_to[orig[n]] = SIZE_MAX;
		} else {
			n = json_array_size(out);
			if (k)
				json_object_set_new(index, k, json_integer((json_int_t)n));
			json_array_append(out, s);
		}
		src_to[j] = n;
		orig[n] = j;
	}
	locs_remap(dlocs, slocs, path, old_to, nold, src_to, nsrc);
	json_object_set(dst, key, out);
done:
	json_decref(out);
	json_decref(markers);
	json_decref(index);
	free(old_to);
	free(src_to);
	free(orig);
}

static void merge_object(struct merge *m, json_t *dst, json_t *dlocs,
			 json_t *src, const json_t *slocs, const char *path)
{
	const char *k;
	json_t *v;

	json_object_foreach(src, k, v) {
		char sub[1024];

		snprintf(sub, sizeof(sub), "%s%s%s", path, *path ? "." : "", k);
		merge_value(m, dst, dlocs, k, v, slocs, sub);
	}
}

static void merge_value(struct merge *m, json_t *dst, json_t *dlocs,
			const char *key, json_t *src, const json_t *slocs,
			const char *path)
{
	json_t *cur = json_object_get(dst, key);

	if (json_is_object(cur) && json_is_object(src)) {
		json_t *kl = json_object_get(slocs, path);

		if (kl)
			json_object_set(dlocs, path, kl);
		merge_object(m, cur, dlocs, src, slocs, path);
		return;
	}
	if (json_is_array(src) && (json_is_array(cur) || !cur)) {
		if (!cur)
			json_object_set_new(dst, key, json_array());
		merge_list(m, dst, dlocs, key, src, slocs, path);
		return;
	}
	/* a scalar over a scalar has one position and no subtree: not worth
	 * a scan of every position, once per key of a large mapping */
	if (!json_is_object(src) && !json_is_array(src) &&
	    !json_is_object(cur) && !json_is_array(cur)) {
		json_t *kl = json_object_get(slocs, path);

		json_object_set_new(dst, key, json_deep_copy(src));
		if (kl)
			json_object_set(dlocs, path, kl);
		else
			json_object_del(dlocs, path);
		return;
	}
	json_object_set_new(dst, key, json_deep_copy(src));
	locs_drop(dlocs, path);
	locs_copy(dlocs, slocs, path);
}

/* Keep only the positions under a top-level key of obj: what merging obj
 * into an empty mapping copies */
static void locs_keep_under(json_t *locs, const json_t *obj)
{
	const char *k;
	json_t *v;
	void *tmp;

	json_object_foreach_safe(locs, tmp, k, v) {
		char top[256];
		size_t n = strcspn(k, ".[");

		if (n >= sizeof(top)) {
			json_object_del(locs, k);
			continue;
		}
		memcpy(top, k, n);
		top[n] = '\0';
		if (!json_object_get(obj, top))
			json_object_del(locs, k);
	}
}

/* Merge a whole profile (*src, *slocs) into the result.  Into an empty
 * result that is a copy of every section (a list only merges into a list),
 * so the first parent, or a profile that inherits nothing, is taken over
 * as it is instead of copied; *src and *slocs then move into the result. */
static void merge_top(struct merge *m, json_t **out, json_t **olocs,
		      json_t **src, json_t **slocs)
{
	const char *k;
	json_t *v;
	int arrays = 0;

	json_object_foreach(*src, k, v)
		arrays |= json_is_array(v);
	if (json_object_size(*out) || arrays) {
		merge_object(m, *out, *olocs, *src, *slocs, "");
		return;
	}
	locs_keep_under(*slocs, *src);
	json_decref(*out);
	json_decref(*olocs);
	*out = *src;
	*olocs = *slocs;
	*src = *slocs = NULL;
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
	if (st.st_size > (off_t)NF_PROFILE_MAX_BYTES) {
		r = refuse(ctx, diags, path, NF_E_LIMIT,
			   "larger than %u bytes: not a profile",
			   NF_PROFILE_MAX_BYTES);
		goto out;
	}
	/* one byte more than the cap tells a file that grew since fstat */
	if (!(buf = malloc(NF_PROFILE_MAX_BYTES + 2))) {
		r = -ENOMEM;
		goto out;
	}
	while (len <= NF_PROFILE_MAX_BYTES) {
		ssize_t n = read(fd, buf + len, NF_PROFILE_MAX_BYTES + 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = nf_fail(ctx, -errno, "cannot read '%s': %s", path,
				    strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (len > NF_PROFILE_MAX_BYTES) {
		r = refuse(ctx, diags, path, NF_E_LIMIT,
			   "larger than %u bytes: not a profile",
			   NF_PROFILE_MAX_BYTES);
		goto out;
	}
	buf[len] = '\0';
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
	char *path = nf_asprintf("%s/%s.yaml", nf_ctx_profiles_dir(ctx), name);
	char *buf = NULL;
	size_t len = 0;
	int r;

	if (!path)
		return -ENOMEM;
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
	if (r == 0 && nf_schema_check(*json, top_schema(), "", *locs, diags)) {
		json_decref(*json);
		*json = NULL;
		r = nf_fail(ctx, NF_E_INVALID, "'%s' has errors", path);
	}
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
};

/* Resolve `name` into (json, locs), recursively through inherits */
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
			char **names = NULL, hint[160] = "";
			size_t n = 0;
			const char *s;

			if (!nf_profile_list(rv->ctx, &names, &n) &&
			    (s = nf_suggest(name, (const char *const *)names, n)))
				snprintf(hint, sizeof(hint), " (did you mean '%s'?)", s);
			for (size_t k = 0; k < n; k++)
				free(names[k]);
			free(names);
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
		merge_top(&m, &out, &olocs, &pj, &pl);
		json_decref(pj);
		json_decref(pl);
	}
	json_object_del(self, "inherits");
	json_object_del(self, "abstract");
	merge_top(&m, &out, &olocs, &self, &slocs);
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

int nf_kargs_key(const char *arg, char *key, size_t keysz)
{
	const char *eq = strchr(arg, '=');
	size_t n = eq ? (size_t)(eq - arg) : strlen(arg);

	if (n + 1 > keysz)
		return NF_E_LIMIT;
	memcpy(key, arg, n);
	key[n] = '\0';
	return eq ? 1 : 0;
}

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
static int collect_boot_args(struct nf_ctx *ctx, struct nf_profile *p,
			     struct nf_diags *diags, json_t **out)
{
	json_t *args = json_array(), *res = json_array();
	json_t *srcs = json_array();
	json_t *bykey = json_object();    /* key -> first accepted with it */
	json_t *accepted = json_object(); /* the arguments in res */
	json_t *last = json_object();     /* argument -> its last index so far */
	int bad = 0;
	size_t i;
	json_t *a;

	for (size_t f = 0; f < nf_nfacets; f++) {
		const struct nf_facet *fc = nf_facets[f];
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

const json_t *nf_site_public(const struct nf_site *site);

static void apply_site(struct nf_profile *p, const struct nf_site *site)
{
	const json_t *pub = nf_site_public(site);
	json_t *time = json_object_get(p->json, "time");

	json_object_set(p->json, "site", (json_t *)pub);
	if (time && !json_object_get(time, "servers")) {
		json_t *ntp = json_object_get(pub, "ntp");

		if (ntp)
			json_object_set_new(time, "servers", json_deep_copy(ntp));
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

int nf_profile_resolve(struct nf_ctx *ctx, const char *name,
		       const struct nf_site *site, struct nf_profile **out,
		       struct nf_diags *diags)
{
	struct resolver rv = { .ctx = ctx, .diags = diags };
	struct nf_profile *p;
	json_t *json = NULL, *locs = NULL, *boot = NULL, *res;
	int r;

	if (!valid_name(name))
		return nf_fail(ctx, NF_E_INVALID,
			       "'%s' is not a profile name (a-z, 0-9, '-', '_')",
			       name);
	rv.chain = json_array();
	r = resolve(&rv, name, NULL, NULL, &json, &locs);
	if (r) {
		json_decref(rv.chain);
		return r;
	}
	if (rv.abstract) {
		json_decref(json);
		json_decref(locs);
		json_decref(rv.chain);
		return nf_fail(ctx, NF_E_INVALID,
			       "'%s' is a partial profile (abstract: true), not a role",
			       name);
	}
	if (!(p = calloc(1, sizeof(*p)))) {
		json_decref(json);
		json_decref(locs);
		json_decref(rv.chain);
		return -ENOMEM;
	}
	p->name = nf_strdup(name);
	p->locs = locs;
	res = json_object();
	json_object_set_new(res, "nodeforge",
			    json_pack("{s:s,s:i}", "version", NF_VERSION, "schema", 1));
	json_object_set_new(res, "role", json_string(name));
	json_object_set_new(res, "inherits", rv.chain);
	json_object_update(res, json);
	json_decref(json);
	p->json = res;
	if (site)
		apply_site(p, site);
	r = collect_boot_args(ctx, p, diags, &boot);
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

int nf_profile_lint(struct nf_ctx *ctx, const struct nf_profile *p,
		    struct nf_diags *diags)
{
	struct nf_facet_lint l = { ctx, p, diags };

	for (size_t i = 0; i < nf_nfacets; i++) {
		json_t *sec = json_object_get(p->json, nf_facets[i]->name);

		if (sec && nf_facets[i]->lint)
			nf_facets[i]->lint(&l, sec);
	}
	return 0;
}
