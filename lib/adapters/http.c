/* SPDX-License-Identifier: MIT */
/*
 * libmicrohttpd adapter: the transport of the boot server (`nodeforge
 * serve`).
 *
 * Listening, the request head's deadline, request bodies, responses, the
 * access log, the client's address behind a trusted proxy; static files
 * of a boot tree are http_files.c.  What the server says is not here: the
 * caller (lib/serve.c) hands over a table of callbacks, struct
 * nf_httpd_ops, that gets the API's requests and hears of each file sent,
 * and answers through the functions of http.h.  MHD's types stay in this
 * file and http_files.c (http_int.h).
 */
#include "http_int.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <ctype.h>
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

/* ------------------------------------------------------------ helpers */

void nf_srv_iso_now(char out[32])
{
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int is_trusted(const struct nf_httpd *s, int family,
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
void nf_srv_request_peer(const struct nf_httpd *s, struct nf_srv_req *rq,
			 char *out, size_t sz, int *local)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(rq->c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
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
	xr = nf_srv_request_header(rq, "X-Real-IP");
	named = xr && strlen(xr) < sz && (inet_pton(AF_INET, xr, tmp) == 1 ||
					  inet_pton(AF_INET6, xr, tmp) == 1);
	if (named && trusted)
		snprintf(out, sz, "%s", xr);
	*local = loop && !named;
}

const char *nf_srv_request_header(struct nf_srv_req *rq, const char *name)
{
	return MHD_lookup_connection_value(rq->c, MHD_HEADER_KIND, name);
}

const char *nf_srv_request_body(const struct nf_srv_req *rq, size_t *len)
{
	*len = rq->len;
	if (rq->too_large)
		return NULL;
	return rq->body ? rq->body : "";
}

unsigned nf_srv_request_status(const struct nf_srv_req *rq)
{
	return rq->status;
}

/* ---------------------------------------------------------- responses */

int nf_srv_queue(struct nf_srv_req *rq, unsigned status,
		 struct MHD_Response *r)
{
	enum MHD_Result ret;

	if (!r)
		return -EIO;
	rq->status = status;
	ret = MHD_queue_response(rq->c, status, r);
	MHD_destroy_response(r);
	return ret == MHD_YES ? 0 : -EIO;
}

int nf_srv_send_buf(struct nf_srv_req *rq, unsigned status,
		    const char *type, const char *body, size_t len)
{
	struct MHD_Response *r;

	r = MHD_create_response_from_buffer(len, (void *)body,
					    MHD_RESPMEM_MUST_COPY);
	if (r) {
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
		MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL,
					"no-store");
	}
	return nf_srv_queue(rq, status, r);
}

int nf_srv_send_json(struct nf_srv_req *rq, unsigned status, json_t *j)
{
	char *txt = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	int ret;

	json_decref(j);
	if (!txt)
		return -ENOMEM;
	ret = nf_srv_send_buf(rq, status, "application/json", txt, strlen(txt));
	free(txt);
	return ret;
}

int nf_srv_send_error(struct nf_srv_req *rq, unsigned status,
		      const char *msg)
{
	return nf_srv_send_json(rq, status, json_pack("{s:s}", "error", msg));
}

void nf_srv_access_log(struct nf_httpd *s, struct nf_srv_req *rq,
		       const char *method, const char *url, unsigned status,
		       unsigned long long bytes)
{
	const union MHD_ConnectionInfo *ci;
	char addr[INET6_ADDRSTRLEN] = "-", when[32], line[NF_HTTP_URL_MAX + 160];

	if (!s->log_fn)
		return;
	ci = MHD_get_connection_info(rq->c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	if (ci && ci->client_addr && ci->client_addr->sa_family == AF_INET)
		inet_ntop(AF_INET,
			  &((const struct sockaddr_in *)ci->client_addr)->sin_addr,
			  addr, sizeof(addr));
	nf_srv_iso_now(when);
	snprintf(line, sizeof(line), "%s %s \"%s %s\" %u %llu", when, addr,
		 method, url, status, bytes);
	for (char *p = line; *p; p++)
		if (!isprint((unsigned char)*p))
			*p = '?';
	s->log_fn(s->log_data, line);
}


/* ------------------------------------------------------- head deadline */

/* libmicrohttpd's idle timeout starts again with every byte: a client
 * sending a header byte now and then holds its connection for ever.  So
 * every connection is listed with a deadline for its request head and
 * body (from its start, then from the end of each request), cleared
 * once the handler has the request whole; a sweeper thread shuts down
 * the socket of a connection past its deadline, and libmicrohttpd
 * closes it.  An entry
 * leaves the list (MHD_CONNECTION_NOTIFY_CLOSED) before its socket is
 * closed, so the sweeper never touches a descriptor reused since. */

/* CLOCK_MONOTONIC in milliseconds */
static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void conn_deadline(struct nf_httpd *s, struct MHD_Connection *c,
			  int64_t deadline)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct nf_conn *k = ci ? ci->socket_context : NULL;

	if (!k)
		return;
	pthread_mutex_lock(&s->conns_lock);
	k->deadline = deadline;
	pthread_mutex_unlock(&s->conns_lock);
}

static void request_whole(struct nf_httpd *s, struct MHD_Connection *c)
{
	conn_deadline(s, c, 0);
}

static void conn_notify(void *cls, struct MHD_Connection *c,
			void **socket_context,
			enum MHD_ConnectionNotificationCode code)
{
	struct nf_httpd *s = cls;
	struct nf_conn *k = *socket_context;

	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *fi =
			MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		const union MHD_ConnectionInfo *ai =
			MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);

		if (!fi || !(k = calloc(1, sizeof(*k))))
			return;
		k->fd = fi->connect_fd;
		k->deadline = mono_ms() + (int64_t)s->head_timeout * 1000;
		snprintf(k->addr, sizeof(k->addr), "-");
		if (ai && ai->client_addr && ai->client_addr->sa_family == AF_INET)
			inet_ntop(AF_INET, &((const struct sockaddr_in *)
					     ai->client_addr)->sin_addr,
				  k->addr, sizeof(k->addr));
		else if (ai && ai->client_addr &&
			 ai->client_addr->sa_family == AF_INET6)
			inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)
					      ai->client_addr)->sin6_addr,
				  k->addr, sizeof(k->addr));
		pthread_mutex_lock(&s->conns_lock);
		k->next = s->conns.next;
		k->prev = &s->conns;
		s->conns.next->prev = k;
		s->conns.next = k;
		pthread_mutex_unlock(&s->conns_lock);
		*socket_context = k;
	} else if (code == MHD_CONNECTION_NOTIFY_CLOSED && k) {
		pthread_mutex_lock(&s->conns_lock);
		k->prev->next = k->next;
		k->next->prev = k->prev;
		pthread_mutex_unlock(&s->conns_lock);
		free(k);
		*socket_context = NULL;
	}
}

