/* SPDX-License-Identifier: MIT */
/*
 * Facet apply: the helpers every facet uses to write into an image root,
 * and the driver that runs them.  Every path is resolved one component at
 * a time with openat(O_NOFOLLOW) from the root's dirfd, so neither ".."
 * nor a symlink planted in the tree can make a write land outside it.
 */
#include "internal.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define NF_PASSWD_MAX (1u << 20)

void nf_apply_header(struct nf_buf *b, const char *c, const char *facet)
{
	nf_buf_printf(b, "%s Written by nodeforge build (facet '%s') from the "
		      "resolved profile.\n%s Edit the profile, not this file: "
		      "the verifier checks it.\n", c, facet, c);
}

static int need_absolute(struct nf_apply *a, const char *path)
{
	if (!path || path[0] != '/')
		return nf_fail(a->ctx, NF_E_UNSAFE, "path '%s' in the image must "
			       "be absolute", path ? path : "(null)");
	return 0;
}

/* The directory holding the absolute PATH in the image, and its leaf;
 * creates parents when `create` */
static int walk_parent(struct nf_apply *a, const char *path, int create,
		       int *dirfd, char *leaf, size_t leafsz)
{
	int fd;

	if ((fd = need_absolute(a, path)))
		return fd;
	fd = nf_root_parent(a->ctx, a->rootfd, path, create ? NF_ROOT_CREATE : 0,
			    leaf, leafsz);
	if (fd < 0)
		return fd;
	*dirfd = fd;
	return 0;
}

int nf_apply_mkdir(struct nf_apply *a, const char *path, unsigned mode,
		   uid_t uid, gid_t gid)
{
	int fd;

	if ((fd = need_absolute(a, path)))
		return fd;
	fd = nf_root_opendir(a->ctx, a->rootfd, path, NF_ROOT_CREATE);
	if (fd < 0)
		return fd;
	if (fchmod(fd, mode) < 0 || fchown(fd, uid, gid) < 0) {
		int e = errno;

		close(fd);
		return nf_fail(a->ctx, -e, "cannot set mode/owner of '%s': %s",
			       path, strerror(e));
	}
	close(fd);
	return 0;
}

int nf_apply_write(struct nf_apply *a, const char *path, const void *data,
		   size_t len, unsigned mode, uid_t uid, gid_t gid)
{
	char leaf[256];
	int dfd, r;

	if ((r = walk_parent(a, path, 1, &dfd, leaf, sizeof(leaf))))
		return r;
	r = nf_root_write_in(a->ctx, dfd, leaf, path, data, len, mode,
			     (long)uid, (long)gid, 0);
	close(dfd);
	return r;
}

int nf_apply_write_buf(struct nf_apply *a, const char *path,
		       struct nf_buf *b, unsigned mode, uid_t uid, gid_t gid)
{
	int r;

	if (b->err)
		r = nf_fail(a->ctx, b->err, "cannot render '%s': %s", path,
			    nf_strerror(b->err));
	else
		r = nf_apply_write(a, path, b->s ? b->s : "", b->len, mode, uid,
				   gid);
	nf_buf_free(b);
	return r;
}

int nf_apply_symlink(struct nf_apply *a, const char *path, const char *target)
{
	char leaf[256];
	int dfd, r;

	if ((r = walk_parent(a, path, 1, &dfd, leaf, sizeof(leaf))))
		return r;
	if (unlinkat(dfd, leaf, 0) < 0 && errno != ENOENT) {
		r = -errno;
	} else if (symlinkat(target, dfd, leaf) < 0) {
		r = -errno;
	}
	close(dfd);
	if (r)
		return nf_fail(a->ctx, r, "cannot link '%s' in the image: %s",
			       path, strerror(-r));
	return 0;
}

int nf_apply_remove(struct nf_apply *a, const char *path)
{
	char leaf[256];
	unsigned m = nf_err_mark(a->ctx);
	int dfd, r;

	r = walk_parent(a, path, 0, &dfd, leaf, sizeof(leaf));
	if (r == -ENOENT) {
		nf_err_drop(a->ctx, m);
		return 0;
	}
	if (r)
		return r;
	r = unlinkat(dfd, leaf, 0) < 0 && errno != ENOENT ? -errno : 0;
	close(dfd);
	if (r)
		return nf_fail(a->ctx, r, "cannot remove '%s' from the image: %s",
			       path, strerror(-r));
	return 0;
}

