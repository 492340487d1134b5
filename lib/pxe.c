/* SPDX-License-Identifier: MIT */
/*
 * The boot tree: a static, content-addressed directory any HTTP server can
 * serve (layout in docs/formats.md).
 *
 * Rendering is idempotent: a file whose content is unchanged is not
 * touched.  Changed files are staged as temporaries next to their target,
 * made durable with one syncfs(), then renamed into place, so a reader
 * sees either the old or the new file and never a partial one.  Every path
 * is opened relative to the tree's directory fd with O_NOFOLLOW.
 */
#include "internal.h"

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define NF_PXE_TMPL_MAX (256u << 10)
#define NF_PXE_CURRENT_MAX (64u << 10)
#define NF_PXE_CMP_MAX (4u << 20)

/* ------------------------------------------------------------- staging */

struct staged {
	int dfd;       /* borrowed from the dir table */
	char *tmp;
	char *name;
};

struct pxe {
	struct nf_ctx *ctx;
	const struct nf_pxe_opts *o;
	struct nf_pxe_stats *st;
	int root;                 /* tree dirfd */
	struct {
		char *path;
		int fd;
	} dirs[16];
	size_t ndirs;
	struct staged *stg;
	size_t nstg, capstg;
	json_t *keep;             /* dir -> {name: true} of files rendered */
	unsigned long seq;
};

/* Open (creating) a subdirectory of the tree: one level, no symlinks */
static int dir_fd(struct pxe *p, const char *sub)
{
	int fd;

	for (size_t i = 0; i < p->ndirs; i++)
		if (!strcmp(p->dirs[i].path, sub))
			return p->dirs[i].fd;
	if (p->ndirs == NF_ARRAY_SIZE(p->dirs))
		return nf_fail(p->ctx, NF_E_LIMIT, "too many directories");
	if (!*sub) {
		fd = dup(p->root);
	} else {
		char *copy = nf_strdup(sub), *slash;
		int parent = p->root;

		if (!copy)
			return -ENOMEM;
		/* make parents first, each through its own fd */
		slash = strrchr(copy, '/');
		if (slash) {
			*slash = '\0';
			parent = dir_fd(p, copy);
			if (parent < 0) {
				free(copy);
				return parent;
			}
		}
		if (mkdirat(parent, slash ? slash + 1 : copy, 0755) < 0 &&
		    errno != EEXIST) {
			int e = errno;

			free(copy);
			return nf_fail(p->ctx, -e, "cannot create '%s/%s': %s",
				       p->o->out_dir, sub, strerror(e));
		}
		fd = openat(parent, slash ? slash + 1 : copy,
			    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		free(copy);
	}
	if (fd < 0)
		return nf_fail(p->ctx, -errno, "cannot open '%s/%s': %s",
			       p->o->out_dir, sub, strerror(errno));
	p->dirs[p->ndirs].path = nf_strdup(sub);
	p->dirs[p->ndirs].fd = fd;
	p->ndirs++;
	return fd;
}

/* Does dfd/name hold exactly buf? */
static int same_content(int dfd, const char *name, const char *buf,
			size_t len)
{
	struct stat st;
	char *cur;
	int fd, same = 0;
	size_t got = 0;

	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (size_t)st.st_size != len || len > NF_PXE_CMP_MAX) {
		close(fd);
		return 0;
	}
	cur = malloc(len + 1);
	if (cur) {
		while (got < len) {
			ssize_t r = read(fd, cur + got, len - got);

			if (r <= 0)
				break;
			got += (size_t)r;
		}
		same = got == len && !memcmp(cur, buf, len);
		free(cur);
	}
	close(fd);
	return same;
}

static int keep(struct pxe *p, const char *dir, const char *name)
{
	json_t *d = json_object_get(p->keep, dir);

	if (!d) {
		d = json_object();
		if (!d || json_object_set_new(p->keep, dir, d))
			return -ENOMEM;
	}
	return json_object_set_new(d, name, json_true()) ? -ENOMEM : 0;
}

