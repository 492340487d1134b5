/* SPDX-License-Identifier: MIT */
/*
 * libarchive adapter: the only file that sees libarchive's types and its
 * ARCHIVE_OK/WARN/FATAL convention.
 *
 * Writing: tar is pax-restricted (plain ustar headers unless an entry needs
 * pax records: long names, xattrs); cpio is newc.  zstd is not
 * libarchive's filter but lib/adapters/zstd.c, fed with the uncompressed
 * stream: it sets the parameters libarchive does not expose, and it always runs
 * zstd's multi-threaded mode (see there).  xz: liblzma's multi-threaded
 * encoder cuts the input into blocks of a size fixed by the preset and its
 * output does not depend on the thread count, but libarchive picks the
 * single-stream encoder for exactly one thread, so xz always gets at least
 * two (and at most NF_XZ_THREADS_MAX, which bounds the encoder's memory:
 * about 100 MiB a thread at the default preset).  gzip headers carry no
 * timestamp.
 *
 * Names: every call into libarchive runs in the C.UTF-8 locale of this
 * thread (uselocale), whatever the caller's: a UTF-8 name (the CA
 * certificates' have accents) is then a plain pax path, which GNU tar,
 * bsdtar and Anaconda read silently, and not hdrcharset=BINARY, which GNU
 * tar warns about; only a name that is not UTF-8 is written as binary.  The
 * bytes do not depend on the caller's locale.
 */
#include "internal.h"
#include "lazy.h"

#include <archive.h>
#include <archive_entry.h>
#include <locale.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define NF_XZ_THREADS_MAX 16

static locale_t utf8_locale;
static pthread_once_t utf8_once = PTHREAD_ONCE_INIT;

static void utf8_init(void)
{
	utf8_locale = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
}

/* Enter C.UTF-8 for a call into libarchive; LEAVE with what it returned */
static locale_t enter_utf8(void)
{
	pthread_once(&utf8_once, utf8_init);
	return utf8_locale ? uselocale(utf8_locale) : (locale_t)0;
}

static void leave_utf8(locale_t old)
{
	if (old)
		uselocale(old);
}

struct nf_awriter {
	struct nf_ctx *ctx;
	struct archive *a;
	struct archive_entry *e;
	struct nf_zstd *z;   /* NULL: libarchive's own filter or none */
	nf_awrite_fn fn;
	void *data;
	int err;
};

static la_ssize_t aw_write(struct archive *a, void *data, const void *buf,
			   size_t len)
{
	struct nf_awriter *w = data;
	int r;

	(void)a;
	r = w->z ? nf_zstd_write(w->z, buf, len) : w->fn(w->data, buf, len);
	if (r < 0) {
		w->err = r;
		return -1;
	}
	return (la_ssize_t)len;
}

static int aw_fail(struct nf_awriter *w, const char *what)
{
	if (w->err)
		return w->err;
	return nf_fail(w->ctx, NF_E_EXTERNAL, "cannot %s: %s", what,
		       archive_error_string(w->a) ? archive_error_string(w->a)
						  : "libarchive error");
}

int nf_awriter_new(struct nf_ctx *ctx, int format, int compressor, int level,
		   int threads, nf_awrite_fn fn, void *data,
		   struct nf_awriter **out)
{
	struct nf_awriter *w = calloc(1, sizeof(*w));
	char num[32];
	int r;

