/* SPDX-License-Identifier: MIT */
/*
 * Each role's current image in the boot tree: its kernel, initramfs and
 * rootfs placed under their content-addressed names from OUT/ROLE.current,
 * the iPXE binaries copied in, and the boot files dnsmasq names checked.
 */
#include "pxe_int.h"

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>


/*
 * Anaconda's liveimg decides by the URL's suffix alone whether it fetches
 * a tarball (unpacked with tar) or a disk image (mounted): these are the
 * suffixes it takes for a tarball.  Anything else, .tar.zst included, is
 * mounted as an image and the install fails.
 */
int nf_pxe_anaconda_tarball(const char *name)
{
	static const char *const sfx[] = { ".tar", ".tbz", ".tgz", ".txz",
					   ".tar.bz2", ".tar.gz", ".tar.xz" };
	size_t n = strlen(name);

	for (size_t i = 0; i < NF_ARRAY_SIZE(sfx); i++) {
		size_t k = strlen(sfx[i]);

		if (n > k && !strcmp(name + n - k, sfx[i]))
			return 1;
	}
	return 0;
}

static int safe_basename(const char *s)
{
	if (!s || !*s || strlen(s) > 200 || !strcmp(s, ".") || !strcmp(s, ".."))
		return 0;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("._+-", *s))
			return 0;
	return 1;
}

static int is_sha256(const char *s)
{
	if (!s || strlen(s) != 64)
		return 0;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s) && !(*s >= 'a' && *s <= 'f'))
			return 0;
	return 1;
}

/* Copy src into the tree as images/ROLE/NAME unless it is already there:
 * names are content-addressed, so an existing name is the same content */
int nf_pxe_place_image(struct pxe *p, const struct role *r, const char *name)
{
	char sub[160], src[4096];
	struct stat st;
	int dfd, in, out, e;
	char tmp[320];

	snprintf(sub, sizeof(sub), "images/%s", r->name);
	if ((e = nf_pxe_keep(p, sub, name)))
		return e;
	dfd = nf_pxe_dir_fd(p, sub);
	if (dfd < 0)
		return dfd;
	/* serve refuses a file with a second link: one left by an older
	 * pxe that linked images is replaced by a copy */
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISREG(st.st_mode) && st.st_nlink == 1)
		return 0;
	snprintf(src, sizeof(src), "%s/%s/%s", p->o->images_dir, r->name, name);
	in = open(src, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (in < 0)
		return nf_fail(p->ctx, -errno, "cannot read '%s': %s", src,
			       strerror(errno));
	if (fstat(in, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(in);
		return nf_fail(p->ctx, NF_E_INVALID, "'%s' is not a file", src);
	}
	/* a copy, not a hard link (serve refuses files with a second link);
	 * copy_file_range shares the blocks where the file system can */
	snprintf(tmp, sizeof(tmp), ".%s.tmp.%ld.%lu", name, (long)getpid(),
		 p->seq++);
	out = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
			       O_CLOEXEC, 0644);
	if (out < 0) {
		e = -errno;
		close(in);
		return nf_fail(p->ctx, e, "cannot write '%s/%s/%s': %s",
			       p->o->out_dir, sub, name, strerror(-e));
	}
	for (off_t left = st.st_size; left > 0;) {
		ssize_t n = copy_file_range(in, NULL, out, NULL, (size_t)left, 0);

		if (n <= 0) {
			char cb[65536];

			n = read(in, cb, sizeof(cb));
			if (n > 0 && write(out, cb, (size_t)n) != n)
				n = -1;
		}
		if (n <= 0) {
			e = n == 0 ? -EIO : -errno;
			close(in);
			close(out);
			unlinkat(dfd, tmp, 0);
			return nf_fail(p->ctx, e, "cannot copy '%s': %s", src,
				       strerror(-e));
		}
		left -= n;
	}
	close(in);
	if (fchmod(out, 0644) < 0 || fsync(out) < 0 || close(out) < 0 ||
	    renameat(dfd, tmp, dfd, name) < 0) {
		e = -errno;
		unlinkat(dfd, tmp, 0);
		return nf_fail(p->ctx, e, "cannot write '%s/%s/%s': %s",
			       p->o->out_dir, sub, name, strerror(-e));
	}
	p->st->images++;
	return 0;
}