/* Render one file of the tree: stage it unless it is unchanged */
static int put(struct pxe *p, const char *dir, const char *name,
	       const char *buf, size_t len)
{
	struct staged *s;
	char tmp[320];
	size_t off = 0;
	int dfd, fd, r;

	if ((r = keep(p, dir, name)))
		return r;
	p->st->files++;
	dfd = dir_fd(p, dir);
	if (dfd < 0)
		return dfd;
	if (same_content(dfd, name, buf, len)) {
		p->st->unchanged++;
		return 0;
	}
	snprintf(tmp, sizeof(tmp), ".%s.tmp.%ld.%lu", name, (long)getpid(),
		 p->seq++);
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
			      O_CLOEXEC, 0644);
	if (fd < 0)
		return nf_fail(p->ctx, -errno, "cannot write '%s/%s/%s': %s",
			       p->o->out_dir, dir, name, strerror(errno));
	while (off < len) {
		ssize_t w = write(fd, buf + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			r = -errno;
			close(fd);
			unlinkat(dfd, tmp, 0);
			return nf_fail(p->ctx, r, "cannot write '%s/%s/%s': %s",
				       p->o->out_dir, dir, name, strerror(-r));
		}
		off += (size_t)w;
	}
	close(fd);
	if (p->nstg == p->capstg) {
		size_t cap = p->capstg ? p->capstg * 2 : 256;
		struct staged *v = realloc(p->stg, cap * sizeof(*v));

		if (!v) {
			unlinkat(dfd, tmp, 0);
			return -ENOMEM;
		}
		p->stg = v;
		p->capstg = cap;
	}
	s = &p->stg[p->nstg];
	s->dfd = dfd;
	s->tmp = nf_strdup(tmp);
	s->name = nf_strdup(name);
	if (!s->tmp || !s->name) {
		free(s->tmp);
		free(s->name);
		unlinkat(dfd, tmp, 0);
		return -ENOMEM;
	}
	p->nstg++;
	p->st->written++;
	return 0;
}

static void unstage(struct pxe *p)
{
	for (size_t i = 0; i < p->nstg; i++) {
		unlinkat(p->stg[i].dfd, p->stg[i].tmp, 0);
		free(p->stg[i].tmp);
		free(p->stg[i].name);
	}
	p->nstg = 0;
}

static int publish(struct pxe *p)
{
	if (!p->nstg)
		return 0;
	/* one flush for every staged file instead of one fsync each */
	if (syncfs(p->root) < 0)
		return nf_fail(p->ctx, -errno, "cannot sync '%s': %s",
			       p->o->out_dir, strerror(errno));
	for (size_t i = 0; i < p->nstg; i++) {
		struct staged *s = &p->stg[i];

		if (renameat(s->dfd, s->tmp, s->dfd, s->name) < 0)
			return nf_fail(p->ctx, -errno,
				       "cannot publish '%s': %s", s->name,
				       strerror(errno));
		free(s->tmp);
		free(s->name);
		s->tmp = s->name = NULL;
	}
	p->nstg = 0;
	for (size_t i = 0; i < p->ndirs; i++)
		fsync(p->dirs[i].fd);
	return 0;
}

/* Remove files of a generated directory that this render did not produce */
static int prune(struct pxe *p, const char *dir, const char *prefix,
		 const char *suffix)
{
	json_t *k = json_object_get(p->keep, dir);
	int dfd = dir_fd(p, dir), fd;
	DIR *d;
	struct dirent *de;

	if (dfd < 0)
		return dfd;
	fd = dup(dfd);
	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return nf_fail(p->ctx, -errno, "cannot list '%s/%s'",
			       p->o->out_dir, dir);
	}
	rewinddir(d);
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name), ls = strlen(suffix);

		if (de->d_name[0] == '.' ||
		    strncmp(de->d_name, prefix, strlen(prefix)) ||
		    n < ls || strcmp(de->d_name + n - ls, suffix) ||
		    json_object_get(k, de->d_name))
			continue;
		if (unlinkat(dfd, de->d_name, 0) == 0)
			p->st->removed++;
	}
	closedir(d);
	return 0;
}

/* ---------------------------------------------------------- buffers */

static int bput(struct pxe *p, const char *dir, const char *name,
		struct nf_buf *b)
{
	int r;

	if (b->err)
		return -ENOMEM;
	r = put(p, dir, name, b->s ? b->s : "", b->len);
	b->len = 0;
	return r;
}

