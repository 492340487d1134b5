/* SPDX-License-Identifier: MIT */
/*
 * Manifests: parsing and validation, signature + archive verification,
 * drift against a live tree, and the difference between two manifests.
 */
#include "internal.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#define CHECK_DEPTH 256

static const char *const types[] = { "file", "dir", "symlink", "hardlink",
				     "chardev", "blockdev", "fifo", NULL };

static int is_hex64(const char *s)
{
	size_t i;

	for (i = 0; s[i]; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return i == 64;
}

static int is_mode(const char *s)
{
	size_t i;

	for (i = 0; s[i]; i++)
		if (s[i] < '0' || s[i] > '7')
			return 0;
	return i >= 3 && i <= 5 && strtoul(s, NULL, 8) <= 07777;
}

static int bad(struct nf_ctx *ctx, size_t i, const char *what)
{
	return nf_fail(ctx, NF_E_INVALID, "manifest entry %zu: %s", i, what);
}

static int check_entry(struct nf_ctx *ctx, size_t i, const json_t *e)
{
	const char *type, *path, *mode;
	json_t *v;
	int known = 0;

	if (!json_is_object(e))
		return bad(ctx, i, "not an object");
	path = json_string_value(json_object_get(e, "path"));
	type = json_string_value(json_object_get(e, "type"));
	mode = json_string_value(json_object_get(e, "mode"));
	if (!path || !*path || strlen(path) >= PATH_MAX)
		return bad(ctx, i, "'path' missing or not a string");
	if (!type)
		return bad(ctx, i, "'type' missing");
	for (size_t k = 0; types[k]; k++)
		known |= !strcmp(types[k], type);
	if (!known)
		return bad(ctx, i, "unknown 'type'");
	if (!mode || !is_mode(mode))
		return bad(ctx, i, "'mode' missing or not an octal mode");
	if (!json_is_integer(v = json_object_get(e, "uid")) ||
	    json_integer_value(v) < 0 ||
	    !json_is_integer(v = json_object_get(e, "gid")) ||
	    json_integer_value(v) < 0)
		return bad(ctx, i, "'uid'/'gid' missing or negative");
	if (!strcmp(type, "file")) {
		const char *h = json_string_value(json_object_get(e, "sha256"));

		if (!json_is_integer(v = json_object_get(e, "size")) ||
		    json_integer_value(v) < 0)
			return bad(ctx, i, "'size' missing or negative");
		if (!h || !is_hex64(h))
			return bad(ctx, i, "'sha256' missing or malformed");
	}
	if ((!strcmp(type, "symlink") || !strcmp(type, "hardlink")) &&
	    !json_is_string(json_object_get(e, "target")))
		return bad(ctx, i, "'target' missing");
	v = json_object_get(e, "xattrs");
	if (v && !json_is_array(v))
		return bad(ctx, i, "'xattrs' is not a list");
	return 0;
}

static int check_version(struct nf_ctx *ctx, const json_t *m)
{
	const json_t *v = json_object_get(m, "nodeforge_manifest");

	if (!json_is_object(m) || !json_is_integer(v) ||
	    json_integer_value(v) != 1)
		return nf_fail(ctx, NF_E_INVALID,
			       "not a nodeforge manifest (version 1)");
	return 0;
}

static int check_archive(struct nf_ctx *ctx, const json_t *m)
{
	const json_t *a = json_object_get(m, "archive");

	if (!json_is_object(a) ||
	    !json_is_string(json_object_get(a, "name")) ||
	    !json_is_string(json_object_get(a, "sha256")) ||
	    !is_hex64(json_string_value(json_object_get(a, "sha256"))) ||
	    !json_is_integer(json_object_get(a, "size")) ||
	    json_integer_value(json_object_get(a, "size")) < 0)
		return nf_fail(ctx, NF_E_INVALID,
			       "'archive' missing or without name, sha256, size "
			       "(a size of 0 or more)");
	return 0;
}

int nf_manifest_parse(struct nf_ctx *ctx, const char *buf, size_t len,
		      json_t **out)
{
	json_error_t err;
	json_t *m, *entries, *v;
	size_t i;
	int r;

	if (len > NF_MANIFEST_MAX)
		return nf_fail(ctx, NF_E_LIMIT, "manifest larger than %llu bytes",
			       NF_MANIFEST_MAX);
	m = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &err);
	if (!m)
		return nf_fail(ctx, NF_E_PARSE, "line %d: %s", err.line,
			       err.text);
	if ((r = check_version(ctx, m)))
		goto fail;
	entries = json_object_get(m, "entries");
	if (!json_is_array(entries)) {
		r = nf_fail(ctx, NF_E_INVALID, "'entries' missing or not a list");
		goto fail;
	}
	json_array_foreach(entries, i, v)
		if ((r = check_entry(ctx, i, v)))
			goto fail;
	if ((r = check_archive(ctx, m)))
		goto fail;
	*out = m;
	return 0;
fail:
	json_decref(m);
	return r;
}