	if (!w)
		return -ENOMEM;
	w->ctx = ctx;
	w->fn = fn;
	w->data = data;
	w->a = archive_write_new();
	w->e = archive_entry_new();
	if (!w->a || !w->e) {
		nf_awriter_free(w);
		return nf_lazy_err(NF_LAZY_ARCHIVE);
	}
	r = format == NF_PACK_CPIO ? archive_write_set_format_cpio_newc(w->a)
				   : archive_write_set_format_pax_restricted(w->a);
	if (r != ARCHIVE_OK)
		goto fail;
	/* SCHILY.xattr only: what GNU tar reads, and libarchive too */
	if (format == NF_PACK_TAR &&
	    archive_write_set_format_option(w->a, "pax", "xattrheader",
					    "SCHILY") != ARCHIVE_OK)
		goto fail;
	switch (compressor) {
	case NF_COMP_ZSTD:
		if ((r = nf_zstd_new(ctx, level >= 0 ? level : 3, threads, fn,
				     data, &w->z))) {
			nf_awriter_free(w);
			return r;
		}
		break;
	case NF_COMP_GZIP:
		if (archive_write_add_filter_gzip(w->a) != ARCHIVE_OK)
			goto fail;
		if (archive_write_set_filter_option(w->a, "gzip", "timestamp",
						    NULL) != ARCHIVE_OK)
			goto fail;
		if (level >= 0) {
			snprintf(num, sizeof(num), "%d", level);
			if (archive_write_set_filter_option(w->a, "gzip",
					"compression-level", num) != ARCHIVE_OK)
				goto fail;
		}
		break;
	case NF_COMP_XZ:
		if (archive_write_add_filter_xz(w->a) != ARCHIVE_OK)
			goto fail;
		if (level >= 0) {
			snprintf(num, sizeof(num), "%d", level);
			if (archive_write_set_filter_option(w->a, "xz",
					"compression-level", num) != ARCHIVE_OK)
				goto fail;
		}
		if (threads <= 0) {
			long n = sysconf(_SC_NPROCESSORS_ONLN);
			threads = n > 0 ? (int)n : 1;
		}
		threads = threads < 2 ? 2 : threads > NF_XZ_THREADS_MAX
					  ? NF_XZ_THREADS_MAX : threads;
		snprintf(num, sizeof(num), "%d", threads);
		/* a libarchive without the option ("Undefined option") writes
		 * one stream with one thread: deterministic too, only slower */
		if (archive_write_set_filter_option(w->a, "xz", "threads",
						    num) == ARCHIVE_FATAL)
			goto fail;
		break;
	case NF_COMP_NONE:
		break;
	default:
		nf_awriter_free(w);
		return nf_fail(ctx, NF_E_USAGE, "unknown compressor %d",
			       compressor);
	}
	/* Large blocks, no padding of the last one beyond the format's own.
	 * zstd buffers its input itself: libarchive passes content through
	 * without copying it into blocks. */
	archive_write_set_bytes_per_block(w->a, w->z ? 0 : 256 * 1024);
	archive_write_set_bytes_in_last_block(w->a, 1);
	if (archive_write_open2(w->a, w, NULL, aw_write, NULL, NULL) !=
	    ARCHIVE_OK)
		goto fail;
	*out = w;
	return 0;
fail:
	r = aw_fail(w, "set up the archive writer");
	nf_awriter_free(w);
	return r;
}

static int awriter_header(struct nf_awriter *w, const struct nf_aentry *x)
{
	struct archive_entry *e = w->e;

	archive_entry_clear(e);
	archive_entry_copy_pathname(e, x->path);
	archive_entry_set_mode(e, x->mode);
	archive_entry_set_uid(e, (la_int64_t)x->uid);
	archive_entry_set_gid(e, (la_int64_t)x->gid);
	archive_entry_set_mtime(e, (time_t)x->mtime, 0);
	archive_entry_set_ino64(e, (la_int64_t)x->ino);
	archive_entry_set_dev(e, 0);
	archive_entry_set_nlink(e, x->nlink ? x->nlink : 1);
	if (S_ISCHR(x->mode) || S_ISBLK(x->mode)) {
		archive_entry_set_rdevmajor(e, (dev_t)x->rdev_major);
		archive_entry_set_rdevminor(e, (dev_t)x->rdev_minor);
	}
	if (x->symlink)
		archive_entry_copy_symlink(e, x->symlink);
	if (x->hardlink)
		archive_entry_copy_hardlink(e, x->hardlink);
	archive_entry_set_size(e, x->size);
	for (size_t i = 0; i < x->nxattr; i++)
		archive_entry_xattr_add_entry(e, x->xattr_names[i],
					      x->xattr_values[i],
					      x->xattr_sizes[i]);
	if (archive_write_header(w->a, e) < ARCHIVE_WARN)
		return aw_fail(w, "write the header of an entry");
	return 0;
}

int nf_awriter_header(struct nf_awriter *w, const struct nf_aentry *x)
{
	locale_t old = enter_utf8();
	int r = awriter_header(w, x);

	leave_utf8(old);
	return r;
}