/* ------------------------------------------------------------- images */

struct role {
	const char *name;
	const char *args;       /* the facets' kernel arguments */
	char *kernel, *initramfs, *rootfs, *rootfs_sha256;
	char *liveimg, *liveimg_sha256; /* the tarball for kickstart liveimg */
};

/*
 * Anaconda's liveimg decides by the URL's suffix alone whether it fetches
 * a tarball (unpacked with tar) or a disk image (mounted): these are the
 * suffixes it takes for a tarball.  Anything else, .tar.zst included, is
 * mounted as an image and the install fails.
 */
static int anaconda_tarball(const char *name)
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
static int place_image(struct pxe *p, const struct role *r, const char *name)
{
	char sub[160], src[4096];
	struct stat st;
	int dfd, in, out, e;
	char tmp[320];

	snprintf(sub, sizeof(sub), "images/%s", r->name);
	if ((e = keep(p, sub, name)))
		return e;
	dfd = dir_fd(p, sub);
	if (dfd < 0)
		return dfd;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISREG(st.st_mode))
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
	/* a hard link costs nothing when out/ and the tree share a disk */
	if (linkat(AT_FDCWD, src, dfd, name, 0) == 0) {
		close(in);
		p->st->images++;
		return 0;
	}
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
	if (fsync(out) < 0 || close(out) < 0 ||
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
static int load_current(struct pxe *p, struct role *r)
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
	if ((e = place_image(p, r, r->kernel)) ||
	    (e = place_image(p, r, r->initramfs)) ||
	    (e = place_image(p, r, r->rootfs)))
		return e;
	return 0;
}

/* The iPXE binaries plain PXE firmware loads over TFTP (dnsmasq.conf
 * names them); taken from the distribution's ipxe package when present */
static int place_ipxe(struct pxe *p)
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
		e = put(p, "tftp", names[i], buf, len);
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
static int check_boot_files(struct pxe *p, struct nf_pxe_stats *st)
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

/* ---------------------------------------------------------- templates */

struct var {
	const char *name, *value;
};

/* Replace {{name}} with its value; an unknown name is an error at the
 * template's line */
static int render_tmpl(struct pxe *p, const char *file, const char *t,
		       const struct var *vars, size_t nvars, struct nf_buf *out)
{
	unsigned line = 1;

	while (*t) {
		const char *open = strstr(t, "{{"), *close;

		if (!open) {
			nf_buf_printf(out, "%s", t);
			break;
		}
		for (const char *c = t; c < open; c++)
			line += *c == '\n';
		nf_buf_printf(out, "%.*s", (int)(open - t), t);
		close = strstr(open, "}}");
		if (!close || close - open > 64)
			return nf_fail(p->ctx, NF_E_PARSE,
				       "%s:%u: unterminated '{{'", file, line);
		{
			char name[65];
			size_t i, n = (size_t)(close - open - 2);

			memcpy(name, open + 2, n);
			name[n] = '\0';
			for (i = 0; i < nvars; i++)
				if (!strcmp(vars[i].name, name))
					break;
			if (i == nvars)
				return nf_fail(p->ctx, NF_E_INVALID,
					       "%s:%u: unknown template variable "
					       "'%s'", file, line, name);
			nf_buf_printf(out, "%s", vars[i].value);
		}
		t = close + 2;
	}
	return out->err ? -ENOMEM : 0;
}

/* Kernel arguments and URLs land in iPXE, GRUB and kickstart scripts:
 * refuse anything those languages would interpret */
static int script_safe(const char *s)
{
	for (; *s; s++)
		if (!isprint((unsigned char)*s) || strchr("\"'`$;\\{}#", *s))
			return 0;
	return 1;
}

/* ------------------------------------------------------------- render */

static const char *site_str(const struct nf_site *site, const char *a,
			    const char *b, const char *c)
{
	const json_t *j = site ? nf_site_json(site) : NULL;

	j = json_object_get(j, a);
	if (b)
		j = json_object_get(j, b);
	if (c)
		j = json_object_get(j, c);
	return json_string_value(j);
}