/* ------------------------------------------------- streamed validation
 *
 * A manifest of a large image is tens of megabytes; as one jansson tree it
 * costs some thirty times that.  Verifying needs the archive record and
 * the assurance that every entry is well formed, not the entries kept, so
 * the document is cut into its top-level members and the members of
 * "entries" by a scanner that only follows strings and brackets; each
 * piece is then parsed (and checked) by jansson alone and dropped.  What
 * the scanner lets through, jansson still judges. */

struct scan {
	const char *p, *end, *start;
};

static void skip_ws(struct scan *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\n' ||
				 *s->p == '\t' || *s->p == '\r'))
		s->p++;
}

/* The extent of the value at s->p: a string, a bracketed value (strings
 * inside followed, brackets counted up to the parser's depth) or a bare
 * word; advances s->p past it.  0 or -1 (nothing there, unterminated) */
static int scan_value(struct scan *s, const char **v, size_t *vl)
{
	const char *q = s->p;
	int depth = 0, in_str = 0;

	if (q >= s->end)
		return -1;
	if (*q != '"' && *q != '{' && *q != '[') {
		while (q < s->end && !strchr(",:]} \t\r\n[{\"", *q))
			q++;
		if (q == s->p)
			return -1;
		goto done;
	}
	for (; q < s->end; q++) {
		if (in_str) {
			if (*q == '\\' && q + 1 < s->end) {
				q++;
			} else if (*q == '"') {
				in_str = 0;
				if (!depth) {
					q++;
					goto done;
				}
			}
		} else if (*q == '"') {
			in_str = 1;
		} else if (*q == '{' || *q == '[') {
			if (++depth > 1024)
				return -1;
		} else if ((*q == '}' || *q == ']') && !--depth) {
			q++;
			goto done;
		}
	}
	return -1;
done:
	*v = s->p;
	*vl = (size_t)(q - s->p);
	s->p = q;
	return 0;
}

static int scan_fail(struct nf_ctx *ctx, const struct scan *s, const char *what)
{
	int line = 1;

	for (const char *q = s->start; q < s->p && q < s->end; q++)
		line += *q == '\n';
	return nf_fail(ctx, NF_E_PARSE, "line %d: %s", line, what);
}

static int scan_load(struct nf_ctx *ctx, const struct scan *s, const char *v,
		     size_t vl, json_t **out)
{
	json_error_t err;
	int line = 0;

	*out = json_loadb(v, vl, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &err);
	if (*out)
		return 0;
	for (const char *q = s->start; q < v; q++)
		line += *q == '\n';
	return nf_fail(ctx, NF_E_PARSE, "line %d: %s", line + err.line, err.text);
}

/* The members of "entries", each checked as nf_manifest_parse does */
static int scan_entries(struct nf_ctx *ctx, struct scan *s)
{
	const char *v;
	size_t vl, i = 0;
	json_t *e;
	int r;

	s->p++; /* '[' */
	skip_ws(s);
	if (s->p < s->end && *s->p == ']') {
		s->p++;
		return 0;
	}
	for (;; i++) {
		skip_ws(s);
		if (scan_value(s, &v, &vl))
			return scan_fail(ctx, s, "unterminated entry");
		if ((r = scan_load(ctx, s, v, vl, &e)))
			return r;
		r = check_entry(ctx, i, e);
		json_decref(e);
		if (r)
			return r;
		skip_ws(s);
		if (s->p < s->end && *s->p == ',') {
			s->p++;
			continue;
		}
		if (s->p < s->end && *s->p == ']') {
			s->p++;
			return 0;
		}
		return scan_fail(ctx, s, "',' or ']' expected after an entry");
	}
}

