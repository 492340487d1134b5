/* SPDX-License-Identifier: MIT */
/*
 * Work inside a root directory: an image being built, a node's root being
 * enrolled, a disk being installed.  Every path is walked from the root's
 * fd one component at a time with O_NOFOLLOW, so a symlink planted in the
 * root (by its packages, or by whoever owns it) can never carry a write,
 * a mkdir or a read outside it; '.', '..' and empty components are
 * refused before anything is created.  Files are replaced, never written
 * in place: a temporary file beside the target, mode and owner set, then
 * renamed over it, so a reader sees the old file or the new one and a
 * symlink at the target is replaced, not followed.
 *
 * This is the one place nodeforge does this: the apply step, the secret
 * writers, module signing and the disk installer all go through it.
 */
#include "internal.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#ifdef __has_include
#if __has_include(<linux/openat2.h>)
#include <linux/openat2.h>
#define NF_HAVE_OPENAT2 1
#endif
#endif

/* Refuse a path with an empty, '.' or '..' component (leading slashes
 * are allowed: paths are relative to the root either way) */
static int check_components(struct nf_ctx *ctx, const char *path)
{
	const char *p = path, *end;

	if (strlen(path) >= PATH_MAX)
		return nf_fail(ctx, NF_E_LIMIT, "path '%.64s...' is longer than "
			       "%d bytes", path, PATH_MAX - 1);
	while (*p == '/')
		p++;
	for (;;) {
		size_t n;

		end = strchr(p, '/');
		n = end ? (size_t)(end - p) : strlen(p);
		if (n == 0 || (n == 1 && p[0] == '.') ||
		    (n == 2 && p[0] == '.' && p[1] == '.'))
			return nf_fail(ctx, NF_E_UNSAFE, "path '%s' has an empty, "
				       "'.' or '..' component", path);
		if (n > NAME_MAX)
			return nf_fail(ctx, NF_E_LIMIT, "path '%s' has a component "
				       "longer than %d bytes", path, NAME_MAX);
		if (!end)
			return 0;
		p = end + 1;
	}
}

/* Open the directory `name` in dfd, creating it when asked; never through
 * a symlink.  `path` is only for the messages. */
static int open_component(struct nf_ctx *ctx, int dfd, const char *name,
			  int flags, const char *path)
{
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
			O_CLOEXEC);

	if (fd < 0 && errno == ENOENT && (flags & NF_ROOT_CREATE)) {
		int made = mkdirat(dfd, name, 0755) == 0;

		if (!made && errno != EEXIST)
			return nf_fail(ctx, -errno, "cannot create '%s' in '%s': "
				       "%s", name, path, strerror(errno));
		fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
			    O_CLOEXEC);
		/* explicit mode, whatever the umask */
		if (made && fd >= 0)
			(void)fchmod(fd, 0755);
	}
	if (fd >= 0)
		return fd;
	/* O_DIRECTORY|O_NOFOLLOW on a symlink fails with ELOOP or ENOTDIR */
	if (errno == ELOOP || errno == ENOTDIR)
		return nf_fail(ctx, NF_E_UNSAFE, "'%s': component '%s' is a "
			       "symlink or not a directory", path, name);
	if (errno == ENOENT)
		return nf_fail(ctx, -ENOENT, "'%s': '%s' does not exist", path,
			       name);
	return nf_fail(ctx, -errno, "cannot open '%s' in '%s': %s", name, path,
		       strerror(errno));
}

/* Walk `n` bytes of `path` (its directory part) from rootfd */
static int walk(struct nf_ctx *ctx, int rootfd, const char *path, size_t n,
		int flags)
{
	char comp[NAME_MAX + 1];
	const char *p = path, *end = path + n;
	int fd = dup(rootfd);

	if (fd < 0)
		return nf_fail(ctx, -errno, "cannot open the root: %s",
			       strerror(errno));
	while (p < end) {
		const char *slash;
		size_t len;
		int nfd;

		while (p < end && *p == '/')
			p++;
		if (p >= end)
			break;
		slash = memchr(p, '/', (size_t)(end - p));
		len = (size_t)((slash ? slash : end) - p);
		memcpy(comp, p, len); /* len <= NAME_MAX: check_components */
		comp[len] = '\0';
		nfd = open_component(ctx, fd, comp, flags, path);
		close(fd);
		if (nfd < 0)
			return nfd;
		fd = nfd;
		p += len;
	}
	return fd;
}

int nf_root_opendir(struct nf_ctx *ctx, int rootfd, const char *dir,
		    int flags)
{
	const char *p = dir;
	int r;

	while (*p == '/')
		p++;
	if (*p && (r = check_components(ctx, dir)))
		return r;
	if (!*p) {
		r = dup(rootfd);
		return r < 0 ? nf_fail(ctx, -errno, "cannot open the root: %s",
				       strerror(errno)) : r;
	}
	return walk(ctx, rootfd, dir, strlen(dir), flags);
}

int nf_root_parent(struct nf_ctx *ctx, int rootfd, const char *path,
		   int flags, char *leaf, size_t leafsz)
{
	const char *slash;
	int r;

	if ((r = check_components(ctx, path)))
		return r;
	slash = strrchr(path, '/');
	slash = slash ? slash + 1 : path;
	if (strlen(slash) >= leafsz)
		return nf_fail(ctx, NF_E_LIMIT, "file name in '%s' is too long",
			       path);
	snprintf(leaf, leafsz, "%s", slash);
	return walk(ctx, rootfd, path, (size_t)(slash - path), flags);
}