static int render_ipxe_common(struct pxe *p, struct nf_buf *b)
{
	const char *url = p->o->server_url;
	int r;

	nf_buf_printf(b,
		"#!ipxe\n"
		"# nodeforge boot entry (rendered; do not edit): chain to the\n"
		"# script of the MAC that booted, or report an unknown machine\n"
		"chain --autofree %s/ipxe/mac/${netX/mac:hexhyp}.ipxe || "
		"chain --autofree %s/ipxe/unknown.ipxe\n", url, url);
	if ((r = bput(p, "ipxe", "boot.ipxe", b)))
		return r;
	nf_buf_printf(b,
		"#!ipxe\n"
		"# nodeforge: this MAC is not in the inventory.  Report it to the\n"
		"# boot server, then retry every minute until it is added.\n"
		"echo nodeforge: ${netX/mac} is not in the inventory\n"
		"imgfetch --name report %s/api/v1/unknown/${netX/mac:hexhyp} || "
		"echo nodeforge: could not report to %s\n"
		"imgfree report ||\n"
		":retry\n"
		"sleep 60\n"
		"chain --autofree %s/ipxe/boot.ipxe || goto retry\n",
		url, url, url);
	if ((r = bput(p, "ipxe", "unknown.ipxe", b)))
		return r;
	nf_buf_printf(b,
		"# nodeforge: GRUB fallback for MACs not in the inventory\n"
		"# (rendered; do not edit).  Known MACs load grub.cfg-01-MAC.\n"
		"echo \"nodeforge: $net_default_mac is not in the inventory\"\n"
		"sleep 60\n"
		"reboot\n");
	return bput(p, "grub", "grub.cfg", b);
}

static int render_node(struct pxe *p, const struct nf_node *nd,
		       const struct role *r, struct nf_buf *b)
{
	const char *url = p->o->server_url;
	char mac[18], ip[16], file[64];
	int e;

	nf_mac_format(nd->mac, '-', mac);
	nf_ipv4_format(nd->ip, ip);
	nf_buf_printf(b,
		"#!ipxe\n"
		"# node %s (%s, rack %s, %s) - rendered by nodeforge; do not edit\n"
		"kernel %s/images/%s/%s initrd=%s %s%snodeforge.server=%s "
		"nodeforge.node=%s systemd.hostname=%s\n"
		"initrd %s/images/%s/%s\n"
		"boot\n",
		nd->name, r->name, *nd->rack ? nd->rack : "-", ip, url,
		r->name, r->kernel, r->initramfs, r->args, *r->args ? " " : "",
		url, nd->name, nd->name, url, r->name, r->initramfs);
	snprintf(file, sizeof(file), "%s.ipxe", mac);
	if ((e = bput(p, "ipxe/mac", file, b)))
		return e;
	nf_buf_printf(b,
		"# node %s (%s) - rendered by nodeforge; do not edit\n"
		"set default=0\n"
		"set timeout=0\n"
		"menuentry 'nodeforge %s (%s)' {\n"
		"\tlinux /images/%s/%s %s%snodeforge.server=%s nodeforge.node=%s "
		"systemd.hostname=%s\n"
		"\tinitrd /images/%s/%s\n"
		"}\n",
		nd->name, r->name, nd->name, r->name, r->name, r->kernel,
		r->args, *r->args ? " " : "", url, nd->name, nd->name, r->name,
		r->initramfs);
	snprintf(file, sizeof(file), "grub.cfg-01-%s", mac);
	return bput(p, "grub", file, b);
}

static int render_kickstart(struct pxe *p, const struct role *r,
			    struct nf_buf *b)
{
	char *tpath, *tmpl = NULL, *url = NULL, *args = NULL, name[96];
	const char *cluster = site_str(p->o->site, "cluster", NULL, NULL);
	/* the URL and checksum name exactly one file: the liveimg the
	 * build published, else the rootfs if Anaconda takes it as is */
	const char *tar = r->liveimg ? r->liveimg : r->rootfs;
	const char *sha = r->liveimg ? r->liveimg_sha256 : r->rootfs_sha256;
	int e;

