/* SPDX-License-Identifier: MIT */
/*
 * libmicrohttpd adapter: the embedded boot server (`nodeforge serve`).
 *
 * Static files of a boot tree (sendfile, HEAD, single Range, ETag) and a
 * small API where nodes report verdicts.  Node state lives in memory and
 * is written to the state directory: verdicts synchronously (the verifier
 * learns they are durable), boot events by a writer thread so that a boot
 * storm never waits on the disk.  MHD's types stay in this file.
 */
#include "internal.h"

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

#define NF_HTTP_URL_MAX 1024
#define NF_HTTP_BODY_MAX (64u << 10)
#define NF_HTTP_SMALL_FILE (256u << 10)  /* read, hash and copy below this */
#define NF_HTTP_INDEX_MAX (64u << 20)
#define NF_HTTP_STATE_MAX (1u << 20)
#define NF_HTTP_UNKNOWN_MAX 4096         /* unknown MACs remembered */
#define NF_HTTP_UNKNOWN_PER_PEER 16      /* new ones one address may add */
#define NF_HTTP_UNKNOWN_WINDOW 600       /* ... per this many seconds */

struct nf_server {
	struct MHD_Daemon *mhd;
	int tree;                  /* tree dirfd */
	char *tree_path;
	char *state_dir;
	char url[96];
	nf_access_log_fn log_fn;
	void *log_data;

	pthread_mutex_t write_lock; /* one writer of state files at a time, so
				     * an older snapshot never lands last */
	pthread_mutex_t lock;      /* everything below */
	json_t *index;             /* nodes.json */
	struct timespec index_mtime;
	json_t *by_mac;            /* "52-54-..." -> node object of index */
	json_t *state;             /* name -> state object */
	json_t *unknown;           /* mac -> {mac, seen_at} */
	json_t *unknown_peers;     /* address -> [window start, count] */
	json_t *dirty;             /* names to write */
	pthread_cond_t wake;
	pthread_t writer;
	int stopping, writer_started;

	struct nf_enroll *enroll;  /* borrowed; NULL: no enrollment API */
	pthread_mutex_t enroll_lock; /* one claim at a time (shared ctx) */

	struct trusted {           /* --trusted-proxy */
		int family;
		unsigned char addr[sizeof(struct in6_addr)];
	} trusted[NF_SERVE_TRUSTED_MAX];
	size_t ntrusted;
};

/* Status of the response this thread queued last (for the access log) */
static __thread unsigned last_status;

struct req {
	char *body;
	size_t len;
	int too_large;
	int started;   /* the handler has seen this request */
	int url_nul;   /* the target, decoded, holds a NUL byte */
};

/* ------------------------------------------------------------ helpers */