/* One access line per connection closed (after the list's lock: a slow
 * log must not hold up new connections) */
static void log_closed(struct nf_httpd *s, const char (*addrs)[INET6_ADDRSTRLEN],
		       size_t n)
{
	char when[32], line[160];

	nf_srv_iso_now(when);
	for (size_t i = 0; i < n && s->log_fn; i++) {
		snprintf(line, sizeof(line), "%s %s \"(request not complete "
			 "in %u s)\" 408 0", when, addrs[i], s->head_timeout);
		s->log_fn(s->log_data, line);
	}
}

static void *sweeper_main(void *arg)
{
	struct nf_httpd *s = arg;
	char (*addrs)[INET6_ADDRSTRLEN] = NULL;
	size_t cap = 0;

	pthread_mutex_lock(&s->conns_lock);
	while (!s->sweep_stop) {
		struct timespec until;
		int64_t now = mono_ms();
		size_t n = 0;

		for (struct nf_conn *k = s->conns.next; k != &s->conns;
		     k = k->next) {
			if (!k->deadline || k->deadline > now)
				continue;
			k->deadline = 0;
			shutdown(k->fd, SHUT_RDWR);
			if (n == cap) {
				size_t nc = cap ? cap * 2 : 16;
				void *p = realloc(addrs, nc * sizeof(*addrs));

				if (!p)
					continue;
				addrs = p;
				cap = nc;
			}
			memcpy(addrs[n++], k->addr, sizeof(k->addr));
		}
		if (n) {
			pthread_mutex_unlock(&s->conns_lock);
			log_closed(s, (const char (*)[INET6_ADDRSTRLEN])addrs, n);
			pthread_mutex_lock(&s->conns_lock);
		}
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += 250 * 1000 * 1000;
		if (until.tv_nsec >= 1000 * 1000 * 1000) {
			until.tv_sec++;
			until.tv_nsec -= 1000 * 1000 * 1000;
		}
		if (!s->sweep_stop)
			pthread_cond_timedwait(&s->sweep_wake, &s->conns_lock,
					       &until);
	}
	pthread_mutex_unlock(&s->conns_lock);
	free(addrs);
	return NULL;
}

