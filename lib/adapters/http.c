/* SPDX-License-Identifier: MIT */
/*
 * libmicrohttpd adapter: the embedded boot server (`nodeforge serve`).
 *
 * Static files of a boot tree (sendfile, HEAD, single Range, ETag) and a
 * small API where nodes report verdicts.  Node state lives in memory and
 * is written to the state directory: verdicts synchronously (the verifier
 * learns they are durable), boot events by a writer thread so that a boot
 * storm never waits on the disk.  MHD's types stay in the server's files
 * (this one, http_files.c, http_api.c: http_int.h).
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

/* Status of the response this thread queued last (for the access log) */
__thread unsigned nf_srv_last_status;

/* ------------------------------------------------------------ helpers */

void nf_srv_iso_now(char out[32])
{
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Reload nodes.json when it changed (caller holds the lock) */
void nf_srv_index_refresh(struct nf_server *s)
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

json_t *nf_srv_index_node(struct nf_server *s, const char *name)
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
void nf_srv_request_peer(const struct nf_server *s, struct MHD_Connection *c,
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

int nf_srv_valid_name(const char *s)
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

int nf_srv_state_write(struct nf_server *s, const char *name, json_t *st)
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

/* An entry's last sighting, in seconds since the epoch; 0 unreadable */
time_t nf_srv_unknown_seen(json_t *rec)
{
	const char *t = json_string_value(json_object_get(rec, "seen_at"));
	struct tm tm = { 0 };
	const char *end;

	if (!t || !(end = strptime(t, "%Y-%m-%dT%H:%M:%SZ", &tm)) || *end)
		return 0;
	return timegm(&tm);
}

static void unknown_drop(struct nf_server *s, const char *file)
{
	char *p = nf_asprintf("%s/unknown/%s.json", s->state_dir, file);

	if (p)
		unlink(p);
	free(p);
	json_object_del(s->unknown, file);
}

void nf_srv_unknown_expire(struct nf_server *s, time_t now)
{
	const char *k;
	json_t *v;
	void *tmp;

	json_object_foreach_safe(s->unknown, tmp, k, v)
		if (nf_srv_unknown_seen(v) + NF_HTTP_UNKNOWN_TTL <= now)
			unknown_drop(s, k);
}

/* Room for one more unknown MAC: the expired go, then, while the table
 * is full, the one seen longest ago (under s->lock) */
void nf_srv_unknown_make_room(struct nf_server *s)
{
	nf_srv_unknown_expire(s, time(NULL));
	while (json_object_size(s->unknown) >= NF_HTTP_UNKNOWN_MAX) {
		const char *k, *oldest = NULL;
		time_t at = 0;
		json_t *v;

		json_object_foreach(s->unknown, k, v) {
			time_t t = nf_srv_unknown_seen(v);

			if (!oldest || t < at) {
				oldest = k;
				at = t;
			}
		}
		unknown_drop(s, oldest);
	}
}

/* The nodes' states, and the unknown MACs seen before a restart */
static void state_load(struct nf_server *s)
{
	load_dir(s, "nodes", nf_srv_valid_name, s->state, SIZE_MAX);
	load_dir(s, "unknown", mac_key, s->unknown, NF_HTTP_UNKNOWN_MAX);
	nf_srv_unknown_expire(s, time(NULL));
}

/* ---------------------------------------------------------- responses */

enum MHD_Result nf_srv_send_buf(struct MHD_Connection *c, unsigned status,
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
	nf_srv_last_status = status;
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

enum MHD_Result nf_srv_send_json(struct MHD_Connection *c, unsigned status,
				 json_t *j)
{
	char *txt = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	enum MHD_Result ret;

	json_decref(j);
	if (!txt)
		return MHD_NO;
	ret = nf_srv_send_buf(c, status, "application/json", txt, strlen(txt));
	free(txt);
	return ret;
}

enum MHD_Result nf_srv_send_error(struct MHD_Connection *c, unsigned status,
				  const char *msg)
{
	return nf_srv_send_json(c, status, json_pack("{s:s}", "error", msg));
}

void nf_srv_access_log(struct nf_server *s, struct MHD_Connection *c,
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

static void conn_deadline(struct nf_server *s, struct MHD_Connection *c,
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

static void request_whole(struct nf_server *s, struct MHD_Connection *c)
{
	conn_deadline(s, c, 0);
}

static void conn_notify(void *cls, struct MHD_Connection *c,
			void **socket_context,
			enum MHD_ConnectionNotificationCode code)
{
	struct nf_server *s = cls;
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
static void log_closed(struct nf_server *s, const char (*addrs)[INET6_ADDRSTRLEN],
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
	struct nf_server *s = arg;
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
			nf_srv_access_log(s, c, method, "(NUL in URL)", 400, 0);
			return nf_srv_send_error(c, MHD_HTTP_BAD_REQUEST,
					  "NUL byte in URL");
		}
		if (strlen(url) > NF_HTTP_URL_MAX) {
			nf_srv_access_log(s, c, method, "(long URL)", 414, 0);
			return nf_srv_send_error(c, MHD_HTTP_URI_TOO_LONG, "URL too long");
		}
		if (strcmp(method, "GET") && strcmp(method, "HEAD") && !post) {
			nf_srv_access_log(s, c, method, url, 405, 0);
			return nf_srv_send_error(c, MHD_HTTP_METHOD_NOT_ALLOWED,
					  "method not allowed");
		}
		cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						 MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (cl && strtoull(cl, NULL, 10) > NF_HTTP_BODY_MAX) {
			nf_srv_access_log(s, c, method, url, 413, 0);
			return nf_srv_send_error(c, MHD_HTTP_CONTENT_TOO_LARGE,
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
	/* the request is whole: its answer is not bound by the deadline */
	request_whole(s, c);
	if (rq->too_large && !post) {
		nf_srv_access_log(s, c, method, url, 400, 0);
		return nf_srv_send_error(c, MHD_HTTP_BAD_REQUEST, "unexpected body");
	}
	if (!strncmp(url, "/api/v1/", 8))
		return nf_srv_api(s, c, method, url, rq);
	if (post) {
		nf_srv_access_log(s, c, method, url, 405, 0);
		return nf_srv_send_error(c, MHD_HTTP_METHOD_NOT_ALLOWED,
				  "method not allowed");
	}
	return nf_srv_serve_file(s, c, method, url);
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
	struct nf_server *s = cls;
	struct req *rq = *con_cls;

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

int nf_server_start(struct nf_ctx *ctx, const struct nf_serve_opts *o,
		    struct nf_server **out)
{
	struct nf_server *s = calloc(1, sizeof(*s));
	char *nodes_dir = NULL;
	unsigned threads = o->threads, per_address, conn_limit = 8192;
	struct rlimit rl;
	int lfd = -1, r;

	if (!s)
		return -ENOMEM;
	s->tree = -1;
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_init(&s->write_lock, NULL);
	pthread_mutex_init(&s->enroll_lock, NULL);
	pthread_mutex_init(&s->conns_lock, NULL);
	pthread_cond_init(&s->sweep_wake, NULL);
	s->conns.next = s->conns.prev = &s->conns;
	s->head_timeout = o->head_timeout ? o->head_timeout
					  : NF_SERVE_HEAD_TIMEOUT;
	per_address = o->per_address ? o->per_address : NF_SERVE_PER_ADDRESS;
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
	nf_srv_index_refresh(s);
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
	if (pthread_create(&s->sweeper, NULL, sweeper_main, s)) {
		r = nf_fail(ctx, -EAGAIN, "cannot start the head deadline thread");
		goto fail;
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
		MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_address,
		MHD_OPTION_CONNECTION_TIMEOUT, 30u,
		MHD_OPTION_NOTIFY_CONNECTION, conn_notify, s,
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
	if (s->sweeper_started) {
		pthread_mutex_lock(&s->conns_lock);
		s->sweep_stop = 1;
		pthread_cond_signal(&s->sweep_wake);
		pthread_mutex_unlock(&s->conns_lock);
		pthread_join(s->sweeper, NULL);
	}
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
	pthread_mutex_destroy(&s->conns_lock);
	pthread_cond_destroy(&s->wake);
	pthread_cond_destroy(&s->sweep_wake);
	free(s->tree_path);
	free(s->state_dir);
	free(s);
}

