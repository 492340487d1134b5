/* SPDX-License-Identifier: MIT */
/*
 * A profile merged into what it inherits, with the source position of
 * every value kept (locs: path -> file, line, column) so that lint and
 * the build can name where a merged value came from.  Loading, the
 * inheritance chain and the resolved profile: lib/profile.c.
 *
 * Merge rules (docs/profiles.md):
 *   - mappings merge key by key; a scalar set by the child wins;
 *   - lists merge in order, parent entries first, without duplicates;
 *   - a list entry "!x" removes the inherited entry x; for key=value
 *     strings "!key" removes the entry with that key; for lists of
 *     mappings "!name" removes the entry with that name, and a child entry
 *     with the same name replaces the parent's in place.
 */
#include "profile_int.h"

#include <stdint.h>
#include <stdlib.h>

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
void nf_prof_merge_top(struct merge *m, json_t **out, json_t **olocs,
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
