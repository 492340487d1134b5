/* SPDX-License-Identifier: MIT */
/*
 * Safe unpacking.  libarchive only reads entries; every file is written
 * here, relative to the root dirfd, one path component at a time with
 * O_NOFOLLOW: an archive cannot write outside its root, through a symlink
 * it planted, or create device nodes unless asked.  Absolute names and ".."
 * are refused outright.  The data of a hard link (cpio carries it with the
 * last link) goes only into a regular file this unpack created, never into
 * a FIFO, a device node or a file that was there before.  nf_unpack()
 * extracts into a temporary directory next to the destination and renames
 * it into place only on success.
 */
#include "internal.h"

#include <dirent.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#define UNPACK_MAX_SIZE (64ULL << 30)
#define UNPACK_MAX_ENTRIES 10000000ULL
#define UNPACK_BUF (256 * 1024)
#define UNPACK_HOLE 4096  /* zero blocks this size become holes */

struct fixup {
	char *path;
	mode_t mode;
	unsigned long uid, gid;
	long long mtime;
};

/* A regular file this unpack created; an empty slot has ino 0 */
struct made {
	dev_t dev;
	ino_t ino;
};

struct unpack {
	struct nf_ctx *ctx;
	struct nf_areader *r;
	int rootfd;
	int devices;
	int skip_devices;
	int owners;       /* chown: only when running as root */
	unsigned long long max_size, max_entries, total, nentries;
	const char *cap_why;  /* how the default cap was chosen, or "" */
	char *buf;
	struct fixup *fix;
	size_t nfix, capfix;
	struct made *made;  /* open-addressing set, capmade a power of two */
	size_t nmade, capmade;
};

/* Normalize an archive name into "a/b/c" (no "./", no "//"); "" is the
 * root.  Refuses absolute names and "..". */
static int clean_name(struct nf_ctx *ctx, const char *name, char *out,
		      size_t outsz)
{
	size_t n = 0;
	const char *p = name;

	if (name[0] == '/')
		return nf_fail(ctx, NF_E_UNSAFE,
			       "refusing absolute path '%s' in archive", name);
	while (*p) {
		const char *e = strchr(p, '/');
		size_t len = e ? (size_t)(e - p) : strlen(p);

		if (len == 2 && p[0] == '.' && p[1] == '.')
			return nf_fail(ctx, NF_E_UNSAFE,
				       "refusing path with '..' in archive: '%s'",
				       name);
		if (len > NAME_MAX)
			return nf_fail(ctx, NF_E_LIMIT,
				       "path component too long in '%s'", name);
		if (len && !(len == 1 && p[0] == '.')) {
			if (n + len + 2 > outsz)
				return nf_fail(ctx, NF_E_LIMIT,
					       "path too long in archive: '%s'",
					       name);
			if (n)
				out[n++] = '/';
			memcpy(out + n, p, len);
			n += len;
		}
		p += len;
		while (*p == '/')
			p++;
	}
	out[n] = '\0';
	return 0;
}

/* Open the directory that holds `rel` ("a/b/c" -> fd of a/b) and point
 * *base at the last component.  Intermediate directories are created when
 * `create`; a symlink or non-directory on the way is refused. */
static int open_parent(struct unpack *u, char *rel, int create, int *pfd,
		       const char **base)
{
	int cur = u->rootfd, depth = 0;
	char *p = rel, *slash;

	while ((slash = strchr(p, '/'))) {
		int fd;

		*slash = '\0';
		if (++depth > NF_WALK_DEPTH) {
			*slash = '/';
			if (cur != u->rootfd)
				close(cur);
			return nf_fail(u->ctx, NF_E_LIMIT,
				       "'%s' is nested too deep", rel);
		}
		fd = openat(cur, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
			    O_CLOEXEC);
		if (fd < 0 && errno == ENOENT && create) {
			if (mkdirat(cur, p, 0755) < 0 && errno != EEXIST)
				goto fail;
			fd = openat(cur, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
				    O_CLOEXEC);
		}
		if (fd < 0)
			goto fail;
		if (cur != u->rootfd)
			close(cur);
		cur = fd;
		*slash = '/';
		p = slash + 1;
	}
	*pfd = cur;
	*base = p;
	return 0;
fail:
	{
		int e = errno, plen = (int)(slash - rel);

		*slash = '/';
		if (cur != u->rootfd)
			close(cur);
		if (e == ELOOP || e == ENOTDIR)
			return nf_fail(u->ctx, NF_E_UNSAFE,
				       "refusing to write '%s' through symlink "
				       "or non-directory '%.*s'", rel, plen,
				       rel);
		return nf_fail(u->ctx, -e, "cannot open directory of '%s': %s",
			       rel, strerror(e));
	}
}

