/* SPDX-License-Identifier: MIT */
/*
 * Pinned artifacts over libcurl: the adapter that keeps CURLcode inside
 * this file.  Every artifact is named by its sha256; the cache is content
 * addressed (CACHE/artifacts/<sha256>), downloads resume from a partial
 * file, stalls time out, transient failures are retried with backoff, and
 * a mismatch is a hard failure.  libcurl honours http_proxy, https_proxy
 * and no_proxy from the environment.
 */
#include "internal.h"
#include "lazy.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define NF_FETCH_MAX_DEFAULT (8ULL << 30)

static const char *base_name(const char *url)
{
	const char *q = strrchr(url, '/');

	return q ? q + 1 : url;
}

static int mkdir_p(struct nf_ctx *ctx, const char *path)
{
	char tmp[PATH_MAX];

	if (snprintf(tmp, sizeof(tmp), "%s", path) >= (int)sizeof(tmp))
		return nf_fail(ctx, NF_E_LIMIT, "path '%s' is too long", path);
	for (char *p = tmp + 1; ; p++) {
		if (*p && *p != '/')
			continue;
		char c = *p;

		*p = '\0';
		if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
			return nf_fail(ctx, -errno, "cannot create '%s': %s", tmp,
				       strerror(errno));
		if (!c)
			break;
		*p = c;
	}
	return 0;
}

/* sha256 of a whole file */
static int hash_path(struct nf_ctx *ctx, const char *path, char hex[NF_SHA256_HEX],
		     unsigned long long *size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int r;

	if (fd < 0)
		return -errno;
	r = nf_sha256_fd(ctx, fd, path, hex, size);
	close(fd);
	return r;
}

/* Verify `tmp` against the pin and move it into the cache */
static int admit(struct nf_ctx *ctx, const char *name, const char *src,
		 const char *tmp, const char *sha, const char *dest)
{
	char hex[NF_SHA256_HEX];
	unsigned long long size = 0;
	int r;

	if ((r = hash_path(ctx, tmp, hex, &size)))
		return nf_fail(ctx, r, "artifact '%s': cannot read '%s': %s",
			       name, tmp, strerror(-r));
	if (strcmp(hex, sha)) {
		unlink(tmp);
		return nf_fail(ctx, NF_E_CHECKSUM,
			       "artifact '%s' from '%s': sha256 is %s, the pin "
			       "says %s (%llu bytes received); refusing it",
			       name, src, hex, sha, size);
	}
	if (rename(tmp, dest) < 0)
		return nf_fail(ctx, -errno, "cannot store '%s': %s", dest,
			       strerror(errno));
	return 0;
}

static int copy_into(struct nf_ctx *ctx, const char *from, const char *to)
{
	char buf[1 << 16];
	int in, out, r = 0;
	ssize_t n;

	in = open(from, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (out < 0) {
		r = -errno;
		close(in);
		return r;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n) {
			r = -EIO;
			break;
		}
	if (n < 0)
		r = -errno;
	if (!r && fsync(out) < 0)
		r = -errno;
	close(in);
	close(out);
	(void)ctx;
	return r;
}

struct xfer {
	int fd;
	unsigned long long offset;  /* bytes already in the part file */
	unsigned long long got;
	unsigned long long max;
	long status;
	int started;
	int stalled;
	curl_off_t last_now;        /* progress: bytes at the last change */
	struct timespec last_t;
	long stall_s;
	const struct nf_fetch_opts *o;
};

static size_t on_header(char *buf, size_t size, size_t n, void *data)
{
	struct xfer *x = data;
	size_t len = size * n;

	if (len > 5 && !strncmp(buf, "HTTP/", 5)) {
		const char *sp = memchr(buf, ' ', len);

		x->status = sp ? strtol(sp + 1, NULL, 10) : 0;
	}
	return len;
}

static size_t on_data(char *buf, size_t size, size_t n, void *data)
{
	struct xfer *x = data;
	size_t len = size * n;

	/* asked to resume but the server sends the whole body: start over */
	if (!x->started && x->offset && x->status == 200) {
		if (ftruncate(x->fd, 0) < 0 || lseek(x->fd, 0, SEEK_SET) < 0)
			return 0;
		x->offset = 0;
	}
	x->started = 1;
	if (x->offset + x->got + len > x->max)
		return 0;
	for (size_t off = 0; off < len;) {
		ssize_t w = write(x->fd, buf + off, len - off);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return 0;
		}
		off += (size_t)w;
	}
	x->got += len;
	return len;
}

