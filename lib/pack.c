/* SPDX-License-Identifier: MIT */
/*
 * Deterministic packing of a root tree into tar or cpio (newc) plus its
 * manifest, in one pass over the content.
 *
 * Pass 1 (lib/pack_walk.c) walks the tree with the one walker (never
 * following a symlink) and collects the relative paths in its order:
 * bytewise, component by component.  Pass 2 opens each
 * entry again through O_NOFOLLOW directory fds and writes it: numeric owners,
 * mtimes clamped to the epoch, no atime/ctime, inode numbers synthesized
 * from the sorted position, device number 0, hard links as links to the
 * first name in sorted order.  Each file's content is read once: the same
 * buffer goes to the archive writer and to the file's sha256.  Only the
 * path list and the hard-link table are held in memory; the manifest is
 * streamed to its temporary file.
 */
#include "pack_int.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#define PACK_BUF (1 << 20)
#define PACK_FLUSH (8ULL << 20)
#define XATTR_LIST_MAX_ (64 * 1024)

/* ------------------------------------------------------------ formats */

static const struct {
	const char *suffix;
	int format, comp;
} formats[] = {
	{ "tar.zst", NF_PACK_TAR, NF_COMP_ZSTD },
	{ "cpio.zst", NF_PACK_CPIO, NF_COMP_ZSTD },
	{ "tar.gz", NF_PACK_TAR, NF_COMP_GZIP },
	{ "cpio.gz", NF_PACK_CPIO, NF_COMP_GZIP },
	{ "tar.xz", NF_PACK_TAR, NF_COMP_XZ },
	{ "cpio.xz", NF_PACK_CPIO, NF_COMP_XZ },
	{ "tar", NF_PACK_TAR, NF_COMP_NONE },
	{ "cpio", NF_PACK_CPIO, NF_COMP_NONE },
};

int nf_pack_parse_format(const char *name, int *format, int *compressor)
{
	size_t n = strlen(name);

	for (size_t i = 0; i < NF_ARRAY_SIZE(formats); i++) {
		size_t k = strlen(formats[i].suffix);

		if (!strcmp(name, formats[i].suffix) ||
		    (n > k && name[n - k - 1] == '.' &&
		     !strcmp(name + n - k, formats[i].suffix))) {
			*format = formats[i].format;
			*compressor = formats[i].comp;
			return 0;
		}
	}
	return NF_E_INVALID;
}

const char *nf_pack_format_name(int format, int compressor)
{
	for (size_t i = 0; i < NF_ARRAY_SIZE(formats); i++)
		if (formats[i].format == format && formats[i].comp == compressor)
			return formats[i].suffix;
	return "?";
}

/* --------------------------------------------------------- pass 2 helpers */

/* Open directories along the current path, reused between entries */
struct dstack {
	int rootfd;
	int depth;
	int fd[NF_WALK_DEPTH + 2];
	size_t end[NF_WALK_DEPTH + 2]; /* length of the prefix this fd opens */
	char path[PATH_MAX];
};

static void dstack_pop(struct dstack *s)
{
	close(s->fd[s->depth]);
	s->depth--;
}