static void iso_now(char out[32])
{
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Reload nodes.json when it changed (caller holds the lock) */
static void index_refresh(struct nf_server *s)
{
	struct stat st;
	json_t *j, *nodes, *n;
	size_t i;
	int fd;

	if (fstatat(s->tree, "nodes.json", &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    !S_ISREG(st.st_mode) || st.st_size > NF_HTTP_INDEX_MAX)
		return;
	if (s->index && st.st_mtim.tv_sec == s->index_mtime.tv_sec &&
	    st.st_mtim.tv_nsec == s->index_mtime.tv_nsec)
		return;
	fd = openat(s->tree, "nodes.json", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	j = json_loadfd(fd, 0, NULL);
	close(fd);
	if (!json_is_object(j)) {
		json_decref(j);
		return;
	}
	json_decref(s->index);
	json_object_clear(s->by_mac);
	s->index = j;
	s->index_mtime = st.st_mtim;
	nodes = json_object_get(j, "nodes");
	json_array_foreach(nodes, i, n) {
		char key[18];
		const char *mac = json_string_value(json_object_get(n, "mac"));

		if (!mac || strlen(mac) != 17)
			continue;
		for (int k = 0; k < 17; k++)
			key[k] = mac[k] == ':' ? '-' : (char)tolower(mac[k]);
		key[17] = '\0';
		json_object_set(s->by_mac, key, n);
	}
}

static json_t *index_node(struct nf_server *s, const char *name)
{
	size_t i;
	json_t *n;

	json_array_foreach(json_object_get(s->index, "nodes"), i, n)
		if (!strcmp(json_string_value(json_object_get(n, "name")) ?: "",
			    name))
			return n;
	return NULL;
}

static int is_trusted(const struct nf_server *s, int family,
		      const void *addr)
{
	size_t n = family == AF_INET ? sizeof(struct in_addr)
				     : sizeof(struct in6_addr);

	for (size_t i = 0; i < s->ntrusted; i++)
		if (s->trusted[i].family == family &&
		    !memcmp(s->trusted[i].addr, addr, n))
			return 1;
	return 0;
}

/* The address a request comes from: the socket's peer, or, when that is a
 * proxy the operator listed (--trusted-proxy; the nginx that pxe renders
 * proxies /api/ from 127.0.0.1), the X-Real-IP it sets.  Any other peer
 * can write any header, so from it the header is never an address.
 * *local is 1 for a loopback request that names no other client: the
 * operator on the boot server, or a VM behind QEMU's user network.  A
 * request with an X-Real-IP address from a peer not listed is not local:
 * it is forwarded by an unlisted proxy, or forged. */
static void request_peer(const struct nf_server *s, struct MHD_Connection *c,
			 char *out, size_t sz, int *local)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const char *xr;
	unsigned char tmp[sizeof(struct in6_addr)];
	int loop = 0, trusted = 0, named;

	*out = '\0';
	if (ci && ci->client_addr && ci->client_addr->sa_family == AF_INET) {
		const struct in_addr *a =
			&((const struct sockaddr_in *)ci->client_addr)->sin_addr;

		inet_ntop(AF_INET, a, out, (socklen_t)sz);
		loop = (ntohl(a->s_addr) >> 24) == 127;
		trusted = is_trusted(s, AF_INET, a);
	} else if (ci && ci->client_addr && ci->client_addr->sa_family == AF_INET6) {
		const struct in6_addr *a =
			&((const struct sockaddr_in6 *)ci->client_addr)->sin6_addr;

		inet_ntop(AF_INET6, a, out, (socklen_t)sz);
		loop = IN6_IS_ADDR_LOOPBACK(a);
		trusted = is_trusted(s, AF_INET6, a);
	}
	xr = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Real-IP");
	named = xr && strlen(xr) < sz && (inet_pton(AF_INET, xr, tmp) == 1 ||
					  inet_pton(AF_INET6, xr, tmp) == 1);
	if (named && trusted)
		snprintf(out, sz, "%s", xr);
	*local = loop && !named;
}

static int valid_name(const char *s)
{
	size_t n = strlen(s);

	if (!n || n > 63)
		return 0;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '-')
			return 0;
	return 1;
}

/* ------------------------------------------------------------- state */

static int state_write(struct nf_server *s, const char *name, json_t *st)
{
	char *path, *txt;
	int r;

	path = nf_asprintf("%s/nodes/%s.json", s->state_dir, name);
	txt = json_dumps(st, JSON_INDENT(1) | JSON_SORT_KEYS);
	if (!path || !txt) {
		free(path);
		free(txt);
		return -ENOMEM;
	}
	r = nf_write_atomic(NULL, path, txt, strlen(txt), 0644);
	free(path);
	free(txt);
	return r;
}

/* Write a batch of states: every temporary first, one syncfs() for all,
 * then the renames; a reader sees the old or the new file, never half */
static void state_write_batch(struct nf_server *s, json_t *batch)
{
	char *dir = nf_asprintf("%s/nodes", s->state_dir);
	const char *name;
	json_t *v, *done = json_object();
	int dfd;

	if (!dir || !done) {
		free(dir);
		json_decref(done);
		return;
	}
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	free(dir);
	if (dfd < 0) {
		json_decref(done);
		return;
	}
	json_object_foreach(batch, name, v) {
		char tmp[96], *txt;
		size_t len, off = 0;
		int fd;

		if (!v || !(txt = json_dumps(v, JSON_INDENT(1) | JSON_SORT_KEYS)))
			continue;
		snprintf(tmp, sizeof(tmp), ".%s.json.tmp", name);
		fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
				      O_CLOEXEC, 0644);
		len = strlen(txt);
		while (fd >= 0 && off < len) {
			ssize_t w = write(fd, txt + off, len - off);

			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				break;
			off += (size_t)w;
		}
		free(txt);
		if (fd < 0)
			continue;
		close(fd);
		if (off == len)
			json_object_set_new(done, name, json_true());
		else
			unlinkat(dfd, tmp, 0);
	}
	syncfs(dfd);
	json_object_foreach(done, name, v) {
		char tmp[96], fin[96];

		snprintf(tmp, sizeof(tmp), ".%s.json.tmp", name);
		snprintf(fin, sizeof(fin), "%s.json", name);
		renameat(dfd, tmp, dfd, fin);
	}
	fsync(dfd);
	close(dfd);
	json_decref(done);
}