	if (!p->o->kickstart_dir)
		return 0;
	if (!anaconda_tarball(tar))
		return nf_fail(p->ctx, NF_E_UNSUPPORTED,
			       "cannot render the kickstart of role '%s': "
			       "Anaconda's liveimg would take '%s/%s/%s' for a "
			       "disk image, not a tarball (it goes by the "
			       "suffix: .tar, .tbz, .tgz, .txz, .tar.bz2, "
			       ".tar.gz, .tar.xz); rebuild the role with an EL "
			       "site ('nodeforge build %s' then publishes "
			       "'%s-<sha12>.rootfs.tar.xz' as 'liveimg' in "
			       "'%s.current'), or render without kickstarts",
			       r->name, p->o->images_dir, r->name, tar,
			       r->name, r->name, r->name);
	if ((e = place_image(p, r, tar)))
		return e;
	tpath = nf_asprintf("%s/%s.ks.tmpl", p->o->kickstart_dir, r->name);
	if (!tpath)
		return -ENOMEM;
	if (access(tpath, F_OK) != 0) {
		free(tpath);
		tpath = nf_asprintf("%s/default.ks.tmpl", p->o->kickstart_dir);
		if (!tpath)
			return -ENOMEM;
	}
	e = nf_read_file(p->ctx, tpath, NF_PXE_TMPL_MAX, &tmpl, NULL);
	if (e)
		goto out;
	url = nf_asprintf("%s/images/%s/%s", p->o->server_url, r->name, tar);
	args = nf_asprintf("%s%snodeforge.server=%s", r->args,
			   *r->args ? " " : "", p->o->server_url);
	if (!url || !args) {
		e = -ENOMEM;
		goto out;
	}
	{
		const struct var vars[] = {
			{ "role", r->name },
			{ "cluster", cluster ? cluster : "cluster" },
			{ "server_url", p->o->server_url },
			{ "rootfs_url", url },
			{ "rootfs_sha256", sha },
			{ "kernel_args", args },
		};

		e = render_tmpl(p, tpath, tmpl, vars, NF_ARRAY_SIZE(vars), b);
	}
	if (e)
		goto out;
	snprintf(name, sizeof(name), "%s.ks", r->name);
	e = bput(p, "kickstart", name, b);
out:
	free(tpath);
	free(tmpl);
	free(url);
	free(args);
	return e;
}

static int render_dnsmasq(struct pxe *p, uint32_t net, unsigned prefix,
			  struct nf_buf *b)
{
	const struct nf_inventory *inv = p->o->inv;
	const char *gw = site_str(p->o->site, "networks", "provisioning",
				  "gateway");
	const char *url = p->o->server_url;
	uint32_t mask = prefix ? ~(uint32_t)0 << (32 - prefix) : 0;
	char a[16], m[16];

	nf_ipv4_format(net, a);
	nf_ipv4_format(mask, m);
	nf_buf_printf(b,
		"# nodeforge: DHCP reservations and network boot (rendered; do not\n"
		"# edit).  Only the machines of the inventory get an address.\n"
		"port=0\n"
		"bind-dynamic\n"
		"log-dhcp\n"
		"dhcp-range=set:prov,%s,static,%s,12h\n", a, m);
	if (gw && script_safe(gw) && !strchr(gw, ','))
		nf_buf_printf(b, "dhcp-option=tag:prov,option:router,%s\n", gw);
	nf_buf_printf(b,
		"# firmware: BIOS PXE, UEFI PXE, UEFI HTTP boot; and iPXE itself\n"
		"dhcp-match=set:bios,option:client-arch,0\n"
		"dhcp-match=set:efi64,option:client-arch,7\n"
		"dhcp-match=set:efi64,option:client-arch,9\n"
		"dhcp-match=set:efihttp,option:client-arch,16\n"
		"dhcp-userclass=set:ipxe,iPXE\n"
		"# plain PXE firmware loads iPXE over TFTP, then iPXE takes the\n"
		"# boot script over HTTP\n"
		"dhcp-boot=tag:bios,tag:!ipxe,undionly.kpxe\n"
		"dhcp-boot=tag:efi64,tag:!ipxe,ipxe.efi\n"
		"dhcp-boot=tag:ipxe,%s/ipxe/boot.ipxe\n"
		"# UEFI HTTP boot loads GRUB, which reads grub/grub.cfg-01-MAC\n"
		"dhcp-option-force=tag:efihttp,60,HTTPClient\n"
		"dhcp-boot=tag:efihttp,%s/grub/grubx64.efi\n"
		"enable-tftp\n"
		"tftp-root=%s/tftp\n"
		"tftp-secure\n",
		url, url, p->o->out_abs);
	for (size_t i = 0; i < nf_inventory_count(inv); i++) {
		const struct nf_node *nd = nf_inventory_node(inv, i);
		char mac[18], ip[16];

		nf_mac_format(nd->mac, ':', mac);
		nf_ipv4_format(nd->ip, ip);
		nf_buf_printf(b, "dhcp-host=%s,%s,%s,infinite\n", mac, ip, nd->name);
	}
	return bput(p, "", "dnsmasq.conf", b);
}