/* The dirfd of the parent of `p` (relative path) */
static int dstack_parent(struct nf_ctx *ctx, struct dstack *s, const char *p,
			 int *out)
{
	const char *slash = strrchr(p, '/');
	size_t plen = slash ? (size_t)(slash - p) : 0;

	/* Keep the levels whose prefix is a whole-component prefix of p */
	while (s->depth > 0) {
		size_t e = s->end[s->depth];

		if (e <= plen && !strncmp(s->path, p, e) &&
		    (p[e] == '/' || e == plen))
			break;
		dstack_pop(s);
	}
	while ((s->depth > 0 ? s->end[s->depth] : 0) < plen) {
		size_t start = s->depth > 0 ? s->end[s->depth] + 1 : 0;
		const char *c = p + start;
		const char *ce = strchr(c, '/');
		size_t clen = (size_t)(ce - c);
		char comp[NAME_MAX + 1];
		int pfd = s->depth > 0 ? s->fd[s->depth] : s->rootfd, fd;

		if (clen > NAME_MAX || s->depth + 1 > NF_WALK_DEPTH + 1)
			return nf_fail(ctx, NF_E_LIMIT, "path '%s' is too deep",
				       p);
		memcpy(comp, c, clen);
		comp[clen] = '\0';
		fd = openat(pfd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
			    O_CLOEXEC);
		if (fd < 0)
			return nf_fail(ctx, -errno,
				       "cannot open directory of '%s': %s "
				       "(did the tree change while packing?)",
				       p, strerror(errno));
		s->depth++;
		s->fd[s->depth] = fd;
		s->end[s->depth] = start + clen;
		memcpy(s->path, p, start + clen);
		s->path[start + clen] = '\0';
	}
	*out = s->depth > 0 ? s->fd[s->depth] : s->rootfd;
	return 0;
}

struct xattrs {
	char list[XATTR_LIST_MAX_];
	const char *names[NF_XATTR_MAX];
	const void *values[NF_XATTR_MAX];
	size_t sizes[NF_XATTR_MAX];
	char *store;  /* values, back to back */
	size_t n;
};

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int read_xattrs(struct nf_ctx *ctx, int fd, const char *path,
		       struct xattrs *x)
{
	ssize_t len = flistxattr(fd, x->list, sizeof(x->list));
	size_t off = 0;

	x->n = 0;
	if (len < 0) {
		if (errno == ENOTSUP || errno == ENOSYS)
			return 0;
		return nf_fail(ctx, -errno,
			       "cannot list extended attributes of '%s': %s",
			       path, strerror(errno));
	}
	for (char *p = x->list; p < x->list + len; p += strlen(p) + 1) {
		if (x->n >= NF_XATTR_MAX)
			return nf_fail(ctx, NF_E_LIMIT,
				       "'%s' has more than %d extended attributes",
				       path, NF_XATTR_MAX);
		x->names[x->n++] = p;
	}
	qsort(x->names, x->n, sizeof(*x->names), cmp_str);
	for (size_t i = 0; i < x->n; i++) {
		ssize_t v = fgetxattr(fd, x->names[i], x->store + off,
				      NF_XATTR_VALUE_MAX);

		if (v < 0)
			return nf_fail(ctx, -errno,
				       "cannot read extended attribute '%s' of "
				       "'%s': %s", x->names[i], path,
				       strerror(errno));
		x->values[i] = x->store + off;
		x->sizes[i] = (size_t)v;
		off += (size_t)v;
	}
	return 0;
}

/* ------------------------------------------------------------- the pack */

struct pack {
	struct nf_ctx *ctx;
	const struct nf_pack_opts *o;
	struct nf_awriter *w;
	struct nf_sha256 *file_hash, *arc_hash;
	int outfd;
	int werr;     /* errno of a failed write of the archive */
	unsigned long long arc_size, arc_flushed;
	FILE *mf;
	char *buf;
	struct xattrs *xa;
	unsigned long long nentries, bytes;
	int xattr_dropped;
	char *line;   /* the current entry's manifest line */
	size_t line_len, line_cap;
};

static int out_write(void *data, const void *buf, size_t len)
{
	struct pack *p = data;
	const char *b = buf;
	int r;

	nf_sha256_update(p->arc_hash, buf, len);
	p->arc_size += len;
	if ((r = nf_write_full(p->outfd, b, len))) {
		/* May run in the compressing thread: the message is
		 * recorded by nf_pack() */
		p->werr = -r;
		return r;
	}
	/* Start writeback as the archive grows, so the fsync that publishes
	 * it waits for the last few MiB only, not the whole image */
	if (p->arc_size - p->arc_flushed >= PACK_FLUSH) {
		sync_file_range(p->outfd, (off_t)p->arc_flushed,
				(off_t)(p->arc_size - p->arc_flushed),
				SYNC_FILE_RANGE_WRITE);
		p->arc_flushed = p->arc_size;
	}
	return 0;
}