static void close_parent(struct unpack *u, int pfd)
{
	if (pfd != u->rootfd)
		close(pfd);
}

/* Make room for a new non-directory: remove what is there (never a
 * non-empty directory) */
static int clear_slot(struct unpack *u, int pfd, const char *base,
		      const char *path)
{
	struct stat st;

	if (fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0
		       : nf_fail(u->ctx, -errno, "cannot stat '%s': %s", path,
				 strerror(errno));
	if (unlinkat(pfd, base, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) < 0)
		return nf_fail(u->ctx, -errno, "cannot replace '%s': %s", path,
			       strerror(errno));
	return 0;
}

static int set_xattrs(struct unpack *u, int fd, const struct nf_aentry *e,
		      const char *path)
{
	for (size_t i = 0; i < e->nxattr; i++) {
		if (e->xattr_sizes[i] > NF_XATTR_VALUE_MAX)
			return nf_fail(u->ctx, NF_E_LIMIT,
				       "extended attribute '%s' of '%s' is too "
				       "large", e->xattr_names[i], path);
		if (fsetxattr(fd, e->xattr_names[i], e->xattr_values[i],
			      e->xattr_sizes[i], 0) < 0) {
			if (errno == ENOTSUP || errno == EPERM) {
				nf_log(u->ctx, NF_LOG_WARN,
				       "cannot set extended attribute '%s' of "
				       "'%s': %s", e->xattr_names[i], path,
				       strerror(errno));
				continue;
			}
			return nf_fail(u->ctx, -errno,
				       "cannot set extended attribute '%s' of "
				       "'%s': %s", e->xattr_names[i], path,
				       strerror(errno));
		}
	}
	return 0;
}

/* Owner, then mode (chown clears set-id bits), then mtime */
static int finish_fd(struct unpack *u, int fd, mode_t mode, unsigned long uid,
		     unsigned long gid, long long mtime, const char *path)
{
	struct timespec ts[2] = { { 0, UTIME_OMIT }, { (time_t)mtime, 0 } };

	if (u->owners && fchown(fd, (uid_t)uid, (gid_t)gid) < 0)
		return nf_fail(u->ctx, -errno, "cannot chown '%s': %s", path,
			       strerror(errno));
	if (fchmod(fd, mode & 07777) < 0 || futimens(fd, ts) < 0)
		return nf_fail(u->ctx, -errno, "cannot set mode of '%s': %s",
			       path, strerror(errno));
	return 0;
}

static int all_zero(const char *p, size_t n)
{
	static const char zero[UNPACK_HOLE];

	return !memcmp(p, zero, n);
}

/* An entry's data; blocks of zeros (a sparse file's holes, or a stream
 * of zeros) are skipped with lseek, so they stay holes on disk and only
 * the data counts against the size cap */
static int write_data(struct unpack *u, int fd, const char *path)
{
	off_t off = 0;
	int hole = 0;

	for (;;) {
		ssize_t n = nf_areader_data(u->r, u->buf, UNPACK_BUF);
		const char *p = u->buf;

		if (n < 0)
			return (int)n;
		if (n == 0)
			break;
		while (n > 0) {
			size_t k = (size_t)n < UNPACK_HOLE ? (size_t)n : UNPACK_HOLE;
			ssize_t w;

			if (k == UNPACK_HOLE && all_zero(p, k)) {
				off += (off_t)k;
				p += k;
				n -= (ssize_t)k;
				hole = 1;
				continue;
			}
			u->total += k;
			if (u->total > u->max_size)
				return nf_fail(u->ctx, NF_E_LIMIT,
					       "archive content exceeds %llu "
					       "bytes%s at '%s'", u->max_size,
					       u->cap_why, path);
			w = pwrite(fd, p, k, off);
			if (w < 0) {
				if (errno == EINTR)
					continue;
				return nf_fail(u->ctx, -errno,
					       "cannot write '%s': %s", path,
					       strerror(errno));
			}
			off += w;
			p += w;
			n -= w;
			hole = 0;
		}
	}
	/* a file that ends in a hole gets its length */
	if (hole && ftruncate(fd, off) < 0)
		return nf_fail(u->ctx, -errno, "cannot write '%s': %s", path,
			       strerror(errno));
	return 0;
}

static int add_fixup(struct unpack *u, const char *path,
		     const struct nf_aentry *e)
{
	struct fixup *f;

	if (u->nfix == u->capfix) {
		size_t ncap = u->capfix ? u->capfix * 2 : 64;
		struct fixup *nv = realloc(u->fix, ncap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		u->fix = nv;
		u->capfix = ncap;
	}
	f = &u->fix[u->nfix];
	if (!(f->path = nf_strdup(path)))
		return -ENOMEM;
	f->mode = e->mode;
	f->uid = e->uid;
	f->gid = e->gid;
	f->mtime = e->mtime;
	u->nfix++;
	return 0;
}

static size_t made_slot(const struct made *set, size_t cap, dev_t dev,
			ino_t ino)
{
	size_t i = (size_t)((ino * 0x9E3779B97F4A7C15ULL) ^ dev) & (cap - 1);

	while (set[i].ino && (set[i].ino != ino || set[i].dev != dev))
		i = (i + 1) & (cap - 1);
	return i;
}

static int add_made(struct unpack *u, int fd, const char *path)
{
	struct stat st;
	size_t i;

	if (fstat(fd, &st) < 0)
		return nf_fail(u->ctx, -errno, "cannot stat '%s': %s", path,
			       strerror(errno));
	if (2 * (u->nmade + 1) > u->capmade) {
		size_t ncap = u->capmade ? 2 * u->capmade : 1024;
		struct made *nv = calloc(ncap, sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		for (size_t k = 0; k < u->capmade; k++)
			if (u->made[k].ino)
				nv[made_slot(nv, ncap, u->made[k].dev,
					     u->made[k].ino)] = u->made[k];
		free(u->made);
		u->made = nv;
		u->capmade = ncap;
	}
	i = made_slot(u->made, u->capmade, st.st_dev, st.st_ino);
	if (!u->made[i].ino) {
		u->made[i] = (struct made){ st.st_dev, st.st_ino };
		u->nmade++;
	}
	return 0;
}

static int made_here(const struct unpack *u, const struct stat *st)
{
	return S_ISREG(st->st_mode) && st->st_ino && u->capmade &&
	       u->made[made_slot(u->made, u->capmade, st->st_dev,
				 st->st_ino)].ino;
}

static int do_dir(struct unpack *u, int pfd, const char *base,
		  const char *path, const struct nf_aentry *e)
{
	struct stat st;
	int fd, r;

	if (fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    !S_ISDIR(st.st_mode) && (r = clear_slot(u, pfd, base, path)))
		return r;
	if (mkdirat(pfd, base, 0700) < 0 && errno != EEXIST)
		return nf_fail(u->ctx, -errno, "cannot create '%s': %s", path,
			       strerror(errno));
	fd = openat(pfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return nf_fail(u->ctx, -errno, "cannot open '%s': %s", path,
			       strerror(errno));
	r = set_xattrs(u, fd, e, path);
	close(fd);
	return r ? r : add_fixup(u, path, e);
}

static int do_file(struct unpack *u, int pfd, const char *base,
		   const char *path, const struct nf_aentry *e)
{
	int fd, r;

	if ((r = clear_slot(u, pfd, base, path)))
		return r;
	fd = openat(pfd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
		    O_CLOEXEC, 0600);
	if (fd < 0)
		return nf_fail(u->ctx, -errno, "cannot create '%s': %s", path,
			       strerror(errno));
	r = add_made(u, fd, path);
	if (!r)
		r = write_data(u, fd, path);
	/* xattrs after chown: a chown drops security.capability */
	if (!r)
		r = finish_fd(u, fd, e->mode, e->uid, e->gid, e->mtime, path);
	if (!r)
		r = set_xattrs(u, fd, e, path);
	close(fd);
	return r;
}

static int do_hardlink(struct unpack *u, int pfd, const char *base,
		       const char *path, const struct nf_aentry *e)
{
	char tgt[PATH_MAX];
	const char *tbase;
	struct stat st, now;
	int tfd, r, fd;

	if ((r = clean_name(u->ctx, e->hardlink, tgt, sizeof(tgt))))
		return r;
	if (!*tgt)
		return nf_fail(u->ctx, NF_E_UNSAFE,
			       "refusing hard link '%s' to the root", path);
	if ((r = open_parent(u, tgt, 0, &tfd, &tbase)))
		return r;
	/* Data of a later link (cpio): checked before anything is opened,
	 * since opening a FIFO blocks and opening a device acts on it */
	if (e->size > 0 && (fstatat(tfd, tbase, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
			    !made_here(u, &st)))
		r = nf_fail(u->ctx, NF_E_UNSAFE, "refusing to write the data "
			    "of hard link '%s' into '%s': not a regular file "
			    "unpacked from this archive", path, tgt);
	if (!r && !(r = clear_slot(u, pfd, base, path)) &&
	    linkat(tfd, tbase, pfd, base, 0) < 0)
		r = nf_fail(u->ctx, -errno, "cannot link '%s' to '%s': %s",
			    path, e->hardlink, strerror(errno));
	close_parent(u, tfd);
	if (r || e->size <= 0)
		return r;
	fd = openat(pfd, base, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY |
		    O_CLOEXEC);
	if (fd < 0)
		return nf_fail(u->ctx, errno == ELOOP ? NF_E_UNSAFE : -errno,
			       "cannot write hard link '%s': %s", path,
			       strerror(errno));
	if (fstat(fd, &now) < 0 || now.st_dev != st.st_dev ||
	    now.st_ino != st.st_ino || !S_ISREG(now.st_mode))
		r = nf_fail(u->ctx, NF_E_UNSAFE, "refusing to write the data "
			    "of hard link '%s': it changed under the unpack",
			    path);
	else if (ftruncate(fd, 0) < 0)
		r = nf_fail(u->ctx, -errno, "cannot write hard link '%s': %s",
			    path, strerror(errno));
	else
		r = write_data(u, fd, path);
	close(fd);
	return r;
}

static int do_entry(struct unpack *u, const struct nf_aentry *e)
{
	char path[PATH_MAX];
	const char *base;
	int pfd, r;
	mode_t type = e->mode & S_IFMT;

	if (++u->nentries > u->max_entries)
		return nf_fail(u->ctx, NF_E_LIMIT,
			       "archive has more than %llu entries",
			       u->max_entries);
	if ((r = clean_name(u->ctx, e->path, path, sizeof(path))))
		return r;
	if (e->size > 0 && (unsigned long long)e->size > u->max_size - u->total)
		return nf_fail(u->ctx, NF_E_LIMIT,
			       "entry '%s' (%lld bytes) exceeds the size cap "
			       "of %llu bytes%s", e->path, e->size, u->max_size,
			       u->cap_why);
	if (!*path) {
		if (type != S_IFDIR && !e->hardlink)
			return nf_fail(u->ctx, NF_E_UNSAFE,
				       "refusing root entry that is not a "
				       "directory");
		/* The target's own mode and owner are not the archive's to
		 * set: a root entry of 07777 would leave DIR world-writable
		 * and set-id */
		if (!e->hardlink)
			return 0;
	}
	if ((type == S_IFCHR || type == S_IFBLK) && !u->devices &&
	    u->skip_devices)
		return 0;
	if ((type == S_IFCHR || type == S_IFBLK) && !u->devices)
		return nf_fail(u->ctx, NF_E_UNSAFE,
			       "archive holds device node '%s': refusing "
			       "(use --devices)", e->path);
	if ((r = open_parent(u, path, 1, &pfd, &base)))
		return r;
	if (!*path) {
		r = nf_fail(u->ctx, NF_E_UNSAFE, "refusing hard link at the root");
	} else if (e->hardlink) {
		r = do_hardlink(u, pfd, base, path, e);
	} else if (type == S_IFDIR) {
		r = do_dir(u, pfd, base, path, e);
	} else if (type == S_IFREG) {
		r = do_file(u, pfd, base, path, e);
	} else if (type == S_IFLNK) {
		struct timespec ts[2] = { { 0, UTIME_OMIT },
					  { (time_t)e->mtime, 0 } };

		if (!e->symlink || !*e->symlink)
			r = nf_fail(u->ctx, NF_E_PARSE,
				    "symlink '%s' has no target", e->path);
		else if (!(r = clear_slot(u, pfd, base, path)) &&
			 symlinkat(e->symlink, pfd, base) < 0)
			r = nf_fail(u->ctx, -errno, "cannot create '%s': %s",
				    path, strerror(errno));
		if (!r && u->owners &&
		    fchownat(pfd, base, (uid_t)e->uid, (gid_t)e->gid,
			     AT_SYMLINK_NOFOLLOW) < 0)
			r = nf_fail(u->ctx, -errno, "cannot chown '%s': %s",
				    path, strerror(errno));
		if (!r)
			utimensat(pfd, base, ts, AT_SYMLINK_NOFOLLOW);
	} else if (type == S_IFCHR || type == S_IFBLK || type == S_IFIFO) {
		dev_t dev = makedev(e->rdev_major, e->rdev_minor);

		if (!(r = clear_slot(u, pfd, base, path)) &&
		    mknodat(pfd, base, type | 0600, type == S_IFIFO ? 0 : dev) < 0)
			r = nf_fail(u->ctx, -errno, "cannot create '%s': %s",
				    path, strerror(errno));
		if (!r) {
			int fd = openat(pfd, base, O_PATH | O_NOFOLLOW |
					O_CLOEXEC);
			struct timespec ts[2] = { { 0, UTIME_OMIT },
						  { (time_t)e->mtime, 0 } };

			if (fd < 0 ||
			    (u->owners &&
			     fchownat(pfd, base, (uid_t)e->uid, (gid_t)e->gid,
				      AT_SYMLINK_NOFOLLOW) < 0) ||
			    fchmodat(pfd, base, e->mode & 07777, 0) < 0)
				r = nf_fail(u->ctx, -errno,
					    "cannot set owner or mode of '%s': %s",
					    path, strerror(errno));
			else
				utimensat(pfd, base, ts, AT_SYMLINK_NOFOLLOW);
			if (fd >= 0)
				close(fd);
		}
	} else {
		r = nf_fail(u->ctx, NF_E_UNSUPPORTED,
			    "entry '%s' has an unsupported type (mode %o)",
			    e->path, (unsigned)e->mode);
	}
	close_parent(u, pfd);
	return r;
}

/* Directory modes, owners and mtimes last: a read-only directory must not
 * block its own content, and creating content changes mtimes */
static int apply_fixups(struct unpack *u)
{
	for (size_t i = u->nfix; i-- > 0;) {
		struct fixup *f = &u->fix[i];
		const char *base;
		int pfd, fd, r;

		if ((r = open_parent(u, f->path, 0, &pfd, &base)))
			return r;
		fd = openat(pfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
			    O_CLOEXEC);
		close_parent(u, pfd);
		if (fd < 0) {
			/* Replaced by a later non-directory entry */
			continue;
		}
		r = finish_fd(u, fd, f->mode, f->uid, f->gid, f->mtime,
			      f->path);
		close(fd);
		if (r)
			return r;
	}
	return 0;
}

static int unpack_run(struct nf_ctx *ctx, struct nf_areader *r, int rootfd,
		      const struct nf_unpack_opts *o)
{
	struct unpack u = {
		.ctx = ctx, .r = r, .rootfd = rootfd,
		.devices = o && o->devices,
		.skip_devices = o && o->skip_devices,
		.owners = geteuid() == 0,
		.max_size = o && o->max_size ? o->max_size : UNPACK_MAX_SIZE,
		.max_entries = o && o->max_entries ? o->max_entries
						   : UNPACK_MAX_ENTRIES,
	};
	struct nf_aentry e;
	struct statvfs vfs;
	int k;

	/* The default cap: 90 % of the free space where DIR is, so a small
	 * archive that inflates cannot fill the file system */
	u.cap_why = "";
	if (!(o && o->max_size) && fstatvfs(rootfd, &vfs) == 0) {
		unsigned long long fr = (unsigned long long)vfs.f_bavail *
					vfs.f_frsize / 10 * 9;

		if (fr < u.max_size) {
			u.max_size = fr;
			u.cap_why = " (90% of the free space of the target; "
				    "--max-size sets another)";
		}
	}
	if (!(u.buf = malloc(UNPACK_BUF)))
		return -ENOMEM;
	while ((k = nf_areader_next(r, &e)) > 0)
		if ((k = do_entry(&u, &e)))
			break;
	if (!k)
		k = apply_fixups(&u);
	for (size_t i = 0; i < u.nfix; i++)
		free(u.fix[i].path);
	free(u.fix);
	free(u.made);
	free(u.buf);
	return k;
}

int nf_unpack_mem(struct nf_ctx *ctx, const void *buf, size_t len, int dirfd,
		  const struct nf_unpack_opts *opts)
{
	struct nf_areader *r;
	int k = nf_areader_open_mem(ctx, buf, len, &r);

	if (k)
		return k;
	k = unpack_run(ctx, r, dirfd, opts);
	nf_areader_free(r);
	return k;
}

/* Removal goes on past what it cannot remove and returns the first
 * error: as much of the tree as can go, goes */
struct rm {
	int err;
};

/* A directory made writable and searchable, whatever mode the tree gave
 * it; a failure shows in the open or the removal that follows */
static void rm_make_dir_ours(int dfd, const char *name)
{
	int r = fchmodat(dfd, name, 0700, 0);

	(void)r;
}

static int rm_enter(void *data, const struct nf_walk_entry *e)
{
	struct rm *rm = data;

	if (S_ISDIR(e->st->st_mode))
		rm_make_dir_ours(e->dfd, e->name);
	else if (unlinkat(e->dfd, e->name, 0) < 0 && errno != ENOENT &&
		 !rm->err)
		rm->err = -errno;
	return 0;
}

static int rm_leave(void *data, const struct nf_walk_entry *e)
{
	struct rm *rm = data;

	if (unlinkat(e->dfd, e->name, AT_REMOVEDIR) < 0 && !rm->err)
		rm->err = -errno;
	return 0;
}

static int rm_error(void *data, const struct nf_walk_entry *e, int err,
		    const char *why)
{
	struct rm *rm = data;

	(void)e;
	(void)why;
	if (err != -ENOENT && !rm->err)
		rm->err = err;
	return 0;
}

static const struct nf_walk_ops rm_ops = { .enter = rm_enter,
					   .leave = rm_leave,
					   .error = rm_error };

int nf_rm_tree_at(int dfd, const char *name)
{
	struct rm rm = { 0 };
	struct stat st;
	int fd, r;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(st.st_mode))
		return unlinkat(dfd, name, 0) < 0 ? -errno : 0;
	rm_make_dir_ours(dfd, name);
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = nf_walk_fd(NULL, fd, name, &rm_ops, &rm);
	close(fd);
	if (!r)
		r = rm.err;
	if (unlinkat(dfd, name, AT_REMOVEDIR) < 0 && !r)
		r = -errno;
	return r;
}

int nf_unpack(struct nf_ctx *ctx, const char *archive, const char *dir,
	      const struct nf_unpack_opts *opts)
{
	char *dcopy = nf_strdup(dir), *bcopy = nf_strdup(dir), *tmp = NULL;
	const char *parent, *base;
	struct nf_areader *r = NULL;
	int pfd = -1, afd = -1, rootfd = -1, k;
	struct stat st;

	if (!dcopy || !bcopy) {
		k = -ENOMEM;
		goto out;
	}
	parent = dirname(dcopy);
	base = basename(bcopy);
	if (!*base || !strcmp(base, "/") || !strcmp(base, ".") ||
	    !strcmp(base, "..")) {
		k = nf_fail(ctx, NF_E_INVALID, "cannot unpack into '%s'", dir);
		goto out;
	}
	if (lstat(dir, &st) == 0) {
		DIR *d;
		struct dirent *de;
		int empty = 1;

		if (!S_ISDIR(st.st_mode)) {
			k = nf_fail(ctx, -EEXIST,
				    "'%s' exists and is not a directory", dir);
			goto out;
		}
		if ((d = opendir(dir))) {
			while ((de = readdir(d)))
				if (strcmp(de->d_name, ".") &&
				    strcmp(de->d_name, ".."))
					empty = 0;
			closedir(d);
		}
		if (!empty) {
			k = nf_fail(ctx, -ENOTEMPTY,
				    "'%s' exists and is not empty", dir);
			goto out;
		}
	}
	afd = open(archive, O_RDONLY | O_CLOEXEC);
	if (afd < 0) {
		k = nf_fail(ctx, -errno, "cannot read '%s': %s", archive,
			    strerror(errno));
		goto out;
	}
	pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (pfd < 0) {
		k = nf_fail(ctx, -errno, "cannot open '%s': %s", parent,
			    strerror(errno));
		goto out;
	}
	tmp = nf_asprintf("%s/.%s.unpack.XXXXXX", parent, base);
	if (!tmp) {
		k = -ENOMEM;
		goto out;
	}
	if (!mkdtemp(tmp)) {
		k = nf_fail(ctx, -errno, "cannot create a directory next to "
			    "'%s': %s", dir, strerror(errno));
		free(tmp);
		tmp = NULL;
		goto out;
	}
	/* mkdtemp makes it 0700: the unpacked root is a tree others read */
	if (fchmodat(AT_FDCWD, tmp, 0755, 0) < 0) {
		k = nf_fail(ctx, -errno, "cannot set the mode of '%s': %s", tmp,
			    strerror(errno));
		goto out;
	}
	rootfd = open(tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (rootfd < 0) {
		k = nf_fail(ctx, -errno, "cannot open '%s': %s", tmp,
			    strerror(errno));
		goto out;
	}
	if ((k = nf_areader_open_fd(ctx, afd, &r)))
		goto out;
	if ((k = unpack_run(ctx, r, rootfd, opts))) {
		char msg[sizeof(ctx->errmsg)];

		snprintf(msg, sizeof(msg), "%s", nf_errmsg(ctx));
		nf_fail(ctx, k, "cannot unpack '%s': %s", archive, msg);
		goto out;
	}
	if (syncfs(rootfd) < 0 || rename(tmp, dir) < 0) {
		k = nf_fail(ctx, -errno, "cannot move the unpacked tree to "
			    "'%s': %s", dir, strerror(errno));
		goto out;
	}
	free(tmp);
	tmp = NULL;
	fsync(pfd);
out:
	nf_areader_free(r);
	if (rootfd >= 0)
		close(rootfd);
	if (tmp) {
		nf_rm_tree_at(AT_FDCWD, tmp);
		free(tmp);
	}
	if (pfd >= 0)
		close(pfd);
	if (afd >= 0)
		close(afd);
	free(dcopy);
	free(bcopy);
	return k;
}