static int render_nginx(struct pxe *p, struct nf_buf *b)
{
	const char *u = p->o->server_url, *hp, *colon, *slash;
	unsigned port = 80;

	hp = strstr(u, "://") + 3;
	slash = strchr(hp, '/');
	colon = strrchr(hp, ':');
	if (colon && (!slash || colon < slash) && !strchr(colon, ']'))
		port = (unsigned)atoi(colon + 1);
	nf_buf_printf(b,
		"# nodeforge: nginx serving the boot tree %s at scale (rendered;\n"
		"# do not edit).  Test with: nginx -t -c %s/nginx.conf\n"
		"worker_processes auto;\n"
		"pid %s/nginx.pid;\n"
		"error_log stderr warn;\n"
		"events {\n"
		"\tworker_connections 4096;\n"
		"}\n"
		"http {\n"
		"\ttypes {\n"
		"\t\ttext/plain ipxe cfg ks;\n"
		"\t\tapplication/json json;\n"
		"\t\tapplication/zstd zst;\n"
		"\t\tapplication/x-xz xz;\n"
		"\t\tapplication/octet-stream vmlinuz efi kpxe;\n"
		"\t}\n"
		"\tdefault_type application/octet-stream;\n"
		"\tsendfile on;\n"
		"\tsendfile_max_chunk 2m;\n"
		"\ttcp_nopush on;\n"
		"\ttcp_nodelay on;\n"
		"\tkeepalive_timeout 65;\n"
		"\tkeepalive_requests 10000;\n"
		"\topen_file_cache max=20000 inactive=60s;\n"
		"\tclient_max_body_size 64k;\n"
		"\tserver_tokens off;\n"
		"\taccess_log off;\n"
		"\tserver {\n"
		"\t\tlisten %u reuseport;\n"
		"\t\tserver_name _;\n"
		"\t\troot %s;\n"
		"\t\tlocation / {\n"
		"\t\t\ttry_files $uri =404;\n"
		"\t\t}\n"
		"\t\t# content-addressed: a name never changes its bytes\n"
		"\t\tlocation /images/ {\n"
		"\t\t\tadd_header Cache-Control \"public, max-age=31536000, "
		"immutable\";\n"
		"\t\t}\n"
		"\t\tlocation /ipxe/ {\n"
		"\t\t\tadd_header Cache-Control \"no-cache\";\n"
		"\t\t}\n"
		"\t\tlocation /grub/ {\n"
		"\t\t\tadd_header Cache-Control \"no-cache\";\n"
		"\t\t}\n",
		p->o->out_abs, p->o->out_abs, p->o->out_abs, port,
		p->o->out_abs);
	if (p->o->api_upstream)
		nf_buf_printf(b,
			"\t\t# verdicts and unknown-MAC reports go to nodeforge serve\n"
			"\t\tlocation /api/ {\n"
			"\t\t\tproxy_pass %s;\n"
			"\t\t\t# the node's own address: enrollment and verdicts\n"
			"\t\t\t# are accepted only from a node's inventory address\n"
			"\t\t\tproxy_set_header X-Real-IP $remote_addr;\n"
			"\t\t\tclient_max_body_size 64k;\n"
			"\t\t}\n", p->o->api_upstream);
	else
		nf_buf_printf(b,
			"\t\tlocation /api/ {\n"
			"\t\t\treturn 404;\n"
			"\t\t}\n");
	nf_buf_printf(b, "\t}\n}\n");
	return bput(p, "", "nginx.conf", b);
}

