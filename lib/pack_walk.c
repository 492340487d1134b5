/* SPDX-License-Identifier: MIT */
/*
 * Pass 1 of packing a root tree (lib/pack.c writes the archive): the tree
 * walked with openat(), never following a symlink, its relative paths
 * collected with their types and sorted bytewise, component by component.
 * For cpio every regular file is stat'ed here, and the hard-link table
 * counts the names each multiply linked file has in the tree; sockets are
 * skipped with a warning.
 */
#include "pack_int.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

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

static int walk_dir(struct walk *w, int dfd, const char *prefix, int depth)
{
	DIR *d;
	struct dirent *de;
	int r = 0;

	if (depth > PACK_DEPTH) {
		close(dfd);
		return nf_fail(w->ctx, NF_E_LIMIT,
			       "'%s' is nested deeper than %d directories",
			       prefix, PACK_DEPTH);
	}
	d = fdopendir(dfd);
	if (!d) {
		r = -errno;
		close(dfd);
		return nf_fail(w->ctx, r, "cannot read directory '%s': %s",
			       prefix, strerror(-r));
	}
	while ((errno = 0, de = readdir(d))) {
		const char *name = de->d_name;
		unsigned char type = de->d_type;
		struct stat st;
		char *p;

		if (!strcmp(name, ".") || !strcmp(name, ".."))
			continue;
		if (type == DT_UNKNOWN || (type == DT_REG && w->count_links)) {
			if (fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
				r = nf_fail(w->ctx, -errno,
					    "cannot stat '%s/%s': %s", prefix,
					    name, strerror(errno));
				break;
			}
			type = S_ISDIR(st.st_mode) ? DT_DIR
			       : S_ISREG(st.st_mode) ? DT_REG
			       : S_ISSOCK(st.st_mode) ? DT_SOCK
			       : S_ISLNK(st.st_mode) ? DT_LNK : DT_UNKNOWN;
			if (type == DT_REG && st.st_nlink > 1) {
				struct hl_slot *s = nf_pk_hl_get(&w->hl, st.st_dev,
								 st.st_ino, 1);
				if (!s) {
					r = -ENOMEM;
					break;
				}
				s->count++;
			}
		}
		p = *prefix ? nf_asprintf("%s/%s", prefix, name)
			    : nf_strdup(name);
		if (!p) {
			r = -ENOMEM;
			break;
		}
		if (strlen(p) >= PATH_MAX - 2) {
			r = nf_fail(w->ctx, NF_E_LIMIT, "path '%s' is too long",
				    p);
			free(p);
			break;
		}
		if (type == DT_SOCK) {
			nf_log(w->ctx, NF_LOG_WARN, "skipping socket '%s'", p);
			w->sockets++;
			free(p);
			continue;
		}
		if ((r = add_path(w, p, type))) {
			free(p);
			break;
		}
		if (type == DT_DIR) {
			int fd = openat(dirfd(d), name, O_RDONLY | O_DIRECTORY |
					O_NOFOLLOW | O_CLOEXEC);
			if (fd < 0) {
				r = nf_fail(w->ctx, -errno,
					    "cannot open directory '%s': %s", p,
					    strerror(errno));
				break;
			}
			if ((r = walk_dir(w, fd, p, depth + 1)))
				break;
		}
	}
	if (!r && errno)
		r = nf_fail(w->ctx, -errno, "cannot read directory '%s': %s",
			    prefix, strerror(errno));
	closedir(d);
	return r;
}

/*
 * Bytewise order with '/' below every other byte: a directory's entries
 * follow it directly ("a", "a/b", "a-c"), the order GNU tar --sort=name
 * gives, which keeps related files together for the compressor.
 */
static int cmp_path(const void *a, const void *b)
{
	const unsigned char *x =
		(const unsigned char *)((const struct pent *)a)->path;
	const unsigned char *y =
		(const unsigned char *)((const struct pent *)b)->path;

	while (*x && *x == *y) {
		x++;
		y++;
	}
	if (*x == *y)
		return 0;
	if (*x == '/')
		return *y ? -1 : 1;
	if (*y == '/')
		return *x ? 1 : -1;
	return *x < *y ? -1 : 1;
}

int nf_pk_walk(struct walk *w, int rootfd)
{
	int r = walk_dir(w, fcntl(rootfd, F_DUPFD_CLOEXEC, 0), "", 0);

	if (r)
		return r;
	qsort(w->paths, w->n, sizeof(*w->paths), cmp_path);
	return 0;
}
