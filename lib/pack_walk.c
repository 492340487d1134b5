/* SPDX-License-Identifier: MIT */
/*
 * Pass 1 of packing a root tree (lib/pack.c writes the archive): the tree
 * walked (lib/walk.c: never following a symlink, names in bytewise
 * order), its relative paths collected with their types in that order.
 * For cpio the hard-link table counts the names each multiply linked
 * file has in the tree; sockets are skipped with a warning.
 */
#include "pack_int.h"

#include <dirent.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

/* ------------------------------------------------------- hard-link table */

static size_t hl_hash(dev_t dev, ino_t ino, size_t cap)
{
	unsigned long long h = (unsigned long long)ino * 0x9E3779B97F4A7C15ULL ^
			       (unsigned long long)dev;

	return (size_t)(h ^ (h >> 29)) & (cap - 1);
}

struct hl_slot *nf_pk_hl_get(struct hl_table *t, dev_t dev, ino_t ino,
			     int create)
{
	size_t i;

	if (create && (t->n + 1) * 2 > t->cap) {
		size_t ncap = t->cap ? t->cap * 2 : 256;
		struct hl_slot *nv = calloc(ncap, sizeof(*nv));

		if (!nv)
			return NULL;
		for (size_t k = 0; k < t->cap; k++) {
			if (!t->v[k].count)
				continue;
			i = hl_hash(t->v[k].dev, t->v[k].ino, ncap);
			while (nv[i].count)
				i = (i + 1) & (ncap - 1);
			nv[i] = t->v[k];
		}
		free(t->v);
		t->v = nv;
		t->cap = ncap;
	}
	if (!t->cap)
		return NULL;
	i = hl_hash(dev, ino, t->cap);
	while (t->v[i].count) {
		if (t->v[i].dev == dev && t->v[i].ino == ino)
			return &t->v[i];
		i = (i + 1) & (t->cap - 1);
	}
	if (!create)
		return NULL;
	t->v[i].dev = dev;
	t->v[i].ino = ino;
	t->n++;
	return &t->v[i];
}

/* ----------------------------------------------------------------- pass 1 */

static int add_path(struct walk *w, char *p, unsigned char type)
{
	if (w->n == w->cap) {
		size_t ncap = w->cap ? w->cap * 2 : 1024;
		struct pent *nv = realloc(w->paths, ncap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		w->paths = nv;
		w->cap = ncap;
	}
	w->paths[w->n].path = p;
	w->paths[w->n].type = type;
	w->n++;
	return 0;
}

/* Each entry in the walk's order, which is the archive's: bytewise with
 * a directory's entries right after it ("a", "a/b", "a-c"), the order GNU
 * tar --sort=name gives, which keeps related files together for the
 * compressor */
static int walk_entry(void *data, const struct nf_walk_entry *e)
{
	struct walk *w = data;
	const struct stat *st = e->st;
	char *p;
	int r;

	if (S_ISSOCK(st->st_mode)) {
		nf_log(w->ctx, NF_LOG_WARN, "skipping socket '%s'", e->rel);
		w->sockets++;
		return 0;
	}
	if (strlen(e->rel) >= PATH_MAX - 2)
		return nf_fail(w->ctx, NF_E_LIMIT, "path '%s' is too long",
			       e->rel);
	if (S_ISREG(st->st_mode) && w->count_links && st->st_nlink > 1) {
		struct hl_slot *s = nf_pk_hl_get(&w->hl, st->st_dev,
						 st->st_ino, 1);
		if (!s)
			return -ENOMEM;
		s->count++;
	}
	if (!(p = nf_strdup(e->rel)))
		return -ENOMEM;
	if ((r = add_path(w, p, (unsigned char)IFTODT(st->st_mode))))
		free(p);
	return r;
}

static const struct nf_walk_ops walk_ops = { .enter = walk_entry };

int nf_pk_walk(struct walk *w, int rootfd)
{
	return nf_walk_fd(w->ctx, rootfd, "", &walk_ops, w);
}