static void *writer_main(void *arg)
{
	struct nf_server *s = arg;
	const struct timespec gather = { 0, 50 * 1000 * 1000 };

	/* boot events may wait; requests may not */
	setpriority(PRIO_PROCESS, (id_t)gettid(), 10);
	pthread_mutex_lock(&s->lock);
	for (;;) {
		const char *name;
		json_t *v, *batch;

		while (!json_object_size(s->dirty) && !s->stopping)
			pthread_cond_wait(&s->wake, &s->lock);
		if (!json_object_size(s->dirty) && s->stopping)
			break;
		if (!s->stopping) {
			/* let a storm's events gather into one batch */
			pthread_mutex_unlock(&s->lock);
			nanosleep(&gather, NULL);
			pthread_mutex_lock(&s->lock);
		}
		batch = json_object();
		json_object_foreach(s->dirty, name, v)
			json_object_set_new(batch, name,
					    json_deep_copy(json_object_get(
						    s->state, name)));
		json_object_clear(s->dirty);
		pthread_mutex_lock(&s->write_lock);
		pthread_mutex_unlock(&s->lock);
		state_write_batch(s, batch);
		pthread_mutex_unlock(&s->write_lock);
		json_decref(batch);
		pthread_mutex_lock(&s->lock);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

static int mac_key(const char *k)
{
	uint8_t m[6];

	return strlen(k) == 17 && !nf_mac_parse(k, m);
}

/* STATE/SUB/KEY.json into `into` (KEY as `key_ok` accepts it), at most
 * `max` entries */
static void load_dir(struct nf_server *s, const char *sub,
		     int (*key_ok)(const char *), json_t *into, size_t max)
{
	char *dir = nf_asprintf("%s/%s", s->state_dir, sub);
	struct dirent *de;
	DIR *d;

	if (!dir)
		return;
	if ((d = opendir(dir))) {
		while ((de = readdir(d)) && json_object_size(into) < max) {
			size_t n = strlen(de->d_name);
			char key[64], *buf, *p;
			json_t *j;

			if (n < 6 || n - 5 >= sizeof(key) ||
			    strcmp(de->d_name + n - 5, ".json"))
				continue;
			memcpy(key, de->d_name, n - 5);
			key[n - 5] = '\0';
			if (!key_ok(key))
				continue;
			if (!(p = nf_asprintf("%s/%s", dir, de->d_name)))
				break;
			if (nf_read_file(NULL, p, NF_HTTP_STATE_MAX, &buf, NULL) == 0) {
				j = json_loads(buf, 0, NULL);
				if (json_is_object(j))
					json_object_set_new(into, key, j);
				else
					json_decref(j);
				free(buf);
			}
			free(p);
		}
		closedir(d);
	}
	free(dir);
}

/* The nodes' states, and the unknown MACs seen before a restart */
static void state_load(struct nf_server *s)
{
	load_dir(s, "nodes", valid_name, s->state, SIZE_MAX);
	load_dir(s, "unknown", mac_key, s->unknown, NF_HTTP_UNKNOWN_MAX);
}

/* ---------------------------------------------------------- responses */

static enum MHD_Result send_buf(struct MHD_Connection *c, unsigned status,
				const char *type, const char *body, size_t len)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(len, (void *)body,
					    MHD_RESPMEM_MUST_COPY);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	last_status = status;
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result send_json(struct MHD_Connection *c, unsigned status,
				 json_t *j)
{
	char *txt = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	enum MHD_Result ret;

	json_decref(j);
	if (!txt)
		return MHD_NO;
	ret = send_buf(c, status, "application/json", txt, strlen(txt));
	free(txt);
	return ret;
}

static enum MHD_Result send_error(struct MHD_Connection *c, unsigned status,
				  const char *msg)
{
	return send_json(c, status, json_pack("{s:s}", "error", msg));
}

static void access_log(struct nf_server *s, struct MHD_Connection *c,
		       const char *method, const char *url, unsigned status,
		       unsigned long long bytes)
{
	const union MHD_ConnectionInfo *ci;
	char addr[INET6_ADDRSTRLEN] = "-", when[32], line[NF_HTTP_URL_MAX + 160];

	if (!s->log_fn)
		return;
	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	if (ci && ci->client_addr && ci->client_addr->sa_family == AF_INET)
		inet_ntop(AF_INET,
			  &((const struct sockaddr_in *)ci->client_addr)->sin_addr,
			  addr, sizeof(addr));
	iso_now(when);
	snprintf(line, sizeof(line), "%s %s \"%s %s\" %u %llu", when, addr,
		 method, url, status, bytes);
	for (char *p = line; *p; p++)
		if (!isprint((unsigned char)*p))
			*p = '?';
	s->log_fn(s->log_data, line);
}

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

static void mark_booting(struct nf_server *s, const char *url)
{
	const char *base = strrchr(url, '/') + 1;
	char mac[18], when[32];
	json_t *n, *role, *st;
	const char *name, *rname;

	if (strlen(base) != 22 || strcmp(base + 17, ".ipxe"))
		return;
	memcpy(mac, base, 17);
	mac[17] = '\0';
	iso_now(when);
	pthread_mutex_lock(&s->lock);
	index_refresh(s);
	n = json_object_get(s->by_mac, mac);
	name = json_string_value(json_object_get(n, "name"));
	if (name && valid_name(name)) {
		rname = json_string_value(json_object_get(n, "role"));
		role = json_object_get(json_object_get(s->index, "roles"),
				       rname ? rname : "");
		st = json_pack("{s:s, s:s, s:s, s:O?, s:s}", "name", name,
			       "state", "booting", "booted_at", when, "image",
			       json_object_get(role, "kernel"), "mac", mac);
		if (st) {
			json_object_set_new(s->state, name, st);
			json_object_set_new(s->dirty, name, json_true());
			pthread_cond_signal(&s->wake);
		}
	}
	pthread_mutex_unlock(&s->lock);
}

static enum MHD_Result serve_file(struct nf_server *s,
				  struct MHD_Connection *c, const char *method,
				  const char *url)
{
	struct MHD_Response *r;
	struct stat st;
	char etag[80], hash[65];
	const char *inm, *range;
	uint64_t off = 0, len;
	unsigned status = MHD_HTTP_OK;
	enum MHD_Result ret;
	int fd, rr = -1;
	char *small = NULL;

	if (!nf_http_safe_path(url)) {
		access_log(s, c, method, url, 404, 0);
		return send_error(c, MHD_HTTP_NOT_FOUND, "not found");
	}
	fd = open_beneath(s->tree, url);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		if (fd >= 0)
			close(fd);
		access_log(s, c, method, url, 404, 0);
		return send_error(c, MHD_HTTP_NOT_FOUND, "not found");
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
			access_log(s, c, method, url, 500, 0);
			return send_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
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
	inm = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
					  MHD_HTTP_HEADER_IF_NONE_MATCH);
	if (inm && (!strcmp(inm, etag) || !strcmp(inm, "*"))) {
		free(small);
		if (fd >= 0)
			close(fd);
		r = MHD_create_response_from_buffer(0, NULL,
						    MHD_RESPMEM_PERSISTENT);
		if (!r)
			return MHD_NO;
		MHD_add_response_header(r, MHD_HTTP_HEADER_ETAG, etag);
		access_log(s, c, method, url, 304, 0);
		ret = MHD_queue_response(c, MHD_HTTP_NOT_MODIFIED, r);
		MHD_destroy_response(r);
		return ret;
	}
	range = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
					    MHD_HTTP_HEADER_RANGE);
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
				return MHD_NO;
			snprintf(cr, sizeof(cr), "bytes */%llu",
				 (unsigned long long)len);
			MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_RANGE, cr);
			access_log(s, c, method, url, 416, 0);
			ret = MHD_queue_response(c, MHD_HTTP_RANGE_NOT_SATISFIABLE, r);
			MHD_destroy_response(r);
			return ret;
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
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
				content_type(url));
	MHD_add_response_header(r, MHD_HTTP_HEADER_ETAG, etag);
	MHD_add_response_header(r, MHD_HTTP_HEADER_ACCEPT_RANGES, "bytes");
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL,
				strncmp(url, "/images/", 8)
					? "no-cache"
					: "public, max-age=31536000, immutable");
	access_log(s, c, method, url, status, strcmp(method, "HEAD") ? len : 0);
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	if (status == MHD_HTTP_OK && !strcmp(method, "GET") &&
	    !strncmp(url, "/ipxe/mac/", 10))
		mark_booting(s, url);
	return ret;
}

