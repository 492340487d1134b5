/* SPDX-License-Identifier: MIT */
/*
 * The boot server's static files: a boot tree opened beneath its dirfd
 * (no path leaves it), sendfile for large files, HEAD, one Range, ETags
 * from content hashes; a node fetching its kernel is marked booting.
 */
#include "http_int.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <microhttpd.h>

/* -------------------------------------------------------- static files */

/* A request path is a sequence of plain names: no "..", no hidden names
 * (temporaries are dot files), no empty segments, a small alphabet */
int nf_http_safe_path(const char *url)
{
	const char *p = url;

	if (*p != '/' || strlen(url) > NF_HTTP_URL_MAX)
		return 0;
	while (*p == '/') {
		const char *seg = ++p;

		while (*p && *p != '/') {
			if (!isalnum((unsigned char)*p) && !strchr("._-+~:", *p))
				return 0;
			p++;
		}
		if (p == seg || *seg == '.')
			return 0;
	}
	return *p == '\0';
}

/* Open url under the tree, refusing symlinks at every level */
static int open_beneath(int root, const char *url)
{
	char buf[NF_HTTP_URL_MAX + 1], *seg, *next;
	int dfd = root, fd;

	snprintf(buf, sizeof(buf), "%s", url + 1);
	for (seg = buf;; seg = next) {
		next = strchr(seg, '/');
		if (!next)
			break;
		*next++ = '\0';
		fd = openat(dfd, seg, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
				      O_CLOEXEC);
		if (dfd != root)
			close(dfd);
		if (fd < 0)
			return -1;
		dfd = fd;
	}
	fd = openat(dfd, seg, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (dfd != root)
		close(dfd);
	return fd;
}

/* Whether the serving user could read st by its permission bits alone,
 * as if it had no privilege: world-readable, or its owner's or group's
 * and readable to that.  Root reads everything, so for root the bits
 * are the only sign of the owner's intent: a 0400 root file is refused.
 * A file with a second link may be a private file linked into the tree
 * from elsewhere: refused too. */
static int servable(const struct stat *st)
{
	uid_t uid = geteuid();

	if (st->st_nlink != 1)
		return 0;
	if (st->st_mode & S_IROTH)
		return 1;
	if (uid == 0)
		return 0;
	if (st->st_uid == uid)
		return !!(st->st_mode & S_IRUSR);
	return st->st_gid == getegid() && (st->st_mode & S_IRGRP);
}

static const char *content_type(const char *url)
{
	const char *dot = strrchr(url, '.'), *base = strrchr(url, '/');

	if (!strncmp(url, "/grub/", 6) && dot < base)
		return "text/plain; charset=utf-8";
	if (!dot || dot < base)
		return "application/octet-stream";
	if (!strcmp(dot, ".ipxe") || !strcmp(dot, ".cfg") ||
	    !strcmp(dot, ".ks") || !strcmp(dot, ".conf") ||
	    !strcmp(dot, ".txt"))
		return "text/plain; charset=utf-8";
	if (!strcmp(dot, ".json"))
		return "application/json";
	if (!strcmp(dot, ".zst"))
		return "application/zstd";
	if (!strcmp(dot, ".xz"))
		return "application/x-xz";
	return "application/octet-stream";
}

/* Content-addressed names carry their hash: NAME-<12+ hex>.EXT */
static int name_hash(const char *url, char *out, size_t outsz)
{
	const char *base = strrchr(url, '/') + 1, *p;

	for (p = base; (p = strchr(p, '-')); p++) {
		size_t n = 0;

		while (isxdigit((unsigned char)p[1 + n]))
			n++;
		if (n >= 12 && n < outsz && p[1 + n] == '.') {
			memcpy(out, p + 1, n);
			out[n] = '\0';
			return 1;
		}
	}
	return 0;
}

/* Parse a single "bytes=a-b" range against size; 0 ok, -1 ignore the
 * header (serve it all), -2 unsatisfiable */
int nf_http_parse_range(const char *h, uint64_t size, uint64_t *off,
			uint64_t *len)
{
	unsigned long long a, b;
	char *end;

	if (strncmp(h, "bytes=", 6) || strchr(h, ','))
		return -1;
	h += 6;
	if (*h == '-') {
		if (!isdigit((unsigned char)h[1]))
			return -1;
		b = strtoull(h + 1, &end, 10);
		if (*end)
			return -1;
		if (b == 0 || size == 0)
			return -2;
		if (b > size)
			b = size;
		*off = size - b;
		*len = b;
		return 0;
	}
	if (!isdigit((unsigned char)*h))
		return -1;
	a = strtoull(h, &end, 10);
	if (*end != '-')
		return -1;
	h = end + 1;
	if (!*h) {
		b = size ? size - 1 : 0;
	} else {
		if (!isdigit((unsigned char)*h))
			return -1;
		b = strtoull(h, &end, 10);
		if (*end || b < a)
			return -1;
		if (b >= size)
			b = size - 1;
	}
	if (a >= size)
		return -2;
	*off = a;
	*len = b - a + 1;
	return 0;
}

int nf_srv_serve_file(struct nf_httpd *s, struct nf_srv_req *rq,
		      const char *method, const char *url)
{
	struct MHD_Response *r;
	struct stat st;
	char etag[80], hash[65];
	const char *inm, *range;
	uint64_t off = 0, len;
	unsigned status = MHD_HTTP_OK;
	int ret;
	int fd, rr = -1;
	char *small = NULL;

	if (!nf_http_safe_path(url)) {
		nf_srv_access_log(s, rq, method, url, 404, 0);
		return nf_srv_send_error(rq, MHD_HTTP_NOT_FOUND, "not found");
	}
	fd = open_beneath(s->tree, url);
	/* a file the serving user may not open (an unprivileged serve) is
	 * refused like one it could open only by privilege */
	if (fd < 0 && errno == EACCES) {
		nf_srv_access_log(s, rq, method, url, 403, 0);
		return nf_srv_send_error(rq, MHD_HTTP_FORBIDDEN,
					 "not served: not readable to the "
					 "server's user");
	}
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		if (fd >= 0)
			close(fd);
		nf_srv_access_log(s, rq, method, url, 404, 0);
		return nf_srv_send_error(rq, MHD_HTTP_NOT_FOUND, "not found");
	}
	if (!servable(&st)) {
		close(fd);
		nf_srv_access_log(s, rq, method, url, 403, 0);
		return nf_srv_send_error(rq, MHD_HTTP_FORBIDDEN,
					 "not served: not world-readable or "
					 "more than one link");
	}
	len = (uint64_t)st.st_size;
	if ((size_t)st.st_size <= NF_HTTP_SMALL_FILE) {
		size_t got = 0;

		small = malloc(len ? len : 1);
		while (small && got < len) {
			ssize_t n = pread(fd, small + got, len - got, (off_t)got);

			if (n <= 0)
				break;
			got += (size_t)n;
		}
		if (!small || got != len) {
			free(small);
			close(fd);
			nf_srv_access_log(s, rq, method, url, 500, 0);
			return nf_srv_send_error(rq, MHD_HTTP_INTERNAL_SERVER_ERROR,
					  "read error");
		}
		close(fd);
		fd = -1;
		nf_sha256_hex(small, len, hash);
		snprintf(etag, sizeof(etag), "\"%.32s\"", hash);
	} else if (name_hash(url, hash, sizeof(hash))) {
		snprintf(etag, sizeof(etag), "\"%s\"", hash);
	} else {
		snprintf(etag, sizeof(etag), "W/\"%llx-%llx-%lx\"",
			 (unsigned long long)st.st_ino,
			 (unsigned long long)st.st_size,
			 (long)st.st_mtim.tv_sec);
	}
	inm = nf_srv_request_header(rq, MHD_HTTP_HEADER_IF_NONE_MATCH);
	if (inm && (!strcmp(inm, etag) || !strcmp(inm, "*"))) {
		free(small);
		if (fd >= 0)
			close(fd);
		r = MHD_create_response_from_buffer(0, NULL,
						    MHD_RESPMEM_PERSISTENT);
		if (!r)
			return -ENOMEM;
		MHD_add_response_header(r, MHD_HTTP_HEADER_ETAG, etag);
		nf_srv_access_log(s, rq, method, url, 304, 0);
		return nf_srv_queue(rq, MHD_HTTP_NOT_MODIFIED, r);
	}
	range = nf_srv_request_header(rq, MHD_HTTP_HEADER_RANGE);
	if (range) {
		uint64_t ro, rl;

		rr = nf_http_parse_range(range, len, &ro, &rl);
		if (rr == -2) {
			char cr[64];

			free(small);
			if (fd >= 0)
				close(fd);
			r = MHD_create_response_from_buffer(0, NULL,
							    MHD_RESPMEM_PERSISTENT);
			if (!r)
				return -ENOMEM;
			snprintf(cr, sizeof(cr), "bytes */%llu",
				 (unsigned long long)len);
			MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_RANGE, cr);
			nf_srv_access_log(s, rq, method, url, 416, 0);
			return nf_srv_queue(rq, MHD_HTTP_RANGE_NOT_SATISFIABLE, r);
		}
		if (rr == 0) {
			off = ro;
			status = MHD_HTTP_PARTIAL_CONTENT;
		}
	}
	if (status == MHD_HTTP_PARTIAL_CONTENT) {
		uint64_t ro = off, rl;

		nf_http_parse_range(range, len, &ro, &rl);
		if (small) {
			r = MHD_create_response_from_buffer((size_t)rl, small + ro,
							    MHD_RESPMEM_MUST_COPY);
		} else {
			r = MHD_create_response_from_fd_at_offset64(rl, fd, ro);
		}
		if (r) {
			char cr[96];

			snprintf(cr, sizeof(cr), "bytes %llu-%llu/%llu",
				 (unsigned long long)ro,
				 (unsigned long long)(ro + rl - 1),
				 (unsigned long long)len);
			MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_RANGE, cr);
		}
		len = rl;
	} else if (small) {
		r = MHD_create_response_from_buffer((size_t)len, small,
						    MHD_RESPMEM_MUST_COPY);
	} else {
		/* MHD sends fd responses with sendfile() and closes fd */
		r = MHD_create_response_from_fd64(len, fd);
	}
	free(small);
	if (!r) {
		if (fd >= 0)
			close(fd);
		return -ENOMEM;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
				content_type(url));
	MHD_add_response_header(r, MHD_HTTP_HEADER_ETAG, etag);
	MHD_add_response_header(r, MHD_HTTP_HEADER_ACCEPT_RANGES, "bytes");
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL,
				strncmp(url, "/images/", 8)
					? "no-cache"
					: "public, max-age=31536000, immutable");
	nf_srv_access_log(s, rq, method, url, status, strcmp(method, "HEAD") ? len : 0);
	ret = nf_srv_queue(rq, status, r);
	if (status == MHD_HTTP_OK && !strcmp(method, "GET") &&
	    s->ops->file_sent)
		s->ops->file_sent(s->ops_data, rq, url);
	return ret;
}