static int render_index(struct pxe *p, struct role *roles, size_t nroles,
			struct nf_buf *b)
{
	const struct nf_inventory *inv = p->o->inv;
	json_t *doc = json_object(), *nodes = json_array(), *rj = json_object();
	char *s;
	int e;

	if (!doc || !nodes || !rj) {
		json_decref(doc);
		json_decref(nodes);
		json_decref(rj);
		return -ENOMEM;
	}
	json_object_set_new(doc, "server_url", json_string(p->o->server_url));
	for (size_t i = 0; i < nroles; i++)
		json_object_set_new(rj, roles[i].name,
				    json_pack("{s:s, s:s, s:s, s:s, s:s}",
					      "kernel", roles[i].kernel,
					      "initramfs", roles[i].initramfs,
					      "rootfs", roles[i].rootfs,
					      "rootfs_sha256",
					      roles[i].rootfs_sha256,
					      "kernel_args", roles[i].args));
	json_object_set_new(doc, "roles", rj);
	for (size_t i = 0; i < nf_inventory_count(inv); i++) {
		const struct nf_node *nd = nf_inventory_node(inv, i);
		char mac[18], ip[16];

		nf_mac_format(nd->mac, ':', mac);
		nf_ipv4_format(nd->ip, ip);
		json_array_append_new(nodes,
				      json_pack("{s:s, s:s, s:s, s:s, s:s}",
						"name", nd->name, "mac", mac,
						"ip", ip, "role", nd->role,
						"rack", nd->rack));
	}
	json_object_set_new(doc, "nodes", nodes);
	s = json_dumps(doc, JSON_INDENT(1) | JSON_SORT_KEYS);
	json_decref(doc);
	if (!s)
		return -ENOMEM;
	nf_buf_printf(b, "%s\n", s);
	free(s);
	e = bput(p, "", "nodes.json", b);
	return e;
}

static int valid_url(const char *u)
{
	const char *h;

	if (strncmp(u, "http://", 7) && strncmp(u, "https://", 8))
		return 0;
	h = strstr(u, "://") + 3;
	if (!*h || *h == '/' || strlen(u) > 200)
		return 0;
	for (const char *c = h; *c; c++)
		if (!isalnum((unsigned char)*c) && !strchr(".:-[]/_~", *c))
			return 0;
	return u[strlen(u) - 1] != '/';
}

int nf_pxe_render(struct nf_ctx *ctx, const struct nf_pxe_opts *o,
		  struct nf_pxe_stats *st)
{
	struct pxe p = { .ctx = ctx, .o = o, .st = st, .root = -1 };
	const struct nf_inventory *inv = o->inv;
	struct role *roles = NULL;
	size_t nroles = 0;
	json_t *rolemap = json_object(); /* role -> index */
	struct nf_buf b = { 0 };
	const char *cidr = o->network;
	uint32_t net = 0;
	unsigned prefix = 0;
	int e = 0;

	memset(st, 0, sizeof(*st));
	p.keep = json_object();
	if (!rolemap || !p.keep) {
		e = -ENOMEM;
		goto out;
	}
	if (!o->server_url || !valid_url(o->server_url)) {
		e = nf_fail(ctx, NF_E_INVALID,
			    "invalid server URL '%s': expected http://HOST[:PORT]"
			    "[/PATH] without a trailing '/'",
			    o->server_url ? o->server_url : "");
		goto out;
	}
	if (o->api_upstream && (!valid_url(o->api_upstream))) {
		e = nf_fail(ctx, NF_E_INVALID, "invalid API upstream '%s'",
			    o->api_upstream);
		goto out;
	}
	if (!cidr)
		cidr = site_str(o->site, "networks", "provisioning", "cidr");
	if (!cidr) {
		e = nf_fail(ctx, NF_E_INVALID,
			    "no provisioning network: set "
			    "'networks.provisioning.cidr' in the site or pass "
			    "--network CIDR");
		goto out;
	}
	if (nf_cidr_parse(cidr, &net, &prefix)) {
		e = nf_fail(ctx, NF_E_INVALID, "malformed network '%s'", cidr);
		goto out;
	}
	if (o->network && (e = nf_inventory_check_network(ctx, inv, cidr, NULL)))
		goto out;
	if (!o->out_abs || o->out_abs[0] != '/' || !script_safe(o->out_abs)) {
		e = nf_fail(ctx, NF_E_INVALID, "invalid output directory '%s'",
			    o->out_abs ? o->out_abs : "");
		goto out;
	}