static const char *type_name(mode_t m)
{
	switch (m & S_IFMT) {
	case S_IFREG: return "file";
	case S_IFDIR: return "dir";
	case S_IFLNK: return "symlink";
	case S_IFCHR: return "chardev";
	case S_IFBLK: return "blockdev";
	case S_IFIFO: return "fifo";
	default: return "unknown";
	}
}

/* The manifest line of the entry being packed, built as it goes: the
 * same bytes as jansson's compact dump of the entry object, without an
 * object per entry */
static int line_add(struct pack *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int line_add(struct pack *p, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		size_t room = p->line_cap - p->line_len;

		va_start(ap, fmt);
		n = vsnprintf(p->line + p->line_len, room, fmt, ap);
		va_end(ap);
		if (n < 0)
			return -EIO;
		if ((size_t)n < room)
			break;
		{
			size_t ncap = (p->line_len + (size_t)n + 1) * 2;
			char *nl = realloc(p->line, ncap);

			if (!nl)
				return -ENOMEM;
			p->line = nl;
			p->line_cap = ncap;
		}
	}
	p->line_len += (size_t)n;
	return 0;
}

/* A JSON string: printable ASCII as it is, anything else through jansson
 * (its escapes, its UTF-8 check).  1: not valid UTF-8. */
static int line_str(struct pack *p, const char *v)
{
	const unsigned char *c = (const unsigned char *)v;
	json_t *j;
	char *d;
	int r;

	while (*c >= 0x20 && *c < 0x7f && *c != '"' && *c != '\\')
		c++;
	if (!*c)
		return line_add(p, "\"%s\"", v);
	if (!(j = json_string(v)))
		return 1;
	d = json_dumps(j, JSON_ENCODE_ANY);
	json_decref(j);
	if (!d)
		return -ENOMEM;
	r = line_add(p, "%s", d);
	free(d);
	return r;
}

/* `,"key":"value"` (`{"key":"value"` for the first) for a path or a
 * link target of the entry `path` */
static int line_path(struct pack *p, const char *key, const char *val,
		     const char *path)
{
	int r = line_add(p, "%s\"%s\":", p->line_len ? "," : "{", key);

	if (!r && (r = line_str(p, val)) == 1)
		return nf_fail(p->ctx, NF_E_UNSUPPORTED,
			       "'%s' is not valid UTF-8: cannot record it in "
			       "the manifest", path);
	return r;
}

/* Open a regular file or directory that pass 1 saw as one: open and fstat
 * instead of stat, open and fstat.  1: opened, 0: not a file or directory
 * any more (the caller stats it), < 0: error. */
static int open_known(int pfd, const char *base, unsigned char type, int *fd,
		      struct stat *st)
{
	if (type != DT_REG && type != DT_DIR)
		return 0;
	*fd = openat(pfd, base, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC |
		     O_NONBLOCK | (type == DT_DIR ? O_DIRECTORY : 0));
	if (*fd < 0)
		return errno == ELOOP || errno == ENOTDIR ? 0 : -errno;
	if (fstat(*fd, st) < 0) {
		int e = -errno;

		close(*fd);
		*fd = -1;
		return e;
	}
	if (S_ISREG(st->st_mode) || S_ISDIR(st->st_mode))
		return 1;
	close(*fd);
	*fd = -1;
	return 0;
}

