/* SPDX-License-Identifier: MIT */
/*
 * Manifests against the world: drift of a live tree from its manifest
 * (nodeforge manifest check, ci baselines) and the difference between two
 * manifests (nodeforge diff).  Parsing and verification: lib/manifest.c.
 */
#include "internal.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

/* -------------------------------------------------------------- drift */

static void add_change(json_t *list, const char *path, const char *change,
		       json_t *expected, json_t *seen)
{
	json_t *o = json_pack("{s:s, s:s}", "path", path, "change", change);

	if (!o) {
		json_decref(expected);
		json_decref(seen);
		return;
	}
	if (expected)
		json_object_set_new(o, "expected", expected);
	if (seen)
		json_object_set_new(o, "seen", seen);
	json_array_append_new(list, o);
}

static const char *live_type(mode_t m)
{
	switch (m & S_IFMT) {
	case S_IFREG: return "file";
	case S_IFDIR: return "dir";
	case S_IFLNK: return "symlink";
	case S_IFCHR: return "chardev";
	case S_IFBLK: return "blockdev";
	case S_IFIFO: return "fifo";
	default: return "other";
	}
}

struct check {
	struct nf_ctx *ctx;
	json_t *index;   /* path -> entry */
	json_t *seen;    /* path -> true */
	json_t *drift;
	int rootfd;
};

static const char *jstr(const json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s ? s : "";
}

static int cmp_cstr(const void *a, const void *b);

/* Sorted names of the extended attributes of an open file */
static json_t *live_xattrs(int fd)
{
	static char list[64 * 1024];
	const char *names[NF_XATTR_MAX];
	ssize_t len = flistxattr(fd, list, sizeof(list));
	size_t n = 0;
	json_t *a = json_array();

	if (!a || len <= 0)
		return a;
	for (char *p = list; p < list + len && n < NF_XATTR_MAX;
	     p += strlen(p) + 1)
		names[n++] = p;
	qsort(names, n, sizeof(*names), cmp_cstr);
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_string(names[i]));
	return a;
}

static void compare_xattrs(struct check *c, int dfd, const char *name,
			   const char *path, const json_t *e, int dir)
{
	json_t *want = json_object_get(e, "xattrs"), *seen, *empty = NULL;
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC |
			O_NONBLOCK | (dir ? O_DIRECTORY : 0));

	if (fd < 0)
		return;
	seen = live_xattrs(fd);
	close(fd);
	if (!want)
		want = empty = json_array();
	if (seen && want && !json_equal(want, seen))
		add_change(c->drift, path, "xattrs", json_incref(want),
			   json_incref(seen));
	json_decref(seen);
	json_decref(empty);
}