/* ----------------------------------------------------------------- API */

/* 404 naming the node asked for */
static enum MHD_Result send_unknown_node(struct MHD_Connection *c, const char *name)
{
	char q[72], msg[128];

	nf_quote_value(name, q, sizeof(q));
	snprintf(msg, sizeof(msg), "no node '%s' in the inventory", q);
	return send_error(c, MHD_HTTP_NOT_FOUND, msg);
}

static json_t *node_view(struct nf_server *s, json_t *n, int full)
{
	const char *name = json_string_value(json_object_get(n, "name"));
	json_t *st = json_object_get(s->state, name ? name : "");
	json_t *v = json_pack("{s:O?, s:O?, s:O?, s:O?, s:O?}", "name",
			      json_object_get(n, "name"), "mac",
			      json_object_get(n, "mac"), "ip",
			      json_object_get(n, "ip"), "role",
			      json_object_get(n, "role"), "rack",
			      json_object_get(n, "rack"));
	static const char *const keys[] = { "state", "image", "booted_at",
					    "verdict_at", "root_cause",
					    "result" };

	if (!v)
		return NULL;
	json_object_set_new(v, "state", json_string("not seen"));
	for (size_t i = 0; st && i < NF_ARRAY_SIZE(keys); i++) {
		json_t *x = json_object_get(st, keys[i]);

		if (x)
			json_object_set(v, keys[i], x);
	}
	if (full && json_object_get(st, "verdict"))
		json_object_set(v, "verdict", json_object_get(st, "verdict"));
	return v;
}

static enum MHD_Result api_nodes(struct nf_server *s, struct MHD_Connection *c,
				 const char *name)
{
	json_t *out, *arr, *n, *unk;
	size_t i;
	const char *k;
	json_t *v;

	pthread_mutex_lock(&s->lock);
	index_refresh(s);
	if (name) {
		n = index_node(s, name);
		out = n ? node_view(s, n, 1) : NULL;
		pthread_mutex_unlock(&s->lock);
		if (!n)
			return send_unknown_node(c, name);
		return send_json(c, MHD_HTTP_OK, out);
	}
	out = json_object();
	arr = json_array();
	unk = json_array();
	json_array_foreach(json_object_get(s->index, "nodes"), i, n)
		json_array_append_new(arr, node_view(s, n, 0));
	json_object_foreach(s->unknown, k, v)
		json_array_append(unk, v);
	pthread_mutex_unlock(&s->lock);
	json_object_set_new(out, "nodes", arr);
	json_object_set_new(out, "unknown", unk);
	return send_json(c, MHD_HTTP_OK, out);
}

/* Validate a verdict; NULL when good, else the reason */
void nf_quote_value(const char *s, char *out, size_t sz)
{
	size_t n = 0;

	for (; s && *s && n + 1 < sz && n < 64; s++)
		out[n++] = *s >= 0x20 && *s < 0x7f ? *s : '?';
	if (sz)
		out[n] = '\0';
}

const char *nf_verdict_check(const json_t *v, const char *name, char *buf,
			     size_t sz)
{
	const char *res = json_string_value(json_object_get(v, "result"));
	json_t *node = json_object_get(v, "node"), *rc, *x;
	char a[72], b[72];
	size_t i;

	if (!json_is_object(v))
		return "verdict must be a JSON object";
	if (!res || (strcmp(res, "pass") && strcmp(res, "fail"))) {
		nf_quote_value(res, a, sizeof(a));
		snprintf(buf, sz, "'result' must be \"pass\" or \"fail\", not %s%s%s",
			 res ? "'" : "", res ? a : "missing", res ? "'" : "");
		return buf;
	}
	if (node && (!json_is_string(node) ||
		     strcmp(json_string_value(node), name))) {
		nf_quote_value(json_string_value(node), a, sizeof(a));
		nf_quote_value(name, b, sizeof(b));
		snprintf(buf, sz, "'node' is '%s' but the URL names '%s'",
			 json_is_string(node) ? a : "(not a string)", b);
		return buf;
	}
	if (json_object_get(v, "image") &&
	    !json_is_string(json_object_get(v, "image")))
		return "'image' must be a string";
	rc = json_object_get(v, "root_causes");
	if (rc && !json_is_array(rc))
		return "'root_causes' must be a list";
	json_array_foreach(rc, i, x)
		if (!json_is_string(json_object_get(x, "id")) ||
		    (json_object_get(x, "message") &&
		     !json_is_string(json_object_get(x, "message"))))
			return "'root_causes' entries need a string 'id'";
	return NULL;
}

static enum MHD_Result api_verdict(struct nf_server *s,
				   struct MHD_Connection *c, const char *name,
				   struct req *rq)
{
	json_error_t je;
	json_t *v, *st, *rc0, *node;
	const char *why, *res, *ip;
	char when[32], cause[512] = "", peer[INET6_ADDRSTRLEN], whybuf[256];
	int r, local;