static int on_progress(void *data, curl_off_t dltotal, curl_off_t dlnow,
		       curl_off_t ultotal, curl_off_t ulnow)
{
	struct xfer *x = data;

	struct timespec t;

	(void)ultotal;
	(void)ulnow;
	/* a stall is measured from the last byte, not as an average speed
	 * over curl's window (which takes seconds to drop after a burst) */
	clock_gettime(CLOCK_MONOTONIC, &t);
	if (dlnow != x->last_now || !x->last_t.tv_sec) {
		x->last_now = dlnow;
		x->last_t = t;
	} else if (t.tv_sec - x->last_t.tv_sec >= x->stall_s &&
		   (t.tv_sec - x->last_t.tv_sec > x->stall_s ||
		    t.tv_nsec >= x->last_t.tv_nsec)) {
		x->stalled = 1;
		return 1;
	}
	if (x->o->progress)
		x->o->progress(x->o->progress_data,
			       x->offset + (unsigned long long)dlnow,
			       dltotal ? x->offset + (unsigned long long)dltotal : 0);
	return 0;
}

/* One attempt: 0 done, 1 retryable, 2 permanent (reason in why), < 0 an
 * error of our own */
static int attempt(struct nf_ctx *ctx, const char *url, const char *part,
		   const struct nf_fetch_opts *o, unsigned long long max,
		   char *why, size_t whysz)
{
	char errbuf[CURL_ERROR_SIZE] = "";
	struct xfer x = { .max = max, .o = o,
			  .stall_s = o->stall_timeout_s > 0 ? o->stall_timeout_s
							    : 30 };
	struct stat st;
	CURL *c;
	CURLcode cc;
	int r;

	x.fd = open(part, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (x.fd < 0)
		return nf_fail(ctx, -errno, "cannot write '%s': %s", part,
			       strerror(errno));
	if (fstat(x.fd, &st) == 0 && st.st_size > 0)
		x.offset = (unsigned long long)st.st_size;
	lseek(x.fd, 0, SEEK_END);
	c = curl_easy_init();
	if (!c) {
		close(x.fd);
		return nf_lazy_err(NF_LAZY_CURL);
	}
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https,file");
	curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_FAILONERROR, 1L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, o->connect_timeout_s > 0
			 ? o->connect_timeout_s : 15L);
	/* a stall: under 1 byte/s for the whole window */
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, o->stall_timeout_s > 0
			 ? o->stall_timeout_s : 30L);
	curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)max);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "nodeforge/" NF_VERSION);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, &x);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &x);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(c, CURLOPT_XFERINFODATA, &x);
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	if (x.offset)
		curl_easy_setopt(c, CURLOPT_RESUME_FROM_LARGE, (curl_off_t)x.offset);
	cc = curl_easy_perform(c);
	long code = 0;

	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(c);
	if (fsync(x.fd) < 0 && cc == CURLE_OK)
		cc = CURLE_WRITE_ERROR;
	close(x.fd);
	if (cc == CURLE_OK)
		return 0;
	snprintf(why, whysz, "%s", *errbuf ? errbuf : curl_easy_strerror(cc));
	if (x.stalled) {
		snprintf(why, whysz, "no data for %ld s (stalled)", x.stall_s);
		return 1;
	}
	switch (cc) {
	case CURLE_HTTP_RETURNED_ERROR:
		/* 416: the part file is already whole (or bogus): start over */
		if (code == 416) {
			unlink(part);
			return 1;
		}
		if (code >= 500 || code == 408 || code == 429)
			return 1;
		return 2;
	case CURLE_RANGE_ERROR:
		unlink(part);
		return 1;
	case CURLE_FILESIZE_EXCEEDED:
	case CURLE_WRITE_ERROR:
		if (x.offset + x.got >= max) {
			snprintf(why, whysz, "larger than the cap of %llu bytes",
				 max);
			unlink(part);
			return 2;
		}
		return 2;
	case CURLE_UNSUPPORTED_PROTOCOL:
	case CURLE_URL_MALFORMAT:
	case CURLE_FILE_COULDNT_READ_FILE:
	case CURLE_REMOTE_FILE_NOT_FOUND:
		return 2;
	default:
		r = 1;
		break;
	}
	return r;
}

/* The artifact into `dest` by way of `part`, from the mirror or its url
 * (nf_fetch holds the lock of `part`) */