static int compare_live(struct check *c, int dfd, const char *name,
			const char *path, const struct stat *st,
			const json_t *e)
{
	const char *type = jstr(e, "type");
	char mode[16];
	long long uid = json_integer_value(json_object_get(e, "uid"));
	long long gid = json_integer_value(json_object_get(e, "gid"));

	if (!strcmp(type, "hardlink")) {
		const json_t *t = json_object_get(c->index, jstr(e, "target"));
		struct stat ts;
		int fd;

		if (!S_ISREG(st->st_mode)) {
			add_change(c->drift, path, "type", json_string(type),
				   json_string(live_type(st->st_mode)));
			return 0;
		}
		/* Compare with the link target's recorded content */
		fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC |
			    O_NONBLOCK);
		if (t && fd >= 0 && fstat(fd, &ts) == 0) {
			char hex[NF_SHA256_HEX];
			unsigned long long size;

			if (!nf_sha256_fd(c->ctx, fd, path, hex, &size) &&
			    strcmp(hex, jstr(t, "sha256")))
				add_change(c->drift, path, "content",
					   json_string(jstr(t, "sha256")),
					   json_string(hex));
		}
		if (fd >= 0)
			close(fd);
	} else if (strcmp(type, live_type(st->st_mode))) {
		add_change(c->drift, path, "type", json_string(type),
			   json_string(live_type(st->st_mode)));
		return 0;
	}
	snprintf(mode, sizeof(mode), "%04o", (unsigned)(st->st_mode & 07777));
	if (!S_ISLNK(st->st_mode) &&
	    strtoul(jstr(e, "mode"), NULL, 8) != (st->st_mode & 07777))
		add_change(c->drift, path, "mode", json_string(jstr(e, "mode")),
			   json_string(mode));
	if (uid != (long long)st->st_uid || gid != (long long)st->st_gid)
		add_change(c->drift, path, "owner",
			   json_sprintf("%lld:%lld", uid, gid),
			   json_sprintf("%u:%u", st->st_uid, st->st_gid));
	if (!strcmp(type, "file") || !strcmp(type, "dir"))
		compare_xattrs(c, dfd, name, path, e, !strcmp(type, "dir"));
	if (!strcmp(type, "symlink")) {
		char t[PATH_MAX];
		ssize_t n = readlinkat(dfd, name, t, sizeof(t) - 1);

		t[n < 0 ? 0 : n] = '\0';
		if (strcmp(t, jstr(e, "target")))
			add_change(c->drift, path, "target",
				   json_string(jstr(e, "target")),
				   json_string(t));
	}
	if (!strcmp(type, "chardev") || !strcmp(type, "blockdev")) {
		char rdev[48];

		snprintf(rdev, sizeof(rdev), "%u:%u", major(st->st_rdev),
			 minor(st->st_rdev));
		if (strcmp(rdev, jstr(e, "rdev")))
			add_change(c->drift, path, "rdev",
				   json_string(jstr(e, "rdev")),
				   json_string(rdev));
	}
	if (!strcmp(type, "file")) {
		long long size = json_integer_value(json_object_get(e, "size"));
		char hex[NF_SHA256_HEX];
		unsigned long long got;
		int fd, r;

		if (size != (long long)st->st_size) {
			add_change(c->drift, path, "content",
				   json_string(jstr(e, "sha256")), NULL);
			return 0;
		}
		fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC |
			    O_NONBLOCK);
		if (fd < 0)
			return nf_fail(c->ctx, -errno, "cannot read '%s': %s",
				       path, strerror(errno));
		r = nf_sha256_fd(c->ctx, fd, path, hex, &got);
		close(fd);
		if (r)
			return r;
		if (strcmp(hex, jstr(e, "sha256")))
			add_change(c->drift, path, "content",
				   json_string(jstr(e, "sha256")),
				   json_string(hex));
	}
	return 0;
}

/* Each live entry against the manifest; a directory the manifest records
 * as something else is not descended into (its one change says it all) */
static int check_entry(void *data, const struct nf_walk_entry *e)
{
	struct check *c = data;
	const json_t *me;
	int r = 0;

	if (S_ISSOCK(e->st->st_mode))
		return 0;
	me = json_object_get(c->index, e->rel);
	if (!me) {
		add_change(c->drift, e->rel, "added", NULL,
			   json_string(live_type(e->st->st_mode)));
	} else {
		json_object_set_new(c->seen, e->rel, json_true());
		r = compare_live(c, e->dfd, e->name, e->rel, e->st, me);
	}
	if (!r && S_ISDIR(e->st->st_mode) && me &&
	    strcmp(jstr(me, "type"), "dir"))
		return NF_WALK_SKIP;
	return r;
}

/* no error callback: a directory the check cannot read fails the check
 * (what it holds is unknown), it is not reported as removed */
static const struct nf_walk_ops check_ops = { .enter = check_entry };

static int cmp_change(const void *a, const void *b)
{
	return strcmp(jstr(*(json_t *const *)a, "path"),
		      jstr(*(json_t *const *)b, "path"));
}

/* Sort changes by path (stable enough: changes of one path keep order
 * because qsort ties are resolved by the original index) */
static void sort_changes(json_t *list, size_t from)
{
	size_t n = json_array_size(list) - from;
	json_t **v;

	if (n < 2 || !(v = malloc(n * sizeof(*v))))
		return;
	for (size_t i = 0; i < n; i++)
		v[i] = json_incref(json_array_get(list, from + i));
	qsort(v, n, sizeof(*v), cmp_change);
	for (size_t i = 0; i < n; i++)
		json_array_set_new(list, from + i, v[i]);
	free(v);
}