	if (rq->too_large)
		return send_error(c, MHD_HTTP_CONTENT_TOO_LARGE,
				  "verdict larger than 64 KiB");
	v = json_loadb(rq->body ? rq->body : "", rq->len, JSON_REJECT_DUPLICATES,
		       &je);
	if (!v)
		return send_error(c, MHD_HTTP_BAD_REQUEST, "malformed JSON");
	if ((why = nf_verdict_check(v, name, whybuf, sizeof(whybuf)))) {
		json_decref(v);
		return send_error(c, MHD_HTTP_BAD_REQUEST, why);
	}
	res = json_string_value(json_object_get(v, "result"));
	rc0 = json_array_get(json_object_get(v, "root_causes"), 0);
	if (rc0)
		snprintf(cause, sizeof(cause), "%s%s%s",
			 json_string_value(json_object_get(rc0, "id")),
			 json_object_get(rc0, "message") ? ": " : "",
			 json_string_value(json_object_get(rc0, "message")) ?: "");
	else if (!strcmp(res, "fail"))
		snprintf(cause, sizeof(cause), "failed (no root cause given)");
	iso_now(when);
	request_peer(s, c, peer, sizeof(peer), &local);
	pthread_mutex_lock(&s->lock);
	index_refresh(s);
	if (!(node = index_node(s, name))) {
		pthread_mutex_unlock(&s->lock);
		json_decref(v);
		return send_unknown_node(c, name);
	}
	/* a node reports for itself: from its inventory address (a request
	 * from this machine itself is the operator's) */
	ip = json_string_value(json_object_get(node, "ip"));
	if (!local && ip && *ip && strcmp(ip, peer)) {
		pthread_mutex_unlock(&s->lock);
		json_decref(v);
		snprintf(cause, sizeof(cause), "verdict for '%s' from %s, not its "
			 "inventory address %s", name, peer, ip);
		return send_error(c, MHD_HTTP_FORBIDDEN, cause);
	}
	/* an enrolled node signs its verdict with its munge key */
	if (s->enroll) {
		pthread_mutex_lock(&s->enroll_lock);
		r = nf_enroll_verdict_auth(
			s->enroll, name,
			MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						    "X-Nodeforge-Time"),
			MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						    "X-Nodeforge-Proof"),
			rq->body ? rq->body : "", rq->len);
		if (r < 0)
			snprintf(cause, sizeof(cause), "%s",
				 nf_errmsg(nf_enroll_ctx(s->enroll)));
		pthread_mutex_unlock(&s->enroll_lock);
		if (r < 0) {
			pthread_mutex_unlock(&s->lock);
			json_decref(v);
			return send_error(c, r == NF_E_SIGNATURE
					  ? MHD_HTTP_FORBIDDEN
					  : MHD_HTTP_INTERNAL_SERVER_ERROR,
					  cause);
		}
	}
	st = json_object_get(s->state, name);
	st = st ? json_deep_copy(st) : json_pack("{s:s}", "name", name);
	json_object_set_new(st, "state", json_string(!strcmp(res, "pass")
							     ? "verified"
							     : "failed"));
	json_object_set_new(st, "result", json_string(res));
	json_object_set_new(st, "verdict_at", json_string(when));
	if (*cause)
		json_object_set_new(st, "root_cause", json_string(cause));
	else
		json_object_del(st, "root_cause");
	if (json_is_string(json_object_get(v, "image")))
		json_object_set(st, "image", json_object_get(v, "image"));
	json_object_set_new(st, "verdict", v);
	json_object_set(s->state, name, st);
	json_object_del(s->dirty, name);
	/* a batch snapshotted before this verdict holds write_lock until its
	 * files are renamed; one snapshotted after already has the verdict */
	pthread_mutex_unlock(&s->lock);
	pthread_mutex_lock(&s->write_lock);
	/* durable before the node hears "stored" */
	r = state_write(s, name, st);
	pthread_mutex_unlock(&s->write_lock);
	json_decref(st);
	if (r)
		return send_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
				  "cannot store the verdict");
	return send_json(c, MHD_HTTP_OK, json_pack("{s:s}", "stored", name));
}

/* Whether `peer` may add another unknown MAC now: each address adds at
 * most NF_HTTP_UNKNOWN_PER_PEER per NF_HTTP_UNKNOWN_WINDOW seconds, so
 * one flooding client cannot fill the table and hide the machines that
 * come after it (a new machine asks from its own DHCP address).  Under
 * s->lock. */
static int unknown_budget(struct nf_server *s, const char *peer)
{
	long long now = (long long)time(NULL), start;
	json_t *p = json_object_get(s->unknown_peers, peer);

	if (!p) {
		/* forget every address once the table of them is full */
		if (json_object_size(s->unknown_peers) >= NF_HTTP_UNKNOWN_MAX)
			json_object_clear(s->unknown_peers);
		json_object_set_new(s->unknown_peers, peer,
				    json_pack("[I,i]", now, 1));
		return 1;
	}
	start = json_integer_value(json_array_get(p, 0));
	if (now - start >= NF_HTTP_UNKNOWN_WINDOW) {
		json_array_set_new(p, 0, json_integer(now));
		json_array_set_new(p, 1, json_integer(1));
		return 1;
	}
	if (json_integer_value(json_array_get(p, 1)) >= NF_HTTP_UNKNOWN_PER_PEER)
		return 0;
	json_array_set_new(p, 1, json_integer(
		json_integer_value(json_array_get(p, 1)) + 1));
	return 1;
}

static enum MHD_Result api_unknown(struct nf_server *s,
				   struct MHD_Connection *c, const char *mac)
{
	char when[32], peer[INET6_ADDRSTRLEN], file[18];
	json_t *rec = NULL;
	uint8_t m[6];
	int known, local;

