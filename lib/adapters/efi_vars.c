/* SPDX-License-Identifier: MIT */
/*
 * EFI variables, opened and closed: the store behind struct nf_efi.
 *
 * Variable access goes through a small ops table (read, write, list by
 * name and GUID) whose implementation works on a directory in efivarfs
 * layout: one file NAME-GUID per variable, 4 bytes of attributes (little
 * endian) then the data.  libefivar's own variable access reads
 * EFIVARFS_PATH once, when the library is loaded, so it cannot follow
 * --sysroot.  On a real efivarfs the write is one write() of
 * attributes+data after clearing the immutable flag (what the kernel
 * expects); in a plain directory (a fixture) it is temp+rename.  Boot
 * entries, BootOrder and BootNext on top of it: lib/adapters/efi.c.
 */
#include "efi_int.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#define NF_EFIVARFS_MAGIC 0xde5e81e4

/* ---------------------------------------------- directory variable store */

static char *var_path(struct nf_efi *efi, const char *name, const char *guid)
{
	return nf_asprintf("%s/%s-%s", efi->dir, name, guid);
}

static int dir_get(struct nf_efi *efi, const char *name, const char *guid,
		   uint32_t *attrs, uint8_t **data, size_t *len)
{
	char *p = var_path(efi, name, guid);
	uint8_t *buf;
	ssize_t n;
	size_t have = 0;
	int fd, e;

	if (!p)
		return -ENOMEM;
	fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		e = errno;
		if (e != ENOENT)
			nf_fail(efi->ctx, -e, "cannot read '%s': %s", p,
				strerror(e));
		free(p);
		return -e;
	}
	buf = malloc(NF_EFIVAR_MAX + 1);
	if (!buf) {
		close(fd);
		free(p);
		return -ENOMEM;
	}
	/* efivarfs wants the whole variable in one read; a plain file may
	 * come in pieces */
	while ((n = read(fd, buf + have, NF_EFIVAR_MAX + 1 - have)) > 0) {
		have += (size_t)n;
		if (have > NF_EFIVAR_MAX)
			break;
	}
	e = n < 0 ? errno : 0;
	close(fd);
	if (e || have > NF_EFIVAR_MAX || have < 4) {
		int r = e ? nf_fail(efi->ctx, -e, "cannot read '%s': %s", p,
				    strerror(e))
			: have < 4 ? nf_fail(efi->ctx, NF_E_PARSE,
					     "'%s' is shorter than its attributes", p)
				   : nf_fail(efi->ctx, NF_E_LIMIT,
					     "'%s' is larger than %d bytes", p,
					     NF_EFIVAR_MAX);
		free(buf);
		free(p);
		return r;
	}
	free(p);
	*attrs = (uint32_t)buf[0] | (uint32_t)buf[1] << 8 |
		 (uint32_t)buf[2] << 16 | (uint32_t)buf[3] << 24;
	memmove(buf, buf + 4, have - 4);
	*data = buf;
	*len = have - 4;
	return 0;
}

/* efivarfs marks most variables immutable; writing needs it cleared */
static void make_mutable(int fd)
{
	int flags;

	if (ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0 &&
	    (flags & FS_IMMUTABLE_FL)) {
		flags &= ~FS_IMMUTABLE_FL;
		ioctl(fd, FS_IOC_SETFLAGS, &flags);
	}
}

static int dir_set(struct nf_efi *efi, const char *name, const char *guid,
		   uint32_t attrs, const uint8_t *data, size_t len)
{
	char *p = var_path(efi, name, guid);
	uint8_t *buf;
	int r;

	if (!p)
		return -ENOMEM;
	if (len > NF_EFIVAR_MAX) {
		free(p);
		return nf_fail(efi->ctx, NF_E_LIMIT,
			       "variable '%s' larger than %d bytes", name,
			       NF_EFIVAR_MAX);
	}
	buf = malloc(len + 4);
	if (!buf) {
		free(p);
		return -ENOMEM;
	}
	buf[0] = attrs & 0xff;
	buf[1] = (attrs >> 8) & 0xff;
	buf[2] = (attrs >> 16) & 0xff;
	buf[3] = (attrs >> 24) & 0xff;
	if (len)
		memcpy(buf + 4, data, len);
	if (efi->efivarfs) {
		int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW,
			      0644);
		ssize_t w;

		if (fd < 0) {
			r = nf_fail(efi->ctx, -errno, "cannot write '%s': %s",
				    p, strerror(errno));
		} else {
			make_mutable(fd);
			w = write(fd, buf, len + 4);
			if (w != (ssize_t)(len + 4))
				r = nf_fail(efi->ctx, w < 0 ? -errno : -EIO,
					    "cannot write '%s': %s", p,
					    w < 0 ? strerror(errno)
						  : "short write");
			else
				r = 0;
			close(fd);
		}
	} else {
		r = nf_write_atomic(efi->ctx, p, buf, len + 4, 0644);
	}
	free(buf);
	free(p);
	return r;
}