static int pack_entry(struct pack *p, struct dstack *ds, struct hl_table *hl,
		      const char *path, unsigned char type,
		      unsigned long long ino)
{
	struct nf_ctx *ctx = p->ctx;
	struct nf_aentry e = { 0 };
	struct stat st;
	char target[PATH_MAX], hex[NF_SHA256_HEX];
	const char *base = strrchr(path, '/');
	int pfd = -1, fd = -1, r, is_root = !strcmp(path, ".");
	struct hl_slot *link = NULL;
	int hardlink = 0;

	base = base ? base + 1 : path;
	if (is_root) {
		pfd = ds->rootfd;
		fd = fcntl(ds->rootfd, F_DUPFD_CLOEXEC, 0);
		if (fd < 0 || fstat(fd, &st) < 0)
			return nf_fail(ctx, -errno, "cannot stat the root: %s",
				       strerror(errno));
	} else {
		if ((r = dstack_parent(ctx, ds, path, &pfd)))
			return r;
		r = open_known(pfd, base, type, &fd, &st);
		if (r < 0)
			return nf_fail(ctx, r, "cannot open '%s': %s", path,
				       strerror(-r));
		if (!r && fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return nf_fail(ctx, -errno, "cannot stat '%s': %s", path,
				       strerror(errno));
	}
	if (S_ISSOCK(st.st_mode)) {
		nf_log(ctx, NF_LOG_WARN, "skipping socket '%s'", path);
		return 0;
	}
	if (fd < 0 && (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode))) {
		fd = openat(pfd, base, O_RDONLY | O_NOFOLLOW | O_NOCTTY |
			    O_CLOEXEC | O_NONBLOCK |
			    (S_ISDIR(st.st_mode) ? O_DIRECTORY : 0));
		if (fd < 0 || fstat(fd, &st) < 0) {
			r = nf_fail(ctx, -errno, "cannot open '%s': %s", path,
				    strerror(errno));
			goto out;
		}
	}
	e.path = path;
	e.mode = st.st_mode;
	e.uid = st.st_uid;
	e.gid = st.st_gid;
	e.mtime = st.st_mtime > p->o->epoch ? p->o->epoch : st.st_mtime;
	e.ino = ino;
	e.nlink = S_ISDIR(st.st_mode) ? 2 : 1;
	if (fd >= 0) {
		if ((r = read_xattrs(ctx, fd, path, p->xa)))
			goto out;
		if (p->xa->n && p->o->format == NF_PACK_CPIO) {
			if (!p->xattr_dropped)
				nf_log(ctx, NF_LOG_WARN,
				       "cpio cannot hold extended attributes: "
				       "dropping those of '%s' and others",
				       path);
			p->xattr_dropped = 1;
		} else {
			e.nxattr = p->xa->n;
			e.xattr_names = p->xa->names;
			e.xattr_values = p->xa->values;
			e.xattr_sizes = p->xa->sizes;
		}
	}
	p->line_len = 0;
	if ((r = line_path(p, "path", path, path)))
		goto out;
	if (S_ISREG(st.st_mode) && st.st_nlink > 1) {
		int tar = p->o->format == NF_PACK_TAR;

		link = nf_pk_hl_get(hl, st.st_dev, st.st_ino, tar);
		if (tar && !link) {
			r = -ENOMEM;
			goto out;
		}
		if (tar)
			link->count++;
		if (link && link->first) {
			e.ino = link->sino;
			e.nlink = link->count;
			if (p->o->format == NF_PACK_TAR)
				e.hardlink = link->first;
			hardlink = 1;
			if ((r = line_add(p, ",\"type\":\"hardlink\"")) ||
			    (r = line_path(p, "target", link->first, path)))
				goto out;
		} else if (link) {
			link->first = path;
			link->sino = ino;
			e.nlink = link->count;
		}
	}
	if (!hardlink && (r = line_add(p, ",\"type\":\"%s\"",
				       type_name(st.st_mode))))
		goto out;
	if ((r = line_add(p, ",\"mode\":\"%04o\",\"uid\":%llu,\"gid\":%llu",
			  (unsigned)(st.st_mode & 07777),
			  (unsigned long long)st.st_uid,
			  (unsigned long long)st.st_gid)))
		goto out;
	if (S_ISLNK(st.st_mode)) {
		ssize_t n = readlinkat(pfd, base, target, sizeof(target) - 1);

		if (n < 0 || (size_t)n >= sizeof(target) - 1) {
			r = nf_fail(ctx, n < 0 ? -errno : NF_E_LIMIT,
				    "cannot read symlink '%s': %s", path,
				    n < 0 ? strerror(errno) : "too long");
			goto out;
		}
		target[n] = '\0';
		e.symlink = target;
		if ((r = line_path(p, "target", target, path)))
			goto out;
	}
	if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
		e.rdev_major = major(st.st_rdev);
		e.rdev_minor = minor(st.st_rdev);
		if ((r = line_add(p, ",\"rdev\":\"%lu:%lu\"", e.rdev_major,
				  e.rdev_minor)))
			goto out;
	}
	if (S_ISREG(st.st_mode) && !(link && link->first != path))
		e.size = st.st_size;
	if (S_ISREG(st.st_mode) && !hardlink &&
	    (r = line_add(p, ",\"size\":%lld", (long long)st.st_size)))
		goto out;
	if (e.nxattr) {
		int sep = 0;

		if ((r = line_add(p, ",\"xattrs\":[")))
			goto out;
		for (size_t i = 0; i < e.nxattr; i++) {
			/* a name the manifest cannot hold fails the pack, like
			 * a path: an xattr the manifest hides could not be
			 * checked for drift */
			if ((r = line_add(p, sep ? "," : "")) ||
			    (r = line_str(p, e.xattr_names[i])) < 0)
				goto out;
			if (r == 1) {
				r = nf_fail(p->ctx, NF_E_UNSUPPORTED,
					    "'%s': extended attribute name is not "
					    "valid UTF-8: cannot record it in the "
					    "manifest", path);
				goto out;
			}
			sep = 1;
		}
		if ((r = line_add(p, "]")))
			goto out;
	}
	if ((r = nf_awriter_header(p->w, &e)))
		goto out;
	if (e.size > 0) {
		long long left = e.size;

		/* Ask for one byte more than is left: a short read is the end
		 * of the file, so a file that fits the buffer takes one read,
		 * and one that grew is caught without another */
		for (;;) {
			size_t room = PACK_BUF, want;
			char *buf = nf_awriter_buffer(p->w, &room);
			ssize_t n;

			if (!buf) {
				buf = p->buf;
				room = PACK_BUF;
			}
			want = (unsigned long long)left >= room ? room
								 : (size_t)left + 1;
			n = read(fd, buf, want);

			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 || (n == 0 && left > 0)) {
				r = nf_fail(ctx, n < 0 ? -errno : NF_E_CONFLICT,
					    "cannot read '%s': %s", path,
					    n < 0 ? strerror(errno)
						  : "file shrank while packing");
				goto out;
			}
			if (n > left) {
				r = nf_fail(ctx, NF_E_CONFLICT,
					    "cannot pack '%s': file grew while "
					    "packing", path);
				goto out;
			}
			if (n == 0)
				break;
			nf_sha256_update(p->file_hash, buf, (size_t)n);
			if ((r = nf_awriter_data(p->w, buf, (size_t)n)))
				goto out;
			left -= n;
			p->bytes += (unsigned long long)n;
			if (left == 0 && (size_t)n < want)
				break;
		}
	}
	if (S_ISREG(st.st_mode) && !hardlink) {
		nf_sha256_final_hex(p->file_hash, hex);
		if ((r = line_add(p, ",\"sha256\":\"%s\"", hex)))
			goto out;
	}
	if ((r = line_add(p, "}")))
		goto out;
	fprintf(p->mf, "%s    ", p->nentries == 0 ? "" : ",\n");
	fwrite(p->line, 1, p->line_len, p->mf);
	r = ferror(p->mf) ? -EIO : 0;
	p->nentries++;