int nf_apply_read(struct nf_apply *a, const char *path, size_t max,
		  char **buf, size_t *len)
{
	char leaf[256];
	unsigned m = nf_err_mark(a->ctx);
	int dfd, fd, r;

	/* -ENOENT without a message: the caller says whether a file the
	 * image lacks is a failure */
	if ((r = walk_parent(a, path, 0, &dfd, leaf, sizeof(leaf)))) {
		if (r == -ENOENT)
			nf_err_drop(a->ctx, m);
		return r;
	}
	fd = openat(dfd, leaf, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	close(dfd);
	if (fd < 0)
		return errno == ENOENT ? -ENOENT
			: nf_fail(a->ctx, -errno, "cannot read '%s' in the "
				  "image: %s", path, strerror(errno));
	r = nf_read_fd(fd, max, buf, len);
	close(fd);
	if (r == NF_E_LIMIT)
		return nf_fail(a->ctx, NF_E_LIMIT, "'%s' in the image is larger "
			       "than %zu bytes", path, max);
	if (r && r != -ENOMEM)
		return nf_fail(a->ctx, r, "cannot read '%s' in the image: %s",
			       path, strerror(-r));
	return r;
}

int nf_apply_exists(struct nf_apply *a, const char *path)
{
	char leaf[256];
	struct stat st;
	unsigned m = nf_err_mark(a->ctx);
	int dfd, r;

	r = walk_parent(a, path, 0, &dfd, leaf, sizeof(leaf));
	if (r) {
		nf_err_drop(a->ctx, m);
		return 0;
	}
	r = fstatat(dfd, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0;
	close(dfd);
	return r;
}

/* Look `name` up in a colon-separated database of the image (field 3:
 * uid or gid, field 4: primary gid) */
static int lookup_db(struct nf_apply *a, const char *file, const char *name,
		     unsigned long *id, unsigned long *gid)
{
	char *buf, *line, *save = NULL;
	size_t nlen = strlen(name);
	int r, found = -ENOENT;

	r = nf_apply_read(a, file, NF_PASSWD_MAX, &buf, NULL);
	if (r)
		return r;
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *f[5] = { 0 };
		char *p = line;

		if (strncmp(line, name, nlen) || line[nlen] != ':')
			continue;
		for (int i = 0; i < 5 && p; i++) {
			f[i] = p;
			p = strchr(p, ':');
			if (p)
				*p++ = '\0';
		}
		if (!f[2])
			break;
		*id = strtoul(f[2], NULL, 10);
		if (gid && f[3])
			*gid = strtoul(f[3], NULL, 10);
		found = 0;
		break;
	}
	free(buf);
	return found;
}

int nf_apply_user(struct nf_apply *a, const char *name, uid_t *uid, gid_t *gid)
{
	unsigned long u = 0, g = 0;
	int r;

	if (!strcmp(name, "root")) {
		*uid = 0;
		*gid = 0;
		return 0;
	}
	r = lookup_db(a, "/etc/passwd", name, &u, &g);
	if (r)
		return r;
	*uid = (uid_t)u;
	*gid = (gid_t)g;
	return 0;
}

int nf_apply_enable(struct nf_apply *a, const char *unit)
{
	static const char *const dirs[] = { "/etc/systemd/system",
					    "/usr/lib/systemd/system",
					    "/lib/systemd/system" };
	char name[128], link[256], target[256];
	const char *found = NULL;

	if (strchr(unit, '/') || !strcmp(unit, "..") || strlen(unit) > 100)
		return nf_fail(a->ctx, NF_E_INVALID, "unit name '%s' is not valid",
			       unit);
	snprintf(name, sizeof(name), "%s%s", unit,
		 strchr(unit, '.') ? "" : ".service");
	for (size_t i = 0; i < NF_ARRAY_SIZE(dirs); i++) {
		snprintf(target, sizeof(target), "%s/%s", dirs[i], name);
		if (nf_apply_exists(a, target)) {
			found = dirs[i];
			break;
		}
	}
	/* A unit that is not installed yet (a package that comes later or
	 * from an artifact) still gets its link: systemd ignores a dangling
	 * one, and the verifier reports the missing unit by name */
	if (!found)
		nf_log(a->ctx, NF_LOG_INFO, "unit '%s' is not in the image yet; "
		       "enabling it anyway", name);
	snprintf(target, sizeof(target), "%s/%s",
		 found ? found : a->el ? "/usr/lib/systemd/system"
				       : "/lib/systemd/system", name);
	snprintf(link, sizeof(link),
		 "/etc/systemd/system/multi-user.target.wants/%s", name);
	return nf_apply_symlink(a, link, target);
}

int nf_apply_has_daemon(const struct nf_apply *a, const char *daemon)
{
	return nf_profile_runs(a->prof, daemon);
}

int nf_apply_open_root(struct nf_ctx *ctx, const char *path, int *rootfd)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return nf_fail(ctx, -errno, "cannot open image root '%s': %s",
			       path, strerror(errno));
	*rootfd = fd;
	return 0;
}

/* An absolute path a unit file or a tmpfiles.d line holds as it is */
int nf_apply_path_ok(const char *p)
{
	return p && p[0] == '/' && strlen(p) < 512 && !strstr(p, "/../") &&
	       !strstr(p, "/./") && !strpbrk(p, " \t\n\"'\\%");
}

int nf_apply_unit(struct nf_apply *a, const char *name, struct nf_buf *b)
{
	char path[256], wants[320];
	int r;

	snprintf(path, sizeof(path), "/etc/systemd/system/%s", name);
	snprintf(wants, sizeof(wants),
		 "/etc/systemd/system/multi-user.target.wants/%s", name);
	if ((r = nf_apply_write_buf(a, path, b, 0644, 0, 0)))
		return r;
	return nf_apply_symlink(a, wants, path);
}