static int dir_del(struct nf_efi *efi, const char *name, const char *guid)
{
	char *p = var_path(efi, name, guid);
	int fd, r = 0;

	if (!p)
		return -ENOMEM;
	fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd >= 0) {
		make_mutable(fd);
		close(fd);
	}
	if (unlink(p) < 0) {
		r = -errno;
		if (r != -ENOENT)
			nf_fail(efi->ctx, r, "cannot remove '%s': %s", p,
				strerror(errno));
	}
	free(p);
	return r;
}

static int dir_list(struct nf_efi *efi, const char *guid,
		    int (*fn)(void *arg, const char *name), void *arg)
{
	size_t glen = strlen(guid);
	struct dirent *de;
	DIR *dp = opendir(efi->dir);
	int r = 0;

	if (!dp)
		return nf_fail(efi->ctx, -errno, "cannot read '%s': %s",
			       efi->dir, strerror(errno));
	while ((de = readdir(dp))) {
		size_t l = strlen(de->d_name);
		char name[256];

		if (l <= glen + 1 || l - glen - 1 >= sizeof(name) ||
		    strcmp(de->d_name + l - glen, guid) ||
		    de->d_name[l - glen - 1] != '-')
			continue;
		memcpy(name, de->d_name, l - glen - 1);
		name[l - glen - 1] = '\0';
		if ((r = fn(arg, name)) < 0)
			break;
	}
	closedir(dp);
	return r;
}

static const struct nf_efivar_ops dir_ops = {
	.get = dir_get,
	.set = dir_set,
	.del = dir_del,
	.list = dir_list,
};

/* ------------------------------------------------------------ open/close */

int nf_efi_open_dir(struct nf_ctx *ctx, const char *dir, struct nf_efi **out)
{
	struct nf_efi *efi;
	struct statfs sfs;
	struct stat st;

	*out = NULL;
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
		return nf_fail(ctx, NF_E_NOHW,
			       "no EFI variables: '%s' is not a directory", dir);
	efi = calloc(1, sizeof(*efi));
	if (!efi || !(efi->dir = nf_strdup(dir))) {
		free(efi);
		return -ENOMEM;
	}
	efi->ctx = ctx;
	efi->ops = &dir_ops;
	efi->efivarfs = statfs(dir, &sfs) == 0 &&
			(unsigned long)sfs.f_type == NF_EFIVARFS_MAGIC;
	*out = efi;
	return 0;
}

int nf_efi_open(struct nf_ctx *ctx, struct nf_efi **out)
{
	char *fw = nf_sr_path(ctx, "/sys/firmware/efi");
	char *vars = nf_sr_path(ctx, "/sys/firmware/efi/efivars");
	struct stat st;
	int r;

	*out = NULL;
	if (!fw || !vars) {
		free(fw);
		free(vars);
		return -ENOMEM;
	}
	if (stat(fw, &st) < 0) {
		r = nf_fail(ctx, NF_E_NOHW,
			    "no EFI firmware interface ('%s' is missing): the system was booted in legacy BIOS mode",
			    fw);
	} else if (stat(vars, &st) < 0) {
		r = nf_fail(ctx, NF_E_NOHW,
			    "EFI variables are not available: mount efivarfs on '%s'",
			    vars);
	} else {
		r = nf_efi_open_dir(ctx, vars, out);
	}
	free(fw);
	free(vars);
	return r;
}

void nf_efi_free(struct nf_efi *efi)
{
	if (!efi)
		return;
	free(efi->dir);
	free(efi);
}
