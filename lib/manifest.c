/* SPDX-License-Identifier: MIT */
/*
 * Manifests: parsing and validation (whole, or streamed for verification),
 * signature + archive verification.  Drift against a live tree and the
 * difference between two manifests: lib/manifest_diff.c.
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

/* JSON text holds no NUL byte (in a string it is written \u0000);
 * jansson's reader skips one between two tokens, which the streamed
 * scanner refuses: both refuse it, named */
static int refuse_nul(struct nf_ctx *ctx, const char *buf, size_t len)
{
	const char *z = memchr(buf, '\0', len);
	int line = 1;

	if (!z)
		return 0;
	for (const char *q = buf; q < z; q++)
		line += *q == '\n';
	return nf_fail(ctx, NF_E_PARSE, "line %d: a NUL byte (offset %zu)", line,
		       (size_t)(z - buf));
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
	if ((r = refuse_nul(ctx, buf, len)))
		return r;
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
	if ((r = refuse_nul(ctx, buf, len)))
		goto fail;
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