int nf_manifest_check(struct nf_ctx *ctx, const json_t *manifest,
		      const char *root, json_t *drift)
{
	struct check c = { .ctx = ctx, .drift = drift };
	const json_t *entries = json_object_get(manifest, "entries"), *e;
	size_t i, from = json_array_size(drift);
	struct stat st;
	int r;

	c.rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (c.rootfd < 0)
		return nf_fail(ctx, -errno, "cannot open '%s': %s", root,
			       strerror(errno));
	c.index = json_object();
	c.seen = json_object();
	if (!c.index || !c.seen) {
		r = -ENOMEM;
		goto out;
	}
	json_array_foreach(entries, i, e)
		json_object_set(c.index, jstr(e, "path"), (json_t *)e);
	e = json_object_get(c.index, ".");
	if (e && fstat(c.rootfd, &st) == 0) {
		json_object_set_new(c.seen, ".", json_true());
		if ((r = compare_live(&c, c.rootfd, ".", ".", &st, e)))
			goto out;
	}
	r = nf_walk_fd(ctx, c.rootfd, "", &check_ops, &c);
	if (r)
		goto out;
	json_array_foreach(entries, i, e)
		if (!json_object_get(c.seen, jstr(e, "path")))
			add_change(drift, jstr(e, "path"), "removed",
				   json_string(jstr(e, "type")), NULL);
	sort_changes(drift, from);
out:
	json_decref(c.index);
	json_decref(c.seen);
	close(c.rootfd);
	return r;
}

/* --------------------------------------------------------------- diff */

static int same(const json_t *a, const json_t *b, const char *k)
{
	const json_t *x = json_object_get(a, k), *y = json_object_get(b, k);

	if (!x && !y)
		return 1;
	return x && y && json_equal((json_t *)x, (json_t *)y);
}

static json_t *get_or_null(const json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	return v ? json_incref(v) : json_null();
}

static int cmp_cstr(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int nf_manifest_diff(struct nf_ctx *ctx, const json_t *a, const json_t *b,
		     json_t *changes)
{
	json_t *ia = json_object(), *ib = json_object(), *e;
	const json_t *ea = json_object_get(a, "entries");
	const json_t *eb = json_object_get(b, "entries");
	size_t i, n = 0, na = json_array_size(ea), nb = json_array_size(eb);
	const char **paths = malloc((na + nb + 1) * sizeof(*paths));
	static const char *const fields[] = { "type", "mode", "sha256", "size",
					      "target", "rdev", "xattrs" };
	int r = 0;

	if (!ia || !ib || !paths) {
		r = -ENOMEM;
		goto out;
	}
	json_array_foreach(ea, i, e) {
		json_object_set(ia, jstr(e, "path"), e);
		paths[n++] = jstr(e, "path");
	}
	json_array_foreach(eb, i, e) {
		json_object_set(ib, jstr(e, "path"), e);
		paths[n++] = jstr(e, "path");
	}
	qsort(paths, n, sizeof(*paths), cmp_cstr);
	for (i = 0; i < n; i++) {
		const char *p = paths[i];
		const json_t *x, *y;

		if (i && !strcmp(p, paths[i - 1]))
			continue;
		x = json_object_get(ia, p);
		y = json_object_get(ib, p);
		if (!x) {
			add_change(changes, p, "added", NULL,
				   json_string(jstr(y, "type")));
			continue;
		}
		if (!y) {
			add_change(changes, p, "removed",
				   json_string(jstr(x, "type")), NULL);
			continue;
		}
		for (size_t k = 0; k < NF_ARRAY_SIZE(fields); k++) {
			const char *f = fields[k];

			if (same(x, y, f))
				continue;
			/* size changes are reported as content */
			if (!strcmp(f, "size") && !same(x, y, "sha256"))
				continue;
			add_change(changes, p,
				   !strcmp(f, "sha256") || !strcmp(f, "size")
					   ? "content" : f,
				   get_or_null(x, f), get_or_null(y, f));
			if (!strcmp(f, "type"))
				break;
		}
		if (!same(x, y, "uid") || !same(x, y, "gid"))
			add_change(changes, p, "owner",
				   json_sprintf("%lld:%lld",
					json_integer_value(json_object_get(x, "uid")),
					json_integer_value(json_object_get(x, "gid"))),
				   json_sprintf("%lld:%lld",
					json_integer_value(json_object_get(y, "uid")),
					json_integer_value(json_object_get(y, "gid"))));
	}
out:
	(void)ctx;
	free(paths);
	json_decref(ia);
	json_decref(ib);
	return r;
}