int nf_manifest_scan(struct nf_ctx *ctx, const char *buf, size_t len,
		     json_t **out)
{
	struct scan s = { buf, buf + len, buf };
	json_t *top = json_object(), *k, *v;
	const char *kv, *vv;
	size_t kl, vl;
	int r, entries = 0;

	if (!top)
		return -ENOMEM;
	if (len > NF_MANIFEST_MAX) {
		r = nf_fail(ctx, NF_E_LIMIT, "manifest larger than %llu bytes",
			    NF_MANIFEST_MAX);
		goto fail;
	}
	skip_ws(&s);
	if (s.p >= s.end || *s.p != '{') {
		/* not an object: a scalar is parsed whole for jansson's message,
		 * a list is refused unread */
		json_error_t err;

		if (s.p < s.end && *s.p == '[')
			r = nf_fail(ctx, NF_E_INVALID,
				    "not a nodeforge manifest (version 1)");
		else if (!(v = json_loadb(buf, len, 0, &err)))
			r = nf_fail(ctx, NF_E_PARSE, "line %d: %s", err.line,
				    err.text);
		else {
			json_decref(v);
			r = nf_fail(ctx, NF_E_INVALID,
				    "not a nodeforge manifest (version 1)");
		}
		goto fail;
	}
	s.p++;
	skip_ws(&s);
	if (s.p < s.end && *s.p == '}')
		s.p++;
	else
		for (;;) {
			skip_ws(&s);
			if (s.p >= s.end || *s.p != '"' || scan_value(&s, &kv, &kl) ||
			    scan_load(ctx, &s, kv, kl, &k) || !json_is_string(k)) {
				r = scan_fail(ctx, &s, "string or '}' expected");
				goto fail;
			}
			skip_ws(&s);
			if (s.p >= s.end || *s.p++ != ':') {
				json_decref(k);
				r = scan_fail(ctx, &s, "':' expected");
				goto fail;
			}
			skip_ws(&s);
			if (json_object_get(top, json_string_value(k)) ||
			    (entries && !strcmp(json_string_value(k), "entries"))) {
				r = nf_fail(ctx, NF_E_PARSE, "duplicate object key near '%s'",
					    json_string_value(k));
				json_decref(k);
				goto fail;
			}
			if (!strcmp(json_string_value(k), "entries") && s.p < s.end &&
			    *s.p == '[') {
				json_decref(k);
				if ((r = scan_entries(ctx, &s)))
					goto fail;
				entries = 1;
			} else {
				if (scan_value(&s, &vv, &vl)) {
					json_decref(k);
					r = scan_fail(ctx, &s, "unterminated value");
					goto fail;
				}
				if ((r = scan_load(ctx, &s, vv, vl, &v))) {
					json_decref(k);
					goto fail;
				}
				json_object_set_new(top, json_string_value(k), v);
				json_decref(k);
			}
			skip_ws(&s);
			if (s.p < s.end && *s.p == ',') {
				s.p++;
				continue;
			}
			if (s.p < s.end && *s.p == '}') {
				s.p++;
				break;
			}
			r = scan_fail(ctx, &s, "',' or '}' expected");
			goto fail;
		}
	skip_ws(&s);
	if (s.p != s.end) {
		r = scan_fail(ctx, &s, "end of file expected");
		goto fail;
	}
	if ((r = check_version(ctx, top)))
		goto fail;
	if (!entries) {
		r = nf_fail(ctx, NF_E_INVALID, "'entries' missing or not a list");
		goto fail;
	}
	if ((r = check_archive(ctx, top)))
		goto fail;
	*out = top;
	return 0;
fail:
	json_decref(top);
	return r;
}

int nf_manifest_load(struct nf_ctx *ctx, const char *path, json_t **out)
{
	char *buf;
	size_t len;
	int r = nf_read_file(ctx, path, NF_MANIFEST_MAX, &buf, &len);

	if (r)
		return r;
	r = nf_manifest_parse(ctx, buf, len, out);
	free(buf);
	if (r && r != -ENOMEM) {
		char msg[sizeof(ctx->errmsg)];

		snprintf(msg, sizeof(msg), "%s", nf_errmsg(ctx));
		nf_fail(ctx, r, "cannot read manifest '%s': %s", path, msg);
	}
	return r;
}

/* The manifest's bytes, mapped rather than read: the signature and the
 * scan look at every byte once and keep none of them */
static int map_manifest(struct nf_ctx *ctx, const char *path, void **map,
			size_t *len)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW), r = 0;

	if (fd < 0)
		return nf_fail(ctx, -errno, "cannot read '%s': %s", path,
			       strerror(errno));
	if (fstat(fd, &st))
		r = nf_fail(ctx, -errno, "cannot read '%s': %s", path,
			    strerror(errno));
	else if (!S_ISREG(st.st_mode))
		r = nf_fail(ctx, NF_E_INVALID, "'%s' is not a regular file", path);
	else if ((unsigned long long)st.st_size > NF_MANIFEST_MAX)
		r = nf_fail(ctx, NF_E_LIMIT, "'%s' is larger than %llu bytes",
			    path, NF_MANIFEST_MAX);
	else if (!st.st_size)
		*map = NULL;
	else if ((*map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE,
			      fd, 0)) == MAP_FAILED)
		r = nf_fail(ctx, -errno, "cannot read '%s': %s", path,
			    strerror(errno));
	*len = r ? 0 : (size_t)st.st_size;
	close(fd);
	return r;
}

