/* SPDX-License-Identifier: MIT */
#include "internal.h"

#include <ctype.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

char *nf_strdup(const char *s)
{
	return s ? strdup(s) : NULL;
}

int nf_is_url(const char *s)
{
	const char *p = s;

	if (!s || !isalpha((unsigned char)*p))
		return 0;
	while (isalnum((unsigned char)*p) || *p == '+' || *p == '-' || *p == '.')
		p++;
	return !strncmp(p, "://", 3);
}

const char *nf_which(const char *prog, char *buf, size_t sz)
{
	const char *path = getenv("PATH");

	if (strchr(prog, '/'))
		return access(prog, X_OK) == 0 ? prog : NULL;
	for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
		size_t n = strcspn(p, ":");

		if (n && (size_t)snprintf(buf, sz, "%.*s/%s", (int)n, p, prog) < sz &&
		    access(buf, X_OK) == 0)
			return buf;
		p += n + (p[n] == ':');
	}
	return NULL;
}

char *nf_asprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	return s;
}

void nf_strv_free(char **v, size_t n)
{
	if (!v)
		return;
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

int nf_read_fd(int fd, size_t max, char **buf, size_t *len)
{
	size_t n = 0, cap = 1024;
	char *b = malloc(cap);

	if (!b)
		return -ENOMEM;
	for (;;) {
		ssize_t r;

		if (n + 1 >= cap) {
			char *nb;

			if (n > max) {
				free(b);
				return NF_E_LIMIT;
			}
			cap *= 2;
			if (!(nb = realloc(b, cap))) {
				free(b);
				return -ENOMEM;
			}
			b = nb;
		}
		r = read(fd, b + n, cap - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;

			free(b);
			return -e;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	if (n > max) {
		free(b);
		return NF_E_LIMIT;
	}
	b[n] = '\0';
	*buf = b;
	if (len)
		*len = n;
	return 0;
}

int nf_read_file(struct nf_ctx *ctx, const char *path, size_t max, char **buf,
		 size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), r;

	if (fd < 0)
		return nf_fail(ctx, -errno, "cannot read '%s': %s", path,
			       strerror(errno));
	r = nf_read_fd(fd, max, buf, len);
	close(fd);
	if (r == NF_E_LIMIT)
		return nf_fail(ctx, NF_E_LIMIT, "'%s' is larger than %zu bytes",
			       path, max);
	if (r)
		return r == -ENOMEM ? r : nf_fail(ctx, r, "cannot read '%s': %s",
						  path, strerror(-r));
	return 0;
}

int nf_read_optional(struct nf_ctx *ctx, const char *path, size_t max,
		     char **buf, size_t *len)
{
	unsigned m = nf_err_mark(ctx);
	int r = nf_read_file(ctx, path, max, buf, len);

	if (r == -ENOENT)
		nf_err_drop(ctx, m);
	return r;
}

int nf_write_full(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t w = write(fd, p, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		if (w == 0)
			return -EIO;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

int nf_lock_path(struct nf_ctx *ctx, const char *path, int wait, int *fd)
{
	int r;

	if (*fd < 0 && (*fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC |
				   O_NOFOLLOW, 0600)) < 0)
		return nf_fail(ctx, -errno, "cannot open lock '%s': %s", path,
			       strerror(errno));
	while (flock(*fd, LOCK_EX | (wait ? 0 : LOCK_NB)) < 0) {
		if (errno == EINTR)
			continue;
		if (errno == EWOULDBLOCK && !wait)
			return 1;
		r = nf_fail(ctx, -errno, "cannot lock '%s': %s", path,
			    strerror(errno));
		close(*fd);
		*fd = -1;
		return r;
	}
	return 0;
}

int nf_write_atomic(struct nf_ctx *ctx, const char *path, const void *buf,
		    size_t len, unsigned mode)
{
	char *tmp = nf_asprintf("%s.tmp.XXXXXX", path);
	char *dcopy = NULL;
	const char *p = buf;
	int fd, dfd, e;

	if (!tmp)
		return -ENOMEM;
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		e = errno;
		free(tmp);
		return nf_fail(ctx, -e, "cannot create '%s': %s", path,
			       strerror(e));
	}
	if ((e = nf_write_full(fd, p, len))) {
		errno = -e;
		goto fail;
	}
	if (fchmod(fd, mode) < 0 || fsync(fd) < 0)
		goto fail;
	if (close(fd) < 0) {
		fd = -1;
		goto fail;
	}
	fd = -1;
	if (rename(tmp, path) < 0)
		goto fail;
	free(tmp);
	dcopy = nf_strdup(path);
	if (dcopy) {
		dfd = open(dirname(dcopy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd >= 0) {
			fsync(dfd);
			close(dfd);
		}
		free(dcopy);
	}
	return 0;
fail:
	e = errno;
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	free(tmp);
	return nf_fail(ctx, -e, "cannot write '%s': %s", path, strerror(e));
}

/* Text for an XML attribute or element (JUnit reports): markup escaped,
 * control characters XML 1.0 cannot hold replaced by spaces */
void nf_xml_escape(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '<')
			fputs("&lt;", f);
		else if (ch == '>')
			fputs("&gt;", f);
		else if (ch == '&')
			fputs("&amp;", f);
		else if (ch == '"')
			fputs("&quot;", f);
		else if (ch < 0x20 && ch != '\n' && ch != '\t')
			fputc(' ', f);
		else
			fputc(ch, f);
	}
}

const char *nf_suggest(const char *word, const char *const *cands, size_t n)
{
	size_t wl = strlen(word), best_d = (size_t)-1;
	const char *best = NULL;

	if (!wl || wl > 64)
		return NULL;
	for (size_t c = 0; c < n; c++) {
		size_t cl = cands[c] ? strlen(cands[c]) : 0, d[66][66];

		if (!cl || cl > 64 || !strcmp(cands[c], word))
			continue;
		/* optimal string alignment distance */
		for (size_t i = 0; i <= wl; i++)
			d[i][0] = i;
		for (size_t j = 0; j <= cl; j++)
			d[0][j] = j;
		for (size_t i = 1; i <= wl; i++)
			for (size_t j = 1; j <= cl; j++) {
				size_t cost = word[i - 1] != cands[c][j - 1], m;

				m = d[i - 1][j] + 1;
				if (d[i][j - 1] + 1 < m)
					m = d[i][j - 1] + 1;
				if (d[i - 1][j - 1] + cost < m)
					m = d[i - 1][j - 1] + cost;
				if (i > 1 && j > 1 && word[i - 1] == cands[c][j - 2] &&
				    word[i - 2] == cands[c][j - 1] && d[i - 2][j - 2] + 1 < m)
					m = d[i - 2][j - 2] + 1;
				d[i][j] = m;
			}
		if (d[wl][cl] < best_d) {
			best_d = d[wl][cl];
			best = cands[c];
		}
	}
	return best && best_d <= (wl / 3 > 1 ? wl / 3 : 1) ? best : NULL;
}

/* The length in bytes of the character at s when a terminal acts on it
 * rather than shows it: a C0 control, DEL, a C1 control (U+0080..U+009F,
 * CSI among them) or a bidirectional override that reorders the rest of
 * the line; 0 for a printable one.  Reads no further than s's NUL. */
static size_t control_len(const unsigned char *s)
{
	if (*s < 0x20 || *s == 0x7f)
		return 1;
	if (s[0] == 0xc2 && s[1] >= 0x80 && s[1] <= 0x9f)
		return 2;
	if (s[0] == 0xe2 && s[1] == 0x80 &&
	    ((s[2] >= 0x8e && s[2] <= 0x8f) || (s[2] >= 0xaa && s[2] <= 0xae)))
		return 3; /* LRM, RLM, LRE..RLO */
	if (s[0] == 0xe2 && s[1] == 0x81 && s[2] >= 0xa6 && s[2] <= 0xa9)
		return 3; /* LRI..PDI */
	return 0;
}

/* One escaping loop for both forms; writes at most cap - 1 bytes to out
 * (NULL: only counts) and returns the length of the whole result */
static size_t escape_into(const unsigned char *p, int backslash, char *out,
			  size_t cap)
{
	size_t n = 0, c;
	char tmp[4 * 3 + 1], *end = NULL;

	for (; *p; p += c ? c : 1) {
		size_t tl;

		c = control_len(p);
		if (c) {
			tl = 0;
			for (size_t i = 0; i < c; i++)
				tl += (size_t)sprintf(tmp + tl, "\\x%02x", p[i]);
		} else if (backslash && *p == '\\') {
			memcpy(tmp, "\\\\", 3);
			tl = 2;
		} else {
			tmp[0] = (char)*p;
			tl = 1;
		}
		if (out && !end && n + tl < cap)
			memcpy(out + n, tmp, tl);
		else if (out && !end)
			end = out + n; /* full: nothing more, not half of \xNN */
		n += tl;
	}
	if (out)
		*(end ? end : out + n) = '\0';
	return n;
}

char *nf_text_escape(const char *s)
{
	size_t n = escape_into((const unsigned char *)s, 1, NULL, 0);
	char *out = malloc(n + 1);

	if (out)
		escape_into((const unsigned char *)s, 1, out, n + 1);
	return out;
}

double nf_now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

void nf_text_defang(char *buf, size_t sz)
{
	char *copy;
	size_t len;

	if (!sz)
		return;
	len = strlen(buf);
	if (escape_into((const unsigned char *)buf, 0, NULL, 0) == len)
		return; /* nothing to escape */
	if (!(copy = malloc(len + 1))) {
		for (unsigned char *p = (unsigned char *)buf; *p; p++)
			if (*p < 0x20 || *p == 0x7f)
				*p = '?';
		return;
	}
	memcpy(copy, buf, len + 1);
	escape_into((const unsigned char *)copy, 0, buf, sz);
	free(copy);
}

int nf_is_sha256_hex(const char *s)
{
	size_t n = 0;

	while (s && ((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
		n++;
	return s && n == 64 && !s[n];
}

#define NF_BUF_MAX (4u << 20)      /* largest generated file */

void nf_buf_printf(struct nf_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->err)
		return;
	for (;;) {
		size_t room = b->cap - b->len;

		va_start(ap, fmt);
		n = vsnprintf(b->s ? b->s + b->len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->err = -EINVAL;
			return;
		}
		if ((size_t)n < room) {
			b->len += (size_t)n;
			return;
		}
		size_t ncap = b->cap ? b->cap * 2 : 1024;

		while (ncap < b->len + (size_t)n + 1)
			ncap *= 2;
		if (ncap > NF_BUF_MAX) {
			b->err = NF_E_LIMIT;
			return;
		}
		char *ns = realloc(b->s, ncap);

		if (!ns) {
			b->err = -ENOMEM;
			return;
		}
		b->s = ns;
		b->cap = ncap;
	}
}

void nf_buf_free(struct nf_buf *b)
{
	free(b->s);
	memset(b, 0, sizeof(*b));
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

int nf_mac_parse(const char *s, uint8_t mac[6])
{
	char sep = 0;
	int zero = 1;

	if (!s || strlen(s) != 17)
		return NF_E_PARSE;
	for (int i = 0; i < 6; i++) {
		const char *p = s + i * 3;
		int hi = hexval((unsigned char)p[0]);
		int lo = hexval((unsigned char)p[1]);

		if (hi < 0 || lo < 0)
			return NF_E_PARSE;
		if (i < 5) {
			if (p[2] != ':' && p[2] != '-')
				return NF_E_PARSE;
			if (sep && p[2] != sep)
				return NF_E_PARSE;
			sep = p[2];
		}
		mac[i] = (uint8_t)(hi << 4 | lo);
		if (mac[i])
			zero = 0;
	}
	if (zero || (mac[0] & 1))
		return NF_E_INVALID;
	return 0;
}

void nf_quote_value(const char *s, char *out, size_t sz)
{
	size_t n = 0;

	for (; s && *s && n + 1 < sz && n < 64; s++)
		out[n++] = *s >= 0x20 && *s < 0x7f ? *s : '?';
	if (sz)
		out[n] = '\0';
}