	if (nf_mac_parse(mac, m))
		return send_error(c, MHD_HTTP_BAD_REQUEST, "malformed MAC");
	iso_now(when);
	request_peer(s, c, peer, sizeof(peer), &local);
	nf_mac_format(m, '-', file);
	pthread_mutex_lock(&s->lock);
	index_refresh(s);
	known = json_object_get(s->by_mac, file) != NULL;
	if (!known && !json_object_get(s->unknown, file) &&
	    json_object_size(s->unknown) < NF_HTTP_UNKNOWN_MAX &&
	    unknown_budget(s, peer)) {
		char key[18];

		nf_mac_format(m, ':', key);
		rec = json_pack("{s:s, s:s, s:s, s:s}", "mac", key, "first_seen",
				when, "seen_at", when, "from", peer);
		json_object_set(s->unknown, file, rec);
	} else if (!known && json_object_get(s->unknown, file)) {
		json_object_set_new(json_object_get(s->unknown, file), "seen_at",
				    json_string(when));
	}
	pthread_mutex_unlock(&s->lock);
	/* a new machine is kept across restarts: this list is how an
	 * operator finds a new rack */
	if (rec) {
		char *p = nf_asprintf("%s/unknown/%s.json", s->state_dir, file);
		char *txt = json_dumps(rec, JSON_INDENT(1) | JSON_SORT_KEYS);

		if (p && txt)
			nf_write_atomic(NULL, p, txt, strlen(txt), 0644);
		free(p);
		free(txt);
		json_decref(rec);
	}
	return send_buf(c, MHD_HTTP_OK, "text/plain", "recorded\n", 9);
}

/* POST /api/v1/enroll, /api/v1/rotate: lib/enroll.c decides, from the
 * peer's address; GET /api/v1/enroll: windows, claims and refusals, to a
 * loopback peer only */
static enum MHD_Result api_enroll(struct nf_server *s,
				  struct MHD_Connection *c, const char *method,
				  int rotate, struct req *rq)
{
	char peer[INET6_ADDRSTRLEN] = "";
	json_t *resp = NULL;
	int status = 500, r, local;

	if (!strcmp(method, "GET") && !rotate) {
		/* which nodes may claim now is for the operator on the
		 * boot server, not for the network */
		request_peer(s, c, peer, sizeof(peer), &local);
		if (!local)
			return send_error(c, MHD_HTTP_FORBIDDEN,
					  "the enrollment state is served to "
					  "the boot server itself only");
		pthread_mutex_lock(&s->enroll_lock);
		r = nf_enroll_state(s->enroll, &resp);
		pthread_mutex_unlock(&s->enroll_lock);
		return r ? send_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
				      "enrollment state unavailable")
			 : send_json(c, MHD_HTTP_OK, resp);
	}
	if (strcmp(method, "POST"))
		return send_error(c, MHD_HTTP_METHOD_NOT_ALLOWED,
				  "method not allowed");
	if (rq->too_large)
		return send_error(c, MHD_HTTP_CONTENT_TOO_LARGE,
				  "claim too large");
	request_peer(s, c, peer, sizeof(peer), &local);
	pthread_mutex_lock(&s->enroll_lock);
	r = (rotate ? nf_rotate_poll : nf_enroll_claim)(
		s->enroll, peer, rq->body ? rq->body : "", rq->len, &resp,
		&status);
	pthread_mutex_unlock(&s->enroll_lock);
	if (r || !resp)
		return send_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
				  "enrollment failed");
	return send_json(c, (unsigned)status, resp);
}

static enum MHD_Result api(struct nf_server *s, struct MHD_Connection *c,
			   const char *method, const char *url,
			   struct req *rq)
{
	const char *p = url + strlen("/api/v1/");
	char name[80];
	enum MHD_Result ret = MHD_NO;
	unsigned status = 200;

	last_status = 0;
	if (!strcmp(p, "nodes")) {
		if (strcmp(method, "GET") && strcmp(method, "HEAD"))
			status = 405;
		else
			ret = api_nodes(s, c, NULL);
	} else if (!strncmp(p, "nodes/", 6)) {
		const char *rest = p + 6, *slash = strchr(rest, '/');
		size_t n = slash ? (size_t)(slash - rest) : strlen(rest);

		if (n >= sizeof(name)) {
			status = 404;
		} else {
			memcpy(name, rest, n);
			name[n] = '\0';
			if (!valid_name(name))
				status = 404;
			else if (!slash && !strcmp(method, "GET"))
				ret = api_nodes(s, c, name);
			else if (slash && !strcmp(slash, "/verdict") &&
				 !strcmp(method, "POST"))
				ret = api_verdict(s, c, name, rq);
			else
				status = slash && !strcmp(slash, "/verdict")
						 ? 405 : 404;
		}
	} else if (!strncmp(p, "unknown/", 8) && !strcmp(method, "GET")) {
		ret = api_unknown(s, c, p + 8);
	} else if (s->enroll && (!strcmp(p, "enroll") || !strcmp(p, "rotate"))) {
		ret = api_enroll(s, c, method, p[0] == 'r', rq);
	} else {
		status = 404;
	}
	if (status == 405)
		ret = send_error(c, MHD_HTTP_METHOD_NOT_ALLOWED,
				 "method not allowed");
	else if (status == 404)
		ret = send_error(c, MHD_HTTP_NOT_FOUND, "not found");
	access_log(s, c, method, url, last_status ? last_status : status, 0);
	return ret;
}

/* ------------------------------------------------------------- handler */