/* ------------------------------------------------------------- handler */

/* MHD_YES when an answer was queued: 0 from nf_srv_send_* */
static enum MHD_Result answered(int r)
{
	return r < 0 ? MHD_NO : MHD_YES;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c,
			       const char *url, const char *method,
			       const char *version, const char *upload,
			       size_t *upload_size, void **con_cls)
{
	struct nf_httpd *s = cls;
	struct nf_srv_req *rq = *con_cls;
	int post = !strcmp(method, "POST");

	(void)version;
	if (!rq)
		return MHD_NO; /* request_begin ran out of memory */
	rq->c = c;
	if (!rq->started) {
		const char *cl;

		rq->started = 1;
		if (rq->url_nul) {
			nf_srv_access_log(s, rq, method, "(NUL in URL)", 400, 0);
			return answered(nf_srv_send_error(
				rq, MHD_HTTP_BAD_REQUEST, "NUL byte in URL"));
		}
		if (strlen(url) > NF_HTTP_URL_MAX) {
			nf_srv_access_log(s, rq, method, "(long URL)", 414, 0);
			return answered(nf_srv_send_error(
				rq, MHD_HTTP_URI_TOO_LONG, "URL too long"));
		}
		if (strcmp(method, "GET") && strcmp(method, "HEAD") && !post) {
			nf_srv_access_log(s, rq, method, url, 405, 0);
			return answered(nf_srv_send_error(
				rq, MHD_HTTP_METHOD_NOT_ALLOWED,
				"method not allowed"));
		}
		cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						 MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (cl && strtoull(cl, NULL, 10) > NF_HTTP_BODY_MAX) {
			nf_srv_access_log(s, rq, method, url, 413, 0);
			return answered(nf_srv_send_error(
				rq, MHD_HTTP_CONTENT_TOO_LARGE,
				"request body too large"));
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
	/* the request is whole: its answer is not bound by the deadline */
	request_whole(s, c);
	if (rq->too_large && !post) {
		nf_srv_access_log(s, rq, method, url, 400, 0);
		return answered(nf_srv_send_error(rq, MHD_HTTP_BAD_REQUEST,
						  "unexpected body"));
	}
	if (!strncmp(url, "/api/v1/", 8))
		return answered(s->ops->api(s->ops_data, rq, method, url));
	if (post) {
		nf_srv_access_log(s, rq, method, url, 405, 0);
		return answered(nf_srv_send_error(
			rq, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed"));
	}
	return answered(nf_srv_serve_file(s, rq, method, url));
}

/* MHD_OPTION_URI_LOG_CALLBACK: once per request, with the target as the
 * client sent it.  libmicrohttpd then decodes it in place and hands the
 * handler a C string, which "%00" would cut short: /ipxe/boot.ipxe%00.txt
 * would be served as /ipxe/boot.ipxe.  Decode a copy with the same
 * function here and compare the lengths; the request object is made here
 * to carry the answer to the handler. */
static void *request_begin(void *cls, const char *uri, struct MHD_Connection *c)
{
	struct nf_srv_req *rq = calloc(1, sizeof(*rq));
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
	struct nf_httpd *s = cls;
	struct nf_srv_req *rq = *con_cls;

	(void)toe;
	/* the next request's head is due within the deadline too */
	conn_deadline(s, c, mono_ms() + (int64_t)s->head_timeout * 1000);
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

int nf_httpd_new(struct nf_ctx *ctx, const struct nf_serve_opts *o,
		 const struct nf_httpd_ops *ops, void *data,
		 struct nf_httpd **out)
{
	struct nf_httpd *s = calloc(1, sizeof(*s));

	*out = s;
	if (!s)
		return -ENOMEM;
	s->tree = -1;
	s->ops = ops;
	s->ops_data = data;
	pthread_mutex_init(&s->conns_lock, NULL);
	pthread_cond_init(&s->sweep_wake, NULL);
	s->conns.next = s->conns.prev = &s->conns;
	s->head_timeout = o->head_timeout ? o->head_timeout
					  : NF_SERVE_HEAD_TIMEOUT;
	s->per_address = o->per_address ? o->per_address
					: NF_SERVE_PER_ADDRESS;
	s->log_fn = o->access_log;
	s->log_data = o->log_data;
	if (o->ntrusted_proxies > NF_SERVE_TRUSTED_MAX)
		return nf_fail(ctx, NF_E_LIMIT, "more than %d trusted proxies",
			       NF_SERVE_TRUSTED_MAX);
	for (size_t i = 0; i < o->ntrusted_proxies; i++) {
		struct trusted *t = &s->trusted[s->ntrusted++];
		const char *a = o->trusted_proxies[i];

		t->family = inet_pton(AF_INET, a, t->addr) == 1    ? AF_INET
			    : inet_pton(AF_INET6, a, t->addr) == 1 ? AF_INET6
								    : 0;
		if (!t->family)
			return nf_fail(ctx, NF_E_INVALID, "invalid trusted "
				       "proxy '%s': expected an IPv4 or IPv6 "
				       "address", a);
	}
	return 0;
}

int nf_httpd_start(struct nf_ctx *ctx, struct nf_httpd *s, int tree,
		   const char *listen, unsigned threads)
{
	unsigned conn_limit = 8192;
	struct rlimit rl;
	int lfd = -1, r;

	s->tree = tree;
	if ((r = listen_socket(ctx, listen, &lfd, s->url)))
		return r;
	if (!threads) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		threads = n > 0 ? (unsigned)n : 2;
	}
	if (pthread_create(&s->sweeper, NULL, sweeper_main, s)) {
		close(lfd);
		return nf_fail(ctx, -EAGAIN, "cannot start the head deadline "
			       "thread");
	}
	s->sweeper_started = 1;
	/* leave descriptors for the files being served: a server whose
	 * every descriptor is a socket answers no one */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < conn_limit + 256u)
		conn_limit = rl.rlim_cur > 256u + 16u ? (unsigned)rl.rlim_cur - 256u
						     : 16u;
	s->mhd = MHD_start_daemon(
		MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_TURBO,
		0, NULL, NULL, handler, s,
		MHD_OPTION_LISTEN_SOCKET, lfd,
		MHD_OPTION_THREAD_POOL_SIZE, threads,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(32u << 10),
		MHD_OPTION_CONNECTION_LIMIT, conn_limit,
		MHD_OPTION_PER_IP_CONNECTION_LIMIT, s->per_address,
		MHD_OPTION_CONNECTION_TIMEOUT, 30u,
		MHD_OPTION_NOTIFY_CONNECTION, conn_notify, s,
		MHD_OPTION_URI_LOG_CALLBACK, request_begin, s,
		MHD_OPTION_NOTIFY_COMPLETED, completed, s,
		MHD_OPTION_END);
	if (!s->mhd) {
		close(lfd);
		return nf_fail(ctx, NF_E_EXTERNAL, "cannot start the HTTP "
			       "server on '%s'", listen);
	}
	return 0;
}

const char *nf_httpd_url(const struct nf_httpd *s)
{
	return s->url;
}

void nf_httpd_free(struct nf_httpd *s)
{
	if (!s)
		return;
	if (s->sweeper_started) {
		pthread_mutex_lock(&s->conns_lock);
		s->sweep_stop = 1;
		pthread_cond_signal(&s->sweep_wake);
		pthread_mutex_unlock(&s->conns_lock);
		pthread_join(s->sweeper, NULL);
	}
	if (s->mhd)
		MHD_stop_daemon(s->mhd); /* closes the listening socket */
	pthread_mutex_destroy(&s->conns_lock);
	pthread_cond_destroy(&s->sweep_wake);
	free(s);
}