int nf_manifest_verify(struct nf_ctx *ctx, const char *path,
		       const char *pubkey)
{
	char *sig = NULL, *arc = NULL, hex[NF_SHA256_HEX];
	const char *name, *want, *slash;
	unsigned long long size;
	json_t *m = NULL, *a;
	void *buf = NULL;
	size_t len = 0;
	int fd, r;

	if (!(sig = nf_asprintf("%s.sig", path)))
		return -ENOMEM;
	if ((r = nf_sig_present(ctx, path, sig)) ||
	    (r = map_manifest(ctx, path, &buf, &len))) {
		free(sig);
		return r;
	}
	/* The signature covers exactly the bytes scanned below */
	if ((r = nf_verify_buf(ctx, path, buf ? buf : "", len, sig, pubkey)))
		goto out;
	if ((r = nf_manifest_scan(ctx, buf ? buf : "", len, &m))) {
		char msg[sizeof(ctx->errmsg)];

		snprintf(msg, sizeof(msg), "%s", nf_errmsg(ctx));
		nf_fail(ctx, r, "cannot read manifest '%s': %s", path, msg);
		goto out;
	}
	a = json_object_get(m, "archive");
	name = json_string_value(json_object_get(a, "name"));
	want = json_string_value(json_object_get(a, "sha256"));
	if (!*name || strchr(name, '/') || !strcmp(name, ".") ||
	    !strcmp(name, "..")) {
		r = nf_fail(ctx, NF_E_UNSAFE, "manifest '%s' names archive '%s'",
			    path, name);
		goto out;
	}
	slash = strrchr(path, '/');
	arc = slash ? nf_asprintf("%.*s/%s", (int)(slash - path), path, name)
		    : nf_strdup(name);
	if (!arc) {
		r = -ENOMEM;
		goto out;
	}
	fd = open(arc, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		r = nf_fail(ctx, -errno, "cannot read archive '%s': %s", arc,
			    strerror(errno));
		goto out;
	}
	r = nf_sha256_fd(ctx, fd, arc, hex, &size);
	close(fd);
	if (r)
		goto out;
	if (strcmp(hex, want))
		r = nf_fail(ctx, NF_E_CHECKSUM,
			    "archive '%s' does not match manifest '%s': sha256 "
			    "%s, expected %s", arc, path, hex, want);
	else if (size != (unsigned long long)json_integer_value(
				 json_object_get(a, "size")))
		r = nf_fail(ctx, NF_E_CHECKSUM,
			    "archive '%s' does not match manifest '%s': %llu "
			    "bytes, expected %lld", arc, path, size,
			    json_integer_value(json_object_get(a, "size")));
out:
	json_decref(m);
	if (buf)
		munmap(buf, len);
	free(sig);
	free(arc);
	return r;
}

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

static int check_dir(struct check *c, int dfd, const char *prefix, int depth)
{
	DIR *d;
	struct dirent *de;
	int r = 0;

	if (depth > CHECK_DEPTH) {
		close(dfd);
		return nf_fail(c->ctx, NF_E_LIMIT, "'%s' is nested too deep",
			       prefix);
	}
	if (!(d = fdopendir(dfd))) {
		close(dfd);
		return nf_fail(c->ctx, -errno, "cannot read '%s': %s", prefix,
			       strerror(errno));
	}
	while ((de = readdir(d))) {
		struct stat st;
		const json_t *e;
		char *p;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISSOCK(st.st_mode))
			continue;
		p = *prefix ? nf_asprintf("%s/%s", prefix, de->d_name)
			    : nf_strdup(de->d_name);
		if (!p) {
			r = -ENOMEM;
			break;
		}
		e = json_object_get(c->index, p);
		if (!e) {
			add_change(c->drift, p, "added", NULL,
				   json_string(live_type(st.st_mode)));
		} else {
			json_object_set_new(c->seen, p, json_true());
			r = compare_live(c, dirfd(d), de->d_name, p, &st, e);
		}
		if (!r && S_ISDIR(st.st_mode) &&
		    (!e || !strcmp(jstr(e, "type"), "dir"))) {
			int fd = openat(dirfd(d), de->d_name, O_RDONLY |
					O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			if (fd >= 0)
				r = check_dir(c, fd, p, depth + 1);
		}
		free(p);
		if (r)
			break;
	}
	closedir(d);
	return r;
}

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
	r = check_dir(&c, fcntl(c.rootfd, F_DUPFD_CLOEXEC, 0), "", 0);
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
