/* SPDX-License-Identifier: MIT */
/*
 * The boot server (`nodeforge serve`): node state in memory, written to
 * the state directory: verdicts synchronously (the verifier learns they
 * are durable, lib/http_api.c), boot events by a writer thread so that a
 * boot storm never waits on the disk.  The transport, libmicrohttpd, is
 * lib/adapters/http.c: it hands this file the API's requests and the
 * files it sent through a table of callbacks (serve_int.h).
 */
#include "serve_int.h"

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------ the index */

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

/* --------------------------------------------------------- boot events */

/* The image a kernel of the index boots: ROLE-ID.vmlinuz is ROLE@ID, as
 * `nodeforge image list` and `reimage --image` name it; a kernel of
 * another name is named by its file */
static json_t *image_of(const char *role, const char *kernel)
{
	static const char sfx[] = ".vmlinuz";
	size_t rl = role ? strlen(role) : 0, kl = strlen(kernel);
	size_t sl = sizeof(sfx) - 1;

	if (rl && kl > rl + 1 + sl && !strncmp(kernel, role, rl) &&
	    kernel[rl] == '-' && !strcmp(kernel + kl - sl, sfx))
		return json_sprintf("%s@%.*s", role, (int)(kl - rl - 1 - sl),
				    kernel + rl + 1);
	return json_string(kernel);
}

/* A node fetching its own boot script is booting.  Only the node itself
 * says so (its inventory address; a loopback request is the operator's,
 * as for verdicts): anyone may read the script, but a fetch from another
 * address changes nothing.  The last verdict, with its time and root
 * cause, stays in the state until the next verdict replaces it. */
static void mark_booting(void *data, struct nf_srv_req *rq,
			 const char *url)
{
	struct nf_server *s = data;
	const char *base = strrchr(url, '/') + 1;
	char mac[18], when[32], peer[INET6_ADDRSTRLEN];
	json_t *n, *kernel, *st, *old;
	const char *name, *rname, *ip;
	int local;

	if (strncmp(url, "/ipxe/mac/", 10) || strlen(base) != 22 ||
	    strcmp(base + 17, ".ipxe"))
		return;
	memcpy(mac, base, 17);
	mac[17] = '\0';
	nf_srv_iso_now(when);
	nf_srv_request_peer(s->http, rq, peer, sizeof(peer), &local);
	pthread_mutex_lock(&s->lock);
	nf_srv_index_refresh(s);
	n = json_object_get(s->by_mac, mac);
	name = json_string_value(json_object_get(n, "name"));
	ip = json_string_value(json_object_get(n, "ip"));
	if (name && nf_srv_valid_name(name) &&
	    (local || (ip && *ip && !strcmp(ip, peer)))) {
		/* the kernel the node's own entry boots (a reimage or a
		 * rollback pointed it elsewhere), else its role's */
		rname = json_string_value(json_object_get(n, "role"));
		kernel = json_object_get(n, "kernel");
		if (!json_is_string(kernel))
			kernel = json_object_get(json_object_get(json_object_get(
				s->index, "roles"), rname ? rname : ""), "kernel");
		old = json_object_get(s->state, name);
		st = json_is_object(old) ? json_deep_copy(old) : json_object();
		if (st) {
			int bad = json_object_set_new(st, "name", json_string(name));

			bad |= json_object_set_new(st, "state", json_string("booting"));
			bad |= json_object_set_new(st, "booted_at", json_string(when));
			bad |= json_object_set_new(st, "mac", json_string(mac));
			if (json_is_string(kernel))
				bad |= json_object_set_new(st, "image", image_of(
					rname, json_string_value(kernel)));
			if (bad) {
				json_decref(st);
				st = NULL;
			}
		}
		if (st) {
			json_object_set_new(s->state, name, st);
			json_object_set_new(s->dirty, name, json_true());
			pthread_cond_signal(&s->wake);
		}
	}
	pthread_mutex_unlock(&s->lock);
}

/* -------------------------------------------------------------- setup */

/* What the transport hands this server */
static const struct nf_httpd_ops serve_ops = {
	.api = nf_srv_api,
	.file_sent = mark_booting,
};

/* DIR/nodes and DIR/unknown, DIR too, made when missing (a failure
 * names the subdirectory) */
static int state_dirs(struct nf_ctx *ctx, const char *dir)
{
	static const char *const sub[] = { "nodes", "unknown" };
	int r = 0;

	for (size_t i = 0; !r && i < NF_ARRAY_SIZE(sub); i++) {
		char *p = nf_asprintf("%s/%s", dir, sub[i]);

		if (!p)
			return -ENOMEM;
		if ((!i && mkdir(dir, 0755) < 0 && errno != EEXIST) ||
		    (mkdir(p, 0755) < 0 && errno != EEXIST))
			r = nf_fail(ctx, -errno, "cannot create '%s': %s", p,
				    strerror(errno));
		free(p);
	}
	return r;
}

int nf_server_start(struct nf_ctx *ctx, const struct nf_serve_opts *o,
		    struct nf_server **out)
{
	struct nf_server *s = calloc(1, sizeof(*s));
	int r;

	if (!s)
		return -ENOMEM;
	s->tree = -1;
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_init(&s->write_lock, NULL);
	pthread_mutex_init(&s->enroll_lock, NULL);
	pthread_cond_init(&s->wake, NULL);
	s->enroll = o->enroll;
	s->by_mac = json_object();
	s->state = json_object();
	s->unknown = json_object();
	s->unknown_peers = json_object();
	s->dirty = json_object();
	s->state_dir = nf_strdup(o->state_dir);
	if ((r = nf_httpd_new(ctx, o, &serve_ops, s, &s->http)))
		goto fail;
	if (!s->by_mac || !s->state || !s->unknown || !s->unknown_peers ||
	    !s->dirty || !s->state_dir) {
		r = -ENOMEM;
		goto fail;
	}
	s->tree = open(o->tree, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (s->tree < 0) {
		r = nf_fail(ctx, -errno, "cannot open tree '%s': %s", o->tree,
			    strerror(errno));
		goto fail;
	}
	if ((r = state_dirs(ctx, o->state_dir)))
		goto fail;
	nf_srv_index_refresh(s);
	state_load(s);
	if (pthread_create(&s->writer, NULL, writer_main, s)) {
		r = nf_fail(ctx, -EAGAIN, "cannot start the state writer");
		goto fail;
	}
	s->writer_started = 1;
	if ((r = nf_httpd_start(ctx, s->http, s->tree, o->listen, o->threads)))
		goto fail;
	*out = s;
	return 0;
fail:
	nf_server_stop(s);
	return r;
}

const char *nf_server_url(const struct nf_server *s)
{
	return nf_httpd_url(s->http);
}

void nf_server_stop(struct nf_server *s)
{
	if (!s)
		return;
	nf_httpd_free(s->http); /* no request after this */
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
	free(s->state_dir);
	free(s);
}