/* Read OUT/ROLE/ROLE.current (docs/formats.md) */
int nf_pxe_read_current(struct pxe *p, struct role *r)
{
	char *path = nf_asprintf("%s/%s/%s.current", p->o->images_dir, r->name,
				 r->name);
	json_error_t je;
	json_t *j;
	char *buf;
	int e;

	if (!path)
		return -ENOMEM;
	e = nf_read_file(NULL, path, NF_PXE_CURRENT_MAX, &buf, NULL);
	if (e) {
		e = nf_fail(p->ctx, e == -ENOENT ? NF_E_NOTFOUND : e,
			    "no image for role '%s': cannot read '%s': %s; "
			    "run 'nodeforge build %s'", r->name, path,
			    nf_strerror(e), r->name);
		free(path);
		return e;
	}
	j = json_loads(buf, 0, &je);
	free(buf);
	if (!json_is_object(j)) {
		json_decref(j);
		e = nf_fail(p->ctx, NF_E_PARSE, "'%s': %s", path,
			    j ? "not a JSON object" : je.text);
		free(path);
		return e;
	}
	static const char *const keys[] = { "kernel", "initramfs", "rootfs" };
	char **dst[] = { &r->kernel, &r->initramfs, &r->rootfs };

	for (size_t i = 0; i < NF_ARRAY_SIZE(keys); i++) {
		const char *v = json_string_value(json_object_get(j, keys[i]));

		if (!safe_basename(v)) {
			json_decref(j);
			e = nf_fail(p->ctx, NF_E_INVALID,
				    "'%s': '%s' must be a file name in '%s/%s'",
				    path, keys[i], p->o->images_dir, r->name);
			free(path);
			return e;
		}
		*dst[i] = nf_strdup(v);
	}
	{
		const char *h = json_string_value(json_object_get(j,
								   "rootfs_sha256"));

		if (!is_sha256(h)) {
			json_decref(j);
			e = nf_fail(p->ctx, NF_E_INVALID,
				    "'%s': 'rootfs_sha256' must be 64 lower-case "
				    "hex digits", path);
			free(path);
			return e;
		}
		r->rootfs_sha256 = nf_strdup(h);
	}
	{
		/* optional (EL builds): the tarball for kickstart liveimg */
		const json_t *lj = json_object_get(j, "liveimg");
		const char *l = json_string_value(lj);
		const char *h = json_string_value(json_object_get(j,
							"liveimg_sha256"));

		if (lj && (!safe_basename(l) || !is_sha256(h))) {
			json_decref(j);
			e = nf_fail(p->ctx, NF_E_INVALID,
				    "'%s': 'liveimg' must be a file name in "
				    "'%s/%s' and 'liveimg_sha256' 64 lower-case "
				    "hex digits", path, p->o->images_dir, r->name);
			free(path);
			return e;
		}
		if (lj && (!(r->liveimg = nf_strdup(l)) ||
			   !(r->liveimg_sha256 = nf_strdup(h)))) {
			json_decref(j);
			free(path);
			return -ENOMEM;
		}
	}
	json_decref(j);
	free(path);
	if (!r->kernel || !r->initramfs || !r->rootfs || !r->rootfs_sha256)
		return -ENOMEM;
	return 0;
}

void nf_pxe_role_clear(struct role *r)
{
	free(r->kernel);
	free(r->initramfs);
	free(r->rootfs);
	free(r->rootfs_sha256);
	free(r->liveimg);
	free(r->liveimg_sha256);
}

/* Read the pointer and place the files it names into the tree */
int nf_pxe_load_current(struct pxe *p, struct role *r)
{
	int e;

	if ((e = nf_pxe_read_current(p, r)))
		return e;
	if ((e = nf_pxe_place_image(p, r, r->kernel)) ||
	    (e = nf_pxe_place_image(p, r, r->initramfs)) ||
	    (e = nf_pxe_place_image(p, r, r->rootfs)))
		return e;
	return 0;
}

/* The iPXE binaries plain PXE firmware loads over TFTP (dnsmasq.conf
 * names them); taken from the distribution's ipxe package when present */
int nf_pxe_place_ipxe(struct pxe *p)
{
	static const char *const names[] = { "undionly.kpxe", "ipxe.efi" };

	if (!p->o->ipxe_dir)
		return 0;
	for (size_t i = 0; i < NF_ARRAY_SIZE(names); i++) {
		char *path = nf_asprintf("%s/%s", p->o->ipxe_dir, names[i]);
		char *buf = NULL;
		size_t len;
		int e;

		if (!path)
			return -ENOMEM;
		if (access(path, R_OK) != 0) {
			free(path);
			continue;
		}
		e = nf_read_file(p->ctx, path, NF_PXE_CMP_MAX, &buf, &len);
		free(path);
		if (e)
			return e;
		e = nf_pxe_put(p, "tftp", names[i], buf, len);
		free(buf);
		if (e)
			return e;
	}
	return 0;
}

/* The firmware boot files dnsmasq.conf names: iPXE for plain PXE over
 * TFTP (place_ipxe copies them from the ipxe package) and GRUB for UEFI
 * HTTP boot, which the site provides */
static const struct nf_pxe_missing boot_files[] = {
	{ "tftp/undionly.kpxe", "BIOS PXE clients",
	  "install Debian's ipxe package (/usr/lib/ipxe) or pass --ipxe-dir DIR" },
	{ "tftp/ipxe.efi", "UEFI PXE clients",
	  "install Debian's ipxe package (/usr/lib/ipxe) or pass --ipxe-dir DIR" },
	{ "grub/grubx64.efi", "UEFI HTTP boot clients",
	  "copy a network GRUB there (grubnetx64.efi.signed from Debian's "
	  "grub-efi-amd64-signed)" },
};

/* Is PATH (below the tree) there once this render is published: already
 * in the tree, or, for tftp/, in --ipxe-dir (place_ipxe copies it)? */
static int will_exist(struct pxe *p, const char *path)
{
	if (faccessat(p->root, path, F_OK, 0) == 0)
		return 1;
	if (!strncmp(path, "tftp/", 5) && p->o->ipxe_dir) {
		char *src = nf_asprintf("%s/%s", p->o->ipxe_dir, path + 5);
		int ok = src && access(src, R_OK) == 0;

		free(src);
		return ok;
	}
	return 0;
}

/* Before anything is written: with --strict a missing boot file refuses
 * the render */
int nf_pxe_check_boot_files(struct pxe *p, struct nf_pxe_stats *st)
{
	for (size_t i = 0; i < NF_ARRAY_SIZE(boot_files); i++)
		if (!will_exist(p, boot_files[i].path))
			st->missing[st->nmissing++] = &boot_files[i];
	if (p->o->strict && st->nmissing)
		return nf_fail(p->ctx, NF_E_NOTFOUND, "dnsmasq.conf names %s for %s, "
			       "but the tree has none (--strict): %s; nothing "
			       "written", st->missing[0]->path, st->missing[0]->client,
			       st->missing[0]->remedy);
	return 0;
}