int nf_root_write_in(struct nf_ctx *ctx, int dfd, const char *leaf,
		     const char *shown, const void *data, size_t len,
		     unsigned mode, long uid, long gid, int flags)
{
	char tmp[NAME_MAX + 1];
	uint8_t rnd[6];
	int fd, r;

	if (strlen(leaf) > NAME_MAX - 21)
		return nf_fail(ctx, NF_E_LIMIT, "file name of '%s' is too long",
			       shown);
	if ((r = nf_random_bytes(ctx, rnd, sizeof(rnd))))
		return r;
	snprintf(tmp, sizeof(tmp), ".%s.%02x%02x%02x%02x%02x%02x.nf-tmp", leaf,
		 rnd[0], rnd[1], rnd[2], rnd[3], rnd[4], rnd[5]);
	/* created 0600: nobody else can open it before its mode is set */
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
		    O_CLOEXEC, 0600);
	if (fd < 0)
		return nf_fail(ctx, -errno, "cannot write '%s': %s", shown,
			       strerror(errno));
	r = 0;
	if ((uid >= 0 || gid >= 0) &&
	    fchown(fd, uid >= 0 ? (uid_t)uid : (uid_t)-1,
		   gid >= 0 ? (gid_t)gid : (gid_t)-1) < 0)
		r = -errno;
	if (!r)
		r = nf_write_full(fd, data, len);
	if (!r && fchmod(fd, mode) < 0)
		r = -errno;
	if (!r && (flags & NF_ROOT_FSYNC) && fsync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && !r)
		r = -errno;
	if (!r && renameat(dfd, tmp, dfd, leaf) < 0)
		r = -errno;
	if (!r && (flags & NF_ROOT_FSYNC) && fsync(dfd) < 0)
		r = -errno;
	if (r) {
		unlinkat(dfd, tmp, 0);
		return nf_fail(ctx, r, "cannot write '%s': %s", shown,
			       strerror(-r));
	}
	return 0;
}

int nf_root_write(struct nf_ctx *ctx, int rootfd, const char *path,
		  const void *data, size_t len, unsigned mode, long uid,
		  long gid, int flags)
{
	char leaf[NAME_MAX + 1];
	int dfd = nf_root_parent(ctx, rootfd, path, flags, leaf, sizeof(leaf));
	int r;

	if (dfd < 0)
		return dfd;
	r = nf_root_write_in(ctx, dfd, leaf, path, data, len, mode, uid, gid,
			     flags);
	close(dfd);
	return r;
}

int nf_root_find_kernel(struct nf_ctx *ctx, int rootfd, char *kernel,
			size_t ksz, char *initrd, size_t isz)
{
	int bfd = nf_root_opendir(ctx, rootfd, "boot", 0);
	char best[NAME_MAX + 1] = "";
	struct dirent *de;
	struct stat st;
	DIR *dp;

	if (bfd < 0)
		return nf_fail(ctx, NF_E_NOTFOUND, "the image has no kernel (no "
			       "/boot): is the kernel package installed?");
	if (!(dp = fdopendir(bfd))) {
		close(bfd);
		return nf_fail(ctx, -errno, "cannot read /boot of the image: %s",
			       strerror(errno));
	}
	while ((de = readdir(dp)))
		if (!strncmp(de->d_name, "vmlinuz-", 8) &&
		    (!best[0] || strverscmp(de->d_name, best) > 0))
			snprintf(best, sizeof(best), "%s", de->d_name);
	if (initrd && isz)
		initrd[0] = '\0';
	if (best[0] && initrd) {
		static const char *const fmt[] = { "initrd.img-%s",
						   "initramfs-%s.img" };
		char cand[NAME_MAX + 16];

		for (size_t i = 0; i < NF_ARRAY_SIZE(fmt) && !initrd[0]; i++) {
			snprintf(cand, sizeof(cand), fmt[i], best + 8);
			if (fstatat(dirfd(dp), cand, &st, AT_SYMLINK_NOFOLLOW) == 0)
				snprintf(initrd, isz, "/boot/%s", cand);
		}
	}
	closedir(dp);
	if (!best[0])
		return nf_fail(ctx, NF_E_NOTFOUND, "the image has no kernel "
			       "(/boot/vmlinuz-*): is the kernel package "
			       "installed?");
	snprintf(kernel, ksz, "/boot/%s", best);
	return 0;
}

int nf_openat_root(int rootfd, const char *rel, int flags)
{
	int fd;

	while (*rel == '/')
		rel++;
#ifdef NF_HAVE_OPENAT2
	{
		struct open_how how = { .flags = (unsigned)(flags | O_CLOEXEC),
					.resolve = RESOLVE_IN_ROOT |
						   RESOLVE_NO_MAGICLINKS };
		long r = syscall(SYS_openat2, rootfd, rel, &how, sizeof(how));

		if (r >= 0)
			return (int)r;
		if (errno != ENOSYS)
			return -errno;
	}
#endif
	/* without openat2 (kernels before 5.6): no symlink at the last
	 * component; the image roots nodeforge opens are its own */
	fd = openat(rootfd, rel, flags | O_CLOEXEC | O_NOFOLLOW);
	return fd < 0 ? -errno : fd;
}