int nf_awriter_data(struct nf_awriter *w, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		la_ssize_t n = archive_write_data(w->a, p, len);

		if (n <= 0)
			return aw_fail(w, "write archive data");
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

void *nf_awriter_buffer(struct nf_awriter *w, size_t *len)
{
	return w->z ? nf_zstd_buffer(w->z, len) : NULL;
}

int nf_awriter_close(struct nf_awriter *w)
{
	int r = 0;

	if (archive_write_close(w->a) != ARCHIVE_OK)
		r = aw_fail(w, "finish the archive");
	if (!r && w->z) {
		r = nf_zstd_close(w->z);
		w->z = NULL;
	}
	nf_awriter_free(w);
	return r;
}

void nf_awriter_free(struct nf_awriter *w)
{
	if (!w)
		return;
	if (w->a)
		archive_write_free(w->a);
	if (w->e)
		archive_entry_free(w->e);
	nf_zstd_free(w->z);
	free(w);
}

/* ----------------------------------------------------------------- reader */

struct nf_areader {
	struct nf_ctx *ctx;
	struct archive *a;
	const char *names[NF_XATTR_MAX];
	const void *values[NF_XATTR_MAX];
	size_t sizes[NF_XATTR_MAX];
};

static int ar_setup(struct nf_ctx *ctx, struct nf_areader **out)
{
	struct nf_areader *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	r->ctx = ctx;
	r->a = archive_read_new();
	if (!r->a) {
		free(r);
		return nf_lazy_err(NF_LAZY_ARCHIVE);
	}
	/* Only what nf_pack writes and its peers write: no external
	 * programs, no exotic formats */
	archive_read_support_filter_zstd(r->a);
	archive_read_support_filter_gzip(r->a);
	archive_read_support_filter_xz(r->a);
	archive_read_support_filter_none(r->a);
	archive_read_support_format_tar(r->a);
	archive_read_support_format_cpio(r->a);
	*out = r;
	return 0;
}

static int ar_fail(struct nf_areader *r, const char *what)
{
	const char *m = archive_error_string(r->a);

	return nf_fail(r->ctx, NF_E_PARSE, "cannot %s: %s", what,
		       m ? m : "not a supported archive");
}

int nf_areader_open_fd(struct nf_ctx *ctx, int fd, struct nf_areader **out)
{
	struct nf_areader *r;
	int e = ar_setup(ctx, &r);

	if (e)
		return e;
	if (archive_read_open_fd(r->a, fd, 256 * 1024) != ARCHIVE_OK) {
		e = ar_fail(r, "open the archive");
		nf_areader_free(r);
		return e;
	}
	*out = r;
	return 0;
}

int nf_areader_open_mem(struct nf_ctx *ctx, const void *buf, size_t len,
			struct nf_areader **out)
{
	struct nf_areader *r;
	int e = ar_setup(ctx, &r);

	if (e)
		return e;
	if (archive_read_open_memory(r->a, buf, len) != ARCHIVE_OK) {
		e = ar_fail(r, "open the archive");
		nf_areader_free(r);
		return e;
	}
	*out = r;
	return 0;
}

static int areader_next(struct nf_areader *r, struct nf_aentry *x)
{
	struct archive_entry *e;
	const char *name;
	const void *val;
	size_t sz;
	int k = archive_read_next_header(r->a, &e);

	if (k == ARCHIVE_EOF)
		return 0;
	if (k < ARCHIVE_WARN)
		return ar_fail(r, "read the next entry");
	memset(x, 0, sizeof(*x));
	x->path = archive_entry_pathname(e);
	if (!x->path)
		return nf_fail(r->ctx, NF_E_PARSE,
			       "cannot read the next entry: it has no name");
	x->mode = archive_entry_mode(e);
	x->uid = (unsigned long)archive_entry_uid(e);
	x->gid = (unsigned long)archive_entry_gid(e);
	x->size = archive_entry_size_is_set(e) ? archive_entry_size(e) : 0;
	x->mtime = archive_entry_mtime(e);
	x->ino = (unsigned long long)archive_entry_ino64(e);
	x->nlink = archive_entry_nlink(e);
	x->rdev_major = archive_entry_rdevmajor(e);
	x->rdev_minor = archive_entry_rdevminor(e);
	x->symlink = archive_entry_symlink(e);
	x->hardlink = archive_entry_hardlink(e);
	if (x->symlink && !S_ISLNK(x->mode))
		x->symlink = NULL;
	if (x->hardlink)
		x->symlink = NULL;
	archive_entry_xattr_reset(e);
	while (archive_entry_xattr_next(e, &name, &val, &sz) == ARCHIVE_OK) {
		if (x->nxattr >= NF_XATTR_MAX)
			return nf_fail(r->ctx, NF_E_LIMIT,
				       "'%s' has more than %d extended attributes",
				       x->path, NF_XATTR_MAX);
		r->names[x->nxattr] = name;
		r->values[x->nxattr] = val;
		r->sizes[x->nxattr] = sz;
		x->nxattr++;
	}
	x->xattr_names = r->names;
	x->xattr_values = r->values;
	x->xattr_sizes = r->sizes;
	return 1;
}

int nf_areader_next(struct nf_areader *r, struct nf_aentry *x)
{
	locale_t old = enter_utf8();
	int k = areader_next(r, x);

	leave_utf8(old);
	return k;
}

ssize_t nf_areader_data(struct nf_areader *r, void *buf, size_t len)
{
	la_ssize_t n = archive_read_data(r->a, buf, len);

	if (n < 0)
		return ar_fail(r, "read entry data");
	return n;
}

void nf_areader_free(struct nf_areader *r)
{
	if (!r)
		return;
	archive_read_free(r->a);
	free(r);
}