	/* one image and one argument string per role */
	roles = calloc(nf_inventory_count(inv) ? nf_inventory_count(inv) : 1,
		       sizeof(*roles));
	if (!roles) {
		e = -ENOMEM;
		goto out;
	}
	if (mkdir(o->out_dir, 0755) < 0 && errno != EEXIST) {
		e = nf_fail(ctx, -errno, "cannot create '%s': %s", o->out_dir,
			    strerror(errno));
		goto out;
	}
	p.root = open(o->out_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (p.root < 0) {
		e = nf_fail(ctx, -errno, "cannot open '%s': %s", o->out_dir,
			    strerror(errno));
		goto out;
	}
	if ((e = check_boot_files(&p, st)))
		goto out;
	for (size_t i = 0; i < nf_inventory_count(inv); i++) {
		const struct nf_node *nd = nf_inventory_node(inv, i);
		struct role *r;
		const char *args;

		if (json_object_get(rolemap, nd->role))
			continue;
		r = &roles[nroles];
		r->name = nd->role;
		args = json_string_value(json_object_get(o->role_args, nd->role));
		if (!args) {
			e = nf_fail(ctx, NF_E_NOTFOUND,
				    "no kernel arguments for role '%s'", nd->role);
			goto out;
		}
		if (!script_safe(args)) {
			e = nf_fail(ctx, NF_E_UNSAFE,
				    "kernel arguments of role '%s' contain a "
				    "quote, '$', ';', '#', braces or a control "
				    "character: '%s'", nd->role, args);
			goto out;
		}
		r->args = args;
		nroles++;
		json_object_set_new(rolemap, nd->role,
				    json_integer((json_int_t)nroles - 1));
		if ((e = load_current(&p, r)))
			goto out;
		if ((e = render_kickstart(&p, r, &b)))
			goto out;
	}
	if ((e = render_ipxe_common(&p, &b)))
		goto out;
	if ((e = dir_fd(&p, "tftp")) < 0)
		goto out;
	if ((e = place_ipxe(&p)))
		goto out;
	for (size_t i = 0; i < nf_inventory_count(inv); i++) {
		const struct nf_node *nd = nf_inventory_node(inv, i);
		struct role *r = &roles[json_integer_value(
			json_object_get(rolemap, nd->role))];

		if ((e = render_node(&p, nd, r, &b)))
			goto out;
	}
	if (o->cluster_conf && o->cluster_hosts) {
		nf_buf_printf(&b, "%s", o->cluster_conf);
		if ((e = bput(&p, "cluster", "slurm.conf", &b)))
			goto out;
		nf_buf_printf(&b, "%s", o->cluster_hosts);
		if ((e = bput(&p, "cluster", "hosts", &b)))
			goto out;
	}
	if ((e = render_dnsmasq(&p, net, prefix, &b)) ||
	    (e = render_nginx(&p, &b)) ||
	    (e = render_index(&p, roles, nroles, &b)))
		goto out;
	if ((e = publish(&p)))
		goto out;
	if ((e = prune(&p, "ipxe/mac", "", ".ipxe")) ||
	    (e = prune(&p, "grub", "grub.cfg-01-", "")))
		goto out;
	if (o->kickstart_dir && (e = prune(&p, "kickstart", "", ".ks")))
		goto out;
	e = 0;
out:
	unstage(&p);
	free(p.stg);
	for (size_t i = 0; i < p.ndirs; i++) {
		close(p.dirs[i].fd);
		free(p.dirs[i].path);
	}
	if (p.root >= 0)
		close(p.root);
	for (size_t i = 0; i < nroles; i++) {
		free(roles[i].kernel);
		free(roles[i].initramfs);
		free(roles[i].rootfs);
		free(roles[i].rootfs_sha256);
		free(roles[i].liveimg);
		free(roles[i].liveimg_sha256);
	}
	free(roles);
	free(b.s);
	json_decref(rolemap);
	json_decref(p.keep);
	return e;
}
