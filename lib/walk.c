/* SPDX-License-Identifier: MIT */
/*
 * The one directory walker: packing, the manifest check, the secret scan,
 * the build's overlay copies and inputs hash, and tree removal all walk
 * through it, so they share one depth limit, one order and one rule for
 * links.  Every directory is opened relative to its parent's fd with
 * O_DIRECTORY|O_NOFOLLOW: a symlink is an entry, never a way out of the
 * tree.  A directory's names are read whole and sorted bytewise before
 * any is visited, so a walk's order depends on the tree only (an archive
 * or a hash made from it is reproducible), and a directory's entries
 * follow it directly ("a", "a/b", "a-c").
 *
 * What cannot be walked (a directory that cannot be opened or read, an
 * entry that cannot be stat'ed, a directory nested deeper than
 * NF_WALK_DEPTH, a path longer than PATH_MAX) goes to the caller's error
 * callback with its path; without one it stops the walk.  Nothing is
 * skipped without the caller being told.
 */
#include "internal.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct walker {
	struct nf_ctx *ctx;
	const struct nf_walk_ops *ops;
	void *data;
	char path[PATH_MAX]; /* the top's shown name, then '/' and rel */
	size_t rel_at;       /* where rel starts in path */
};

/* E could not be walked: WHY goes to the error callback, or stops */
static int walk_error(struct walker *w, const struct nf_walk_entry *e,
		      int err, const char *why)
{
	nf_fail(w->ctx, err, "cannot read '%s': %s", e->path, why);
	return w->ops->error ? w->ops->error(w->data, e, err, why) : err;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void free_names(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/* The names in D but '.' and '..', sorted; -errno if D cannot be read */
static int read_names(DIR *d, char ***out, size_t *nout)
{
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;

	while ((errno = 0, de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (n == cap) {
			char **nn = realloc(names, (cap = cap ? cap * 2 : 32) *
						   sizeof(*names));

			if (!nn)
				goto nomem;
			names = nn;
		}
		if (!(names[n] = strdup(de->d_name)))
			goto nomem;
		n++;
	}
	if (errno) {
		int r = -errno;

		free_names(names, n);
		return r;
	}
	if (n)
		qsort(names, n, sizeof(*names), name_cmp);
	*out = names;
	*nout = n;
	return 0;
nomem:
	free_names(names, n);
	return -ENOMEM;
}

/* The directory DIR (its entry; NULL for the top) open at DFD, whose path
 * in w->path ends at PLEN; DFD is closed */
static int walk_dir(struct walker *w, int dfd, const struct nf_walk_entry *dir,
		    size_t plen, int depth)
{
	const struct nf_walk_entry top = { .path = w->path, .rel = "",
					   .name = "", .dfd = -1 };
	char **names = NULL;
	size_t n = 0;
	DIR *d = fdopendir(dfd);
	int r;

	if (!dir)
		dir = &top;
	if (!d) {
		r = -errno;
		close(dfd);
		return walk_error(w, dir, r, strerror(-r));
	}
	if ((r = read_names(d, &names, &n))) {
		closedir(d);
		return r == -ENOMEM ? r : walk_error(w, dir, r, strerror(-r));
	}
	for (size_t i = 0; i < n && !r; i++) {
		int sep = plen > 0 && w->path[plen - 1] != '/', sub;
		size_t nl = strlen(names[i]), elen = plen + (size_t)sep + nl;
		struct nf_walk_entry e = { .path = w->path, .name = names[i],
					   .dfd = dirfd(d),
					   .depth = depth + 1 };
		struct stat st;

		if (elen >= sizeof(w->path)) {
			char why[NAME_MAX + 64];

			/* named by its directory: its own path does not fit */
			e.rel = dir->rel;
			snprintf(why, sizeof(why), "'%s' in it makes a path "
				 "longer than %d bytes", names[i],
				 PATH_MAX - 1);
			r = walk_error(w, &e, NF_E_LIMIT, why);
			continue;
		}
		if (sep)
			w->path[plen] = '/';
		memcpy(w->path + plen + sep, names[i], nl + 1);
		e.rel = w->path + w->rel_at;
		if (fstatat(dirfd(d), names[i], &st, AT_SYMLINK_NOFOLLOW) < 0) {
			int err = errno;

			r = walk_error(w, &e, -err, strerror(err));
			goto next;
		}
		e.st = &st;
		if ((r = w->ops->enter(w->data, &e)) == NF_WALK_SKIP) {
			r = 0;
			goto next;
		}
		if (r || !S_ISDIR(st.st_mode))
			goto next;
		if (e.depth > NF_WALK_DEPTH) {
			char why[64];

			snprintf(why, sizeof(why), "nested deeper than %d "
				 "directories", NF_WALK_DEPTH);
			r = walk_error(w, &e, NF_E_LIMIT, why);
		} else if ((sub = openat(dirfd(d), names[i], O_RDONLY |
					 O_DIRECTORY | O_NOFOLLOW |
					 O_CLOEXEC)) < 0) {
			int err = errno;

			r = walk_error(w, &e, -err, strerror(err));
		} else {
			r = walk_dir(w, sub, &e, elen, depth + 1);
		}
		w->path[elen] = '\0'; /* the path of E again */
		if (!r && w->ops->leave)
			r = w->ops->leave(w->data, &e);
next:
		w->path[plen] = '\0';
	}
	free_names(names, n);
	closedir(d);
	return r;
}

int nf_walk_fd(struct nf_ctx *ctx, int dfd, const char *shown,
	       const struct nf_walk_ops *ops, void *data)
{
	struct walker *w;
	size_t len = strlen(shown);
	int fd, r;

	if (len >= PATH_MAX - 1)
		return nf_fail(ctx, NF_E_LIMIT, "'%.64s...' is too long a path",
			       shown);
	if ((fd = fcntl(dfd, F_DUPFD_CLOEXEC, 0)) < 0)
		return nf_fail(ctx, -errno, "cannot read '%s': %s", shown,
			       strerror(errno));
	/* on the heap: PATH_MAX bytes is more than a caller's stack wants */
	if (!(w = calloc(1, sizeof(*w)))) {
		close(fd);
		return -ENOMEM;
	}
	*w = (struct walker){ .ctx = ctx, .ops = ops, .data = data,
			      .rel_at = !len ? 0 : shown[len - 1] == '/' ? len
				      : len + 1 };
	memcpy(w->path, shown, len + 1);
	r = walk_dir(w, fd, NULL, len, 0);
	free(w);
	return r;
}

int nf_walk_tree(struct nf_ctx *ctx, const char *dir,
		 const struct nf_walk_ops *ops, void *data)
{
	char shown[PATH_MAX];
	size_t len = strlen(dir);
	int fd, r;

	if (len >= sizeof(shown))
		return nf_fail(ctx, NF_E_LIMIT, "'%.64s...' is too long a path",
			       dir);
	memcpy(shown, dir, len + 1);
	while (len > 1 && shown[len - 1] == '/')
		shown[--len] = '\0';
	/* DIR is the caller's to name, a link to a tree included */
	if ((fd = open(shown, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return nf_fail(ctx, -errno, "cannot read '%s': %s", shown,
			       strerror(errno));
	r = nf_walk_fd(ctx, fd, shown, ops, data);
	close(fd);
	return r;
}