static enum MHD_Result handler(void *cls, struct MHD_Connection *c,
			       const char *url, const char *method,
			       const char *version, const char *upload,
			       size_t *upload_size, void **con_cls)
{
	struct nf_server *s = cls;
	struct req *rq = *con_cls;
	int post = !strcmp(method, "POST");

	(void)version;
	if (!rq)
		return MHD_NO; /* request_begin ran out of memory */
	if (!rq->started) {
		const char *cl;

		rq->started = 1;
		if (rq->url_nul) {
			access_log(s, c, method, "(NUL in URL)", 400, 0);
			return send_error(c, MHD_HTTP_BAD_REQUEST,
					  "NUL byte in URL");
		}
		if (strlen(url) > NF_HTTP_URL_MAX) {
			access_log(s, c, method, "(long URL)", 414, 0);
			return send_error(c, MHD_HTTP_URI_TOO_LONG, "URL too long");
		}
		if (strcmp(method, "GET") && strcmp(method, "HEAD") && !post) {
			access_log(s, c, method, url, 405, 0);
			return send_error(c, MHD_HTTP_METHOD_NOT_ALLOWED,
					  "method not allowed");
		}
		cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						 MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (cl && strtoull(cl, NULL, 10) > NF_HTTP_BODY_MAX) {
			access_log(s, c, method, url, 413, 0);
			return send_error(c, MHD_HTTP_CONTENT_TOO_LARGE,
					  "request body too large");
		}
		return MHD_YES;
	}
	if (*upload_size) {
		if (!post || rq->len + *upload_size > NF_HTTP_BODY_MAX) {
			rq->too_large = 1;
		} else {
			char *b = realloc(rq->body, rq->len + *upload_size + 1);

			if (!b)
				return MHD_NO;
			memcpy(b + rq->len, upload, *upload_size);
			rq->body = b;
			rq->len += *upload_size;
			b[rq->len] = '\0';
		}
		*upload_size = 0;
		return MHD_YES;
	}
	if (rq->too_large && !post) {
		access_log(s, c, method, url, 400, 0);
		return send_error(c, MHD_HTTP_BAD_REQUEST, "unexpected body");
	}
	if (!strncmp(url, "/api/v1/", 8))
		return api(s, c, method, url, rq);
	if (post) {
		access_log(s, c, method, url, 405, 0);
		return send_error(c, MHD_HTTP_METHOD_NOT_ALLOWED,
				  "method not allowed");
	}
	return serve_file(s, c, method, url);
}

/* MHD_OPTION_URI_LOG_CALLBACK: once per request, with the target as the
 * client sent it.  libmicrohttpd then decodes it in place and hands the
 * handler a C string, which "%00" would cut short: /ipxe/boot.ipxe%00.txt
 * would be served as /ipxe/boot.ipxe.  Decode a copy with the same
 * function here and compare the lengths; the request object is made here
 * to carry the answer to the handler. */
static void *request_begin(void *cls, const char *uri, struct MHD_Connection *c)
{
	struct req *rq = calloc(1, sizeof(*rq));
	char *copy;

	(void)cls;
	(void)c;
	if (!rq)
		return NULL;
	if (!(copy = strdup(uri))) {
		free(rq);
		return NULL;
	}
	rq->url_nul = MHD_http_unescape(copy) != strlen(copy);
	free(copy);
	return rq;
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
		      enum MHD_RequestTerminationCode toe)
{
	struct req *rq = *con_cls;

	(void)cls;
	(void)c;
	(void)toe;
	if (rq) {
		free(rq->body);
		free(rq);
		*con_cls = NULL;
	}
}

/* --------------------------------------------------------------- setup */

/* A host name's first address, IPv4 preferred, into ss; 0 or -1 */
static int resolve_host(const char *host, struct sockaddr_storage *ss, socklen_t *sl,
			int *v6)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res = NULL, *pick = NULL;

	if (getaddrinfo(host, NULL, &hints, &res) != 0)
		return -1;
	for (struct addrinfo *a = res; a; a = a->ai_next)
		if (!pick || (a->ai_family == AF_INET && pick->ai_family != AF_INET))
			pick = a;
	if (!pick || pick->ai_addrlen > sizeof(*ss)) {
		freeaddrinfo(res);
		return -1;
	}
	memcpy(ss, pick->ai_addr, pick->ai_addrlen);
	*sl = pick->ai_addrlen;
	*v6 = pick->ai_family == AF_INET6;
	freeaddrinfo(res);
	return 0;
}

/* ADDR:PORT, [ADDR6]:PORT or HOSTNAME:PORT (its first address, IPv4
 * first); an empty ADDR is 0.0.0.0; port 0 picks one */
static int listen_socket(struct nf_ctx *ctx, const char *spec, int *fdout,
			 char url[96])
{
	char host[256];
	const char *colon = strrchr(spec, ':'), *h = spec;
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
	socklen_t sl;
	size_t hl;
	unsigned long port;
	char *end;
	int fd, one = 1, v6 = 0;

	if (!colon)
		goto bad;
	hl = (size_t)(colon - spec);
	if (*spec == '[') {
		if (hl < 2 || spec[hl - 1] != ']')
			goto bad;
		h = spec + 1;
		hl -= 2;
		v6 = 1;
	}
	if (hl >= sizeof(host))
		goto bad;
	memcpy(host, h, hl);
	host[hl] = '\0';
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (!colon[1] || *end || errno || port > 65535 || colon[1] == '-' ||
	    colon[1] == '+')
		goto bad;
	if (v6) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		if (inet_pton(AF_INET6, host, &s6->sin6_addr) != 1)
			goto bad;
		sl = sizeof(*s6);
	} else {
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
		sl = sizeof(*s4);
		if (inet_pton(AF_INET, *host ? host : "0.0.0.0",
			      &s4->sin_addr) != 1) {
			if (resolve_host(host, &ss, &sl, &v6))
				goto bad;
			if (v6)
				s6->sin6_port = htons((uint16_t)port);
			else
				s4->sin_port = htons((uint16_t)port);
		}
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return nf_fail(ctx, -errno, "cannot create a socket: %s",
			       strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (v6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, sl) < 0 || listen(fd, 4096) < 0 ||
	    getsockname(fd, (struct sockaddr *)&ss, &sl) < 0) {
		int e = errno;

		close(fd);
		return nf_fail(ctx, -e, "cannot listen on '%s': %s", spec,
			       strerror(e));
	}
	if (v6) {
		inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof(host));
		snprintf(url, 96, "http://[%s]:%u", host, ntohs(s6->sin6_port));
	} else {
		inet_ntop(AF_INET, &s4->sin_addr, host, sizeof(host));
		snprintf(url, 96, "http://%s:%u", host, ntohs(s4->sin_port));
	}
	*fdout = fd;
	return 0;