static int fetch_into(struct nf_ctx *ctx, const char *name, const char *url,
		      const char *sha256, const struct nf_fetch_opts *o,
		      unsigned long long max, const char *part,
		      const char *dest, char **path)
{
	char src[PATH_MAX * 2];
	char why[CURL_ERROR_SIZE + 64] = "";
	const char *fetch_url = url;
	const char *opt = o->mirror_opt ? o->mirror_opt : "--mirror";
	int r, tries;
	long backoff;
	struct stat st;

	if (o->mirror && *o->mirror) {
		const char *bn = base_name(url);

		if (!*bn || !strcmp(bn, "..") || !strcmp(bn, "."))
			return nf_fail(ctx, NF_E_INVALID, "artifact '%s': url '%s' "
				       "has no file name to look up in the mirror",
				       name, url);
		if (!nf_is_url(o->mirror)) {
			snprintf(src, sizeof(src), "%s/%s", o->mirror, bn);
			if (stat(src, &st) < 0)
				return nf_fail(ctx, NF_E_NOTFOUND,
					       "artifact '%s' (%s): not in the mirror "
					       "(%s): no file '%s'; put the file there "
					       "or at '%s'", name, url, opt, src, dest);
			if ((r = copy_into(ctx, src, part)))
				return nf_fail(ctx, r, "cannot copy '%s': %s", src,
					       strerror(-r));
			if ((r = admit(ctx, name, src, part, sha256, dest)))
				return r;
			*path = nf_strdup(dest);
			return *path ? 0 : -ENOMEM;
		}
		snprintf(src, sizeof(src), "%s%s%s", o->mirror,
			 o->mirror[strlen(o->mirror) - 1] == '/' ? "" : "/", bn);
		fetch_url = src;
	}
	if (o->offline)
		return nf_fail(ctx, NF_E_NOTFOUND,
			       "artifact '%s' (%s) is not in the cache and "
			       "--offline is set: place the file at '%s' or pass "
			       "%s DIR holding '%s'", name, url, dest, opt,
			       base_name(url));
	if (nf_curl_init())
		return nf_fail(ctx, NF_E_NETWORK, "cannot initialize libcurl");
	tries = o->retries > 0 ? o->retries + 1 : o->retries < 0 ? 1 : 4;
	backoff = o->backoff_ms > 0 ? o->backoff_ms : 500;
	for (int i = 0; i < tries; i++) {
		if (i) {
			struct timespec ts = { backoff / 1000,
					       (backoff % 1000) * 1000000L };

			nf_log(ctx, NF_LOG_INFO, "artifact '%s': %s; retry %d/%d "
			       "in %ld ms", name, why, i, tries - 1, backoff);
			nanosleep(&ts, NULL);
			backoff *= 2;
		}
		r = attempt(ctx, fetch_url, part, o, max, why, sizeof(why));
		if (r == 0)
			return (r = admit(ctx, name, fetch_url, part, sha256, dest))
				? r : ((*path = nf_strdup(dest)) ? 0 : -ENOMEM);
		if (r < 0)
			return r;
		if (r == 2)
			break;
	}
	return nf_fail(ctx, NF_E_NETWORK,
		       "artifact '%s' cannot be fetched from '%s': %s; supply it "
		       "with %s DIR (a file named '%s' there), or place it "
		       "at '%s'", name, fetch_url, why, opt, base_name(url), dest);
}

int nf_fetch(struct nf_ctx *ctx, const char *name, const char *url,
	     const char *sha256, const struct nf_fetch_opts *o, char **path)
{
	static const struct nf_fetch_opts defaults = { 0 };
	char dest[PATH_MAX], part[PATH_MAX], dir[PATH_MAX], lock[PATH_MAX + 8];
	unsigned long long max;
	int r, fd = -1;
	struct stat st;

	if (!o)
		o = &defaults;
	*path = NULL;
	if (!name || !url || !*url)
		return nf_fail(ctx, NF_E_USAGE, "artifact '%s' has no url",
			       name ? name : "?");
	if (!nf_is_sha256_hex(sha256))
		return nf_fail(ctx, NF_E_INVALID, "artifact '%s': sha256 '%s' is "
			       "not 64 lowercase hex digits", name,
			       sha256 ? sha256 : "");
	if (!o->cache || !*o->cache)
		return nf_fail(ctx, NF_E_USAGE, "artifact '%s': no cache directory",
			       name);
	max = o->max_size ? o->max_size : NF_FETCH_MAX_DEFAULT;
	snprintf(dir, sizeof(dir), "%s/artifacts/partial", o->cache);
	if ((r = mkdir_p(ctx, dir)))
		return r;
	snprintf(dest, sizeof(dest), "%s/artifacts/%s", o->cache, sha256);
	snprintf(part, sizeof(part), "%s/artifacts/partial/%s.part", o->cache,
		 sha256);
	if (stat(dest, &st) == 0 && S_ISREG(st.st_mode)) {
		*path = nf_strdup(dest);
		return *path ? 0 : -ENOMEM;
	}
	/* builds sharing a cache may want one artifact at once: one fetches,
	 * the others wait for it and find it in the cache */
	snprintf(lock, sizeof(lock), "%s.lock", part);
	if ((r = nf_lock_path(ctx, lock, 1, &fd)))
		return r;
	if (stat(dest, &st) == 0 && S_ISREG(st.st_mode))
		r = (*path = nf_strdup(dest)) ? 0 : -ENOMEM;
	else
		r = fetch_into(ctx, name, url, sha256, o, max, part, dest, path);
	close(fd);
	return r;
}