out:
	if (fd >= 0)
		close(fd);
	return r;
}

static int default_level(int comp)
{
	return comp == NF_COMP_ZSTD ? 3 : comp == NF_COMP_GZIP ? 6
	       : comp == NF_COMP_XZ ? 6 : 0;
}

static int fsync_close_rename(struct nf_ctx *ctx, int fd, const char *tmp,
			      const char *dst)
{
	if (fchmod(fd, 0644) < 0 || fsync(fd) < 0) {
		int e = errno;

		close(fd);
		return nf_fail(ctx, -e, "cannot write '%s': %s", dst,
			       strerror(e));
	}
	if (close(fd) < 0 || rename(tmp, dst) < 0)
		return nf_fail(ctx, -errno, "cannot write '%s': %s", dst,
			       strerror(errno));
	return 0;
}

static void fsync_dir_of(const char *path)
{
	char *d = nf_strdup(path), *slash;
	int fd;

	if (!d)
		return;
	slash = strrchr(d, '/');
	if (slash)
		*(slash == d ? slash + 1 : slash) = '\0';
	fd = open(slash ? d : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
	free(d);
}

int nf_pack(struct nf_ctx *ctx, const char *root, const char *out,
	    const struct nf_pack_opts *o)
{
	struct walk w = { .ctx = ctx, .count_links = o->format == NF_PACK_CPIO };
	struct pack p = { .ctx = ctx, .o = o, .outfd = -1 };
	struct dstack ds = { .rootfd = -1 };
	char *tmp = NULL, *mpath = NULL, *mtmp = NULL, hex[NF_SHA256_HEX];
	const char *aname;
	int rootfd, mfd = -1, r, level;
	json_t *hdr = NULL;
	char *hs = NULL;

	if (o->format != NF_PACK_TAR && o->format != NF_PACK_CPIO)
		return nf_fail(ctx, NF_E_USAGE, "unknown archive format");
	rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return nf_fail(ctx, -errno, "cannot open '%s': %s", root,
			       strerror(errno));
	r = nf_pk_walk(&w, rootfd);
	if (r)
		goto out;

	tmp = nf_asprintf("%s.tmp.XXXXXX", out);
	mpath = nf_asprintf("%s.manifest.json", out);
	mtmp = nf_asprintf("%s.manifest.json.tmp.XXXXXX", out);
	p.buf = malloc(PACK_BUF);
	p.line_cap = 1024;
	p.line = malloc(p.line_cap);
	p.xa = calloc(1, sizeof(*p.xa));
	if (p.xa)
		p.xa->store = malloc((size_t)NF_XATTR_MAX * NF_XATTR_VALUE_MAX);
	if (!tmp || !mpath || !mtmp || !p.buf || !p.line || !p.xa ||
	    !p.xa->store) {
		r = -ENOMEM;
		goto out;
	}
	if ((r = nf_sha256_new(&p.file_hash)) || (r = nf_sha256_new(&p.arc_hash)))
		goto out;
	p.outfd = mkostemp(tmp, O_CLOEXEC);
	if (p.outfd < 0) {
		r = nf_fail(ctx, -errno, "cannot create '%s': %s", out,
			    strerror(errno));
		free(tmp);
		tmp = NULL;
		goto out;
	}
	mfd = mkostemp(mtmp, O_CLOEXEC);
	if (mfd < 0 || !(p.mf = fdopen(mfd, "w"))) {
		r = nf_fail(ctx, -errno, "cannot create '%s': %s", mpath,
			    strerror(errno));
		if (mfd >= 0) {
			close(mfd);
			unlink(mtmp);
		}
		free(mtmp);
		mtmp = NULL;
		goto out;
	}
	level = o->level >= 0 ? o->level : default_level(o->compressor);
	hdr = json_pack("{s:i, s:s, s:s, s:s, s:s, s:i, s:I}",
			"nodeforge_manifest", 1,
			"nodeforge_version", NF_VERSION,
			"nodeforge_commit", nf_commit,
			"format", o->format == NF_PACK_CPIO ? "cpio" : "tar",
			"compressor", o->compressor == NF_COMP_ZSTD ? "zstd"
				      : o->compressor == NF_COMP_GZIP ? "gzip"
				      : o->compressor == NF_COMP_XZ ? "xz"
				      : "none",
			"level", level,
			"epoch", (json_int_t)o->epoch);
	hs = hdr ? json_dumps(hdr, JSON_COMPACT) : NULL;
	if (!hs) {
		r = -ENOMEM;
		goto out;
	}
	/* The header object without its closing brace, then the entries */
	hs[strlen(hs) - 1] = '\0';
	fprintf(p.mf, "%s,\n  \"entries\": [\n", hs);

	r = nf_awriter_new(ctx, o->format, o->compressor,
			   o->compressor == NF_COMP_NONE ? -1 : level,
			   o->threads, out_write, &p, &p.w);
	if (r)
		goto out;
	ds.rootfd = rootfd;
	if ((r = pack_entry(&p, &ds, &w.hl, ".", DT_DIR, 1)))
		goto out;
	for (size_t i = 0; i < w.n; i++) {
		if ((r = pack_entry(&p, &ds, &w.hl, w.paths[i].path,
				    w.paths[i].type, i + 2)))
			goto out;
		if (o->progress && (i % 256 == 255 || i + 1 == w.n))
			o->progress(o->progress_data, i + 2, w.n + 1, p.bytes);
	}
	r = nf_awriter_close(p.w);
	p.w = NULL;
	if (r)
		goto out;
	nf_sha256_final_hex(p.arc_hash, hex);
	aname = strrchr(out, '/');
	aname = aname ? aname + 1 : out;
	{
		json_t *a = json_pack("{s:s, s:s, s:I}", "name", aname,
				      "sha256", hex, "size",
				      (json_int_t)p.arc_size);
		char *as = a ? json_dumps(a, JSON_COMPACT) : NULL;

		json_decref(a);
		if (!as) {
			r = nf_fail(ctx, NF_E_UNSUPPORTED,
				    "output name '%s' is not valid UTF-8", out);
			goto out;
		}
		fprintf(p.mf, "\n  ],\n  \"archive\": %s\n}\n", as);
		free(as);
	}
	if (fflush(p.mf) != 0) {
		r = nf_fail(ctx, -errno, "cannot write '%s': %s", mpath,
			    strerror(errno));
		goto out;
	}
	r = fsync_close_rename(ctx, p.outfd, tmp, out);
	p.outfd = -1;
	if (r)
		goto out;
	free(tmp);
	tmp = NULL;
	if (fchmod(fileno(p.mf), 0644) < 0 || fsync(fileno(p.mf)) < 0 ||
	    fclose(p.mf) != 0) {
		p.mf = NULL;
		r = nf_fail(ctx, -errno, "cannot write '%s': %s", mpath,
			    strerror(errno));
		goto out;
	}
	p.mf = NULL;
	if (rename(mtmp, mpath) < 0) {
		r = nf_fail(ctx, -errno, "cannot write '%s': %s", mpath,
			    strerror(errno));
		goto out;
	}
	free(mtmp);
	mtmp = NULL;
	fsync_dir_of(out);
out:
	while (ds.depth > 0)
		dstack_pop(&ds);
	nf_awriter_free(p.w);
	if (p.werr)
		r = nf_fail(ctx, -p.werr, "cannot write archive: %s",
			    strerror(p.werr));
	if (p.outfd >= 0)
		close(p.outfd);
	if (tmp)
		unlink(tmp);
	if (p.mf)
		fclose(p.mf);
	if (mtmp)
		unlink(mtmp);
	free(tmp);
	free(mtmp);
	free(mpath);
	free(hs);
	json_decref(hdr);
	nf_sha256_free(p.file_hash);
	nf_sha256_free(p.arc_hash);
	free(p.buf);
	free(p.line);
	if (p.xa)
		free(p.xa->store);
	free(p.xa);
	for (size_t i = 0; i < w.n; i++)
		free(w.paths[i].path);
	free(w.paths);
	free(w.hl.v);
	close(rootfd);
	return r;
}