bad:
	return nf_fail(ctx, NF_E_USAGE, "invalid listen address '%s': "
		       "expected ADDR:PORT, HOST:PORT or [ADDR6]:PORT", spec);
}

int nf_server_start(struct nf_ctx *ctx, const struct nf_serve_opts *o,
		    struct nf_server **out)
{
	struct nf_server *s = calloc(1, sizeof(*s));
	char *nodes_dir = NULL;
	unsigned threads = o->threads;
	int lfd = -1, r;

	if (!s)
		return -ENOMEM;
	s->tree = -1;
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_init(&s->write_lock, NULL);
	pthread_mutex_init(&s->enroll_lock, NULL);
	s->enroll = o->enroll;
	pthread_cond_init(&s->wake, NULL);
	s->by_mac = json_object();
	s->state = json_object();
	s->unknown = json_object();
	s->unknown_peers = json_object();
	s->dirty = json_object();
	s->tree_path = nf_strdup(o->tree);
	s->state_dir = nf_strdup(o->state_dir);
	s->log_fn = o->access_log;
	s->log_data = o->log_data;
	if (o->ntrusted_proxies > NF_SERVE_TRUSTED_MAX) {
		r = nf_fail(ctx, NF_E_LIMIT, "more than %d trusted proxies",
			    NF_SERVE_TRUSTED_MAX);
		goto fail;
	}
	for (size_t i = 0; i < o->ntrusted_proxies; i++) {
		struct trusted *t = &s->trusted[s->ntrusted++];
		const char *a = o->trusted_proxies[i];

		t->family = inet_pton(AF_INET, a, t->addr) == 1    ? AF_INET
			    : inet_pton(AF_INET6, a, t->addr) == 1 ? AF_INET6
								    : 0;
		if (!t->family) {
			r = nf_fail(ctx, NF_E_INVALID, "invalid trusted proxy "
				    "'%s': expected an IPv4 or IPv6 address",
				    a);
			goto fail;
		}
	}
	if (!s->by_mac || !s->state || !s->unknown || !s->unknown_peers ||
	    !s->dirty ||
	    !s->tree_path || !s->state_dir) {
		r = -ENOMEM;
		goto fail;
	}
	s->tree = open(o->tree, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (s->tree < 0) {
		r = nf_fail(ctx, -errno, "cannot open tree '%s': %s", o->tree,
			    strerror(errno));
		goto fail;
	}
	nodes_dir = nf_asprintf("%s/nodes", o->state_dir);
	if (!nodes_dir) {
		r = -ENOMEM;
		goto fail;
	}
	if ((mkdir(o->state_dir, 0755) < 0 && errno != EEXIST) ||
	    (mkdir(nodes_dir, 0755) < 0 && errno != EEXIST)) {
		r = nf_fail(ctx, -errno, "cannot create '%s': %s", nodes_dir,
			    strerror(errno));
		goto fail;
	}
	free(nodes_dir);
	nodes_dir = nf_asprintf("%s/unknown", o->state_dir);
	if (!nodes_dir) {
		r = -ENOMEM;
		goto fail;
	}
	if (mkdir(nodes_dir, 0755) < 0 && errno != EEXIST) {
		r = nf_fail(ctx, -errno, "cannot create '%s': %s", nodes_dir,
			    strerror(errno));
		goto fail;
	}
	free(nodes_dir);
	nodes_dir = NULL;
	index_refresh(s);
	state_load(s);
	if ((r = listen_socket(ctx, o->listen, &lfd, s->url)))
		goto fail;
	if (!threads) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		threads = n > 0 ? (unsigned)n : 2;
	}
	if (pthread_create(&s->writer, NULL, writer_main, s)) {
		r = nf_fail(ctx, -EAGAIN, "cannot start the state writer");
		goto fail;
	}
	s->writer_started = 1;
	s->mhd = MHD_start_daemon(
		MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_TURBO,
		0, NULL, NULL, handler, s,
		MHD_OPTION_LISTEN_SOCKET, lfd,
		MHD_OPTION_THREAD_POOL_SIZE, threads,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(32u << 10),
		MHD_OPTION_CONNECTION_LIMIT, 8192u,
		MHD_OPTION_CONNECTION_TIMEOUT, 30u,
		MHD_OPTION_URI_LOG_CALLBACK, request_begin, s,
		MHD_OPTION_NOTIFY_COMPLETED, completed, s,
		MHD_OPTION_END);
	if (!s->mhd) {
		r = nf_fail(ctx, NF_E_EXTERNAL, "cannot start the HTTP server "
			    "on '%s'", o->listen);
		goto fail;
	}
	*out = s;
	return 0;
fail:
	if (lfd >= 0)
		close(lfd);
	free(nodes_dir);
	nf_server_stop(s);
	return r;
}

const char *nf_server_url(const struct nf_server *s)
{
	return s->url;
}

void nf_server_stop(struct nf_server *s)
{
	if (!s)
		return;
	if (s->mhd)
		MHD_stop_daemon(s->mhd); /* closes the listening socket */
	if (s->writer_started) {
		pthread_mutex_lock(&s->lock);
		s->stopping = 1;
		pthread_cond_signal(&s->wake);
		pthread_mutex_unlock(&s->lock);
		pthread_join(s->writer, NULL);
	}
	if (s->tree >= 0)
		close(s->tree);
	json_decref(s->index);
	json_decref(s->by_mac);
	json_decref(s->state);
	json_decref(s->unknown);
	json_decref(s->unknown_peers);
	json_decref(s->dirty);
	pthread_mutex_destroy(&s->lock);
	pthread_mutex_destroy(&s->write_lock);
	pthread_mutex_destroy(&s->enroll_lock);
	pthread_cond_destroy(&s->wake);
	free(s->tree_path);
	free(s->state_dir);
	free(s);
}
