/* SPDX-License-Identifier: MIT */
/*
 * The verifier's engine and the check API (lib/verify_int.h names the
 * other parts): runs every facet's checks in dependency order,
 * each within its time budget, and keeps the results with root causes
 * first.  Checks that may block run in a worker thread; when one passes its
 * deadline it is reported `hung` and abandoned (its thread keeps the run's
 * shared state alive), so the run always ends within its total budget.
 */
#include "verify_int.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>




/* ------------------------------------------------------------ helpers */

void nf_vrun_unref(struct nf_vrun *r)
{
	if (!r || atomic_fetch_sub(&r->refs, 1) != 1)
		return;
	if (r->rootfd >= 0)
		close(r->rootfd);
	free(r->root);
	free(r->sysroot);
	json_decref(r->profile);
	json_decref(r->fixture);
	json_decref(r->cache);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

void nf_vrun_probe_watch(void *arg, pid_t pgid, int alive)
{
	struct nf_vrun *r = arg;

	pthread_mutex_lock(&r->lock);
	if (alive && r->over)
		kill(-pgid, SIGKILL);
	else if (alive && r->nprobes < sizeof(r->probes) / sizeof(r->probes[0]))
		r->probes[r->nprobes++] = pgid;
	for (size_t i = 0; !alive && i < r->nprobes; i++)
		if (r->probes[i] == pgid) {
			r->probes[i] = r->probes[--r->nprobes];
			break;
		}
	pthread_mutex_unlock(&r->lock);
}

void nf_vrun_end(struct nf_vrun *r)
{
	pthread_mutex_lock(&r->lock);
	r->over = true;
	/* a group here was not reaped yet (its watch removes it first), so
	 * its id is still the probe's */
	for (size_t i = 0; i < r->nprobes; i++)
		kill(-r->probes[i], SIGKILL);
	pthread_mutex_unlock(&r->lock);
}

static void check_unref(struct nf_vcheck *c)
{
	if (atomic_fetch_sub(&c->refs, 1) != 1)
		return;
	nf_vrun_unref(c->run);
	nf_ctx_free(c->ctx);
	pthread_mutex_destroy(&c->mu);
	pthread_cond_destroy(&c->cv);
	free(c);
}

/* What a check says is built from what it read (driver strings, command
 * output, file contents): it reaches terminals, the login banner, the
 * drain reason and pasteable remedies, so control characters are escaped
 * here, once for every check */
#define VSET(buf, fmt)                                        \
	do {                                                  \
		va_list ap_;                                  \
		va_start(ap_, fmt);                           \
		vsnprintf(buf, sizeof(buf), fmt, ap_);        \
		va_end(ap_);                                  \
		nf_text_defang(buf, sizeof(buf));             \
	} while (0)

void nf_v_expect(struct nf_vcheck *c, const char *fmt, ...)
{
	VSET(c->expected, fmt);
}

void nf_v_seen(struct nf_vcheck *c, const char *fmt, ...)
{
	VSET(c->seen, fmt);
}

void nf_v_remedy(struct nf_vcheck *c, const char *fmt, ...)
{
	VSET(c->remedy, fmt);
}

int nf_v_skip(struct nf_vcheck *c, const char *fmt, ...)
{
	VSET(c->reason, fmt);
	return NF_V_SKIP;
}

const json_t *nf_v_profile(const struct nf_vcheck *c)
{
	return c->run->profile;
}

const char *nf_v_role(const struct nf_vcheck *c)
{
	const char *r = json_string_value(json_object_get(c->run->profile, "role"));

	return r && *r ? r : "ROLE";
}

int nf_v_cmdline(struct nf_vcheck *c, struct nf_cmdline **out)
{
	return nf_cmdline_read(NULL, c->run->sysroot, out);
}

int nf_v_netboot(struct nf_vcheck *c)
{
	char *v = NULL;
	int r = nf_cmdline_get_at(NULL, c->run->sysroot, "nodeforge.server", &v);

	free(v);
	return r == 0;
}

struct nf_ctx *nf_v_ctx(struct nf_vcheck *c)
{
	if (c->ctx)
		return c->ctx;
	if (nf_ctx_alloc(&c->ctx))
		return NULL;
	if (nf_ctx_set_sysroot(c->ctx, c->run->sysroot)) {
		nf_ctx_free(c->ctx);
		c->ctx = NULL;
	}
	return c->ctx;
}

const char *nf_v_id(const struct nf_vcheck *c)
{
	return c->id;
}

bool nf_v_static(const struct nf_vcheck *c)
{
	return c->run->static_mode;
}

const char *nf_v_path(struct nf_vcheck *c, int where, const char *path,
		      char *buf, size_t sz)
{
	if (where == NF_VSYS)
		return nf_sysroot_path_buf(c->run->sysroot, buf, sz, path);
	snprintf(buf, sz, "%s%s", c->run->root, path);
	return buf;
}

static int has_dotdot(const char *p)
{
	for (const char *s = p; (s = strstr(s, "..")); s += 2)
		if ((s == p || s[-1] == '/') && (s[2] == '/' || !s[2]))
			return 1;
	return 0;
}

/* Open a node file inside the root: symlinks resolve inside it */
static int open_in_root(struct nf_vcheck *c, const char *path, int flags)
{
	const char *rel = path;

	while (*rel == '/')
		rel++;
	if (has_dotdot(rel))
		return -EINVAL;
	if (!*c->run->root || c->run->rootfd < 0) {
		int fd = open(path, flags | O_CLOEXEC);

		return fd < 0 ? -errno : fd;
	}
	return nf_openat_root(c->run->rootfd, rel, flags);
}

static int open_where(struct nf_vcheck *c, int where, const char *path, int flags)
{
	char buf[4096];
	int fd;

	if (where == NF_VROOT)
		return open_in_root(c, path, flags);
	if (has_dotdot(path))
		return -EINVAL;
	fd = open(nf_v_path(c, where, path, buf, sizeof(buf)), flags | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int nf_v_read(struct nf_vcheck *c, int where, const char *path, size_t max,
	      char **out, size_t *len)
{
	int fd = open_where(c, where, path, O_RDONLY | O_NONBLOCK), r;

	if (fd < 0)
		return fd;
	r = nf_read_fd(fd, max, out, len);
	close(fd);
	return r;
}

unsigned long long nf_v_mem_total_kb(struct nf_vcheck *c)
{
	unsigned long long kb = 0;
	char *buf = NULL, *m;

	if (!nf_v_read(c, NF_VSYS, "/proc/meminfo", 64 * 1024, &buf, NULL) &&
	    (m = strstr(buf, "MemTotal:")))
		kb = strtoull(m + 9, NULL, 10);
	free(buf);
	return kb;
}

int nf_v_stat(struct nf_vcheck *c, int where, const char *path, struct stat *st)
{
	int fd = open_where(c, where, path, O_PATH);
	int r = 0;

	if (fd < 0)
		return fd;
	if (fstat(fd, st) < 0)
		r = -errno;
	close(fd);
	return r;
}

const json_t *nf_v_cache_get(struct nf_vcheck *c, const char *key)
{
	const json_t *v;

	pthread_mutex_lock(&c->run->lock);
	v = json_object_get(c->run->cache, key);
	pthread_mutex_unlock(&c->run->lock);
	return v;
}

void nf_v_cache_put(struct nf_vcheck *c, const char *key, json_t *val)
{
	pthread_mutex_lock(&c->run->lock);
	json_object_set_new(c->run->cache, key, val);
	pthread_mutex_unlock(&c->run->lock);
}

char *nf_v_conf_get(const char *text, const char *key, const char *seps)
{
	size_t klen = strlen(key);
	char *found = NULL;

	for (const char *l = text; l && *l;) {
		const char *e = strchr(l, '\n');
		size_t len = e ? (size_t)(e - l) : strlen(l);
		const char *p = l;

		while (p < l + len && (*p == ' ' || *p == '\t'))
			p++;
		if ((size_t)(l + len - p) > klen && !strncasecmp(p, key, klen) &&
		    strchr(seps, p[klen])) {
			const char *v = p + klen, *ve = l + len;

			while (v < ve && strchr(seps, *v))
				v++;
			while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t' ||
					  ve[-1] == '\r'))
				ve--;
			free(found);
			found = strndup(v, (size_t)(ve - v));
		}
		l = e ? e + 1 : NULL;
	}
	return found;
}

int nf_v_json_str(const json_t *v, char *buf, size_t sz)
{
	if (json_is_string(v))
		snprintf(buf, sz, "%s", json_string_value(v));
	else if (json_is_integer(v))
		snprintf(buf, sz, "%lld", (long long)json_integer_value(v));
	else if (json_is_real(v))
		snprintf(buf, sz, "%g", json_real_value(v));
	else if (json_is_true(v))
		snprintf(buf, sz, "yes");
	else if (json_is_false(v))
		snprintf(buf, sz, "no");
	else
		return -EINVAL;
	return 0;
}

/* -------------------------------------------------------------- engine */

static void *worker(void *arg)
{
	struct nf_vcheck *c = arg;
	int v = c->def->fn(c, c->section);

	pthread_mutex_lock(&c->mu);
	c->verdict = v;
	c->done = true;
	pthread_cond_signal(&c->cv);
	pthread_mutex_unlock(&c->mu);
	check_unref(c);
	return NULL;
}

/* Run one check; fills e->res.  `end` is the run's deadline */
static void run_one(struct nf_vrun *run, struct entry *e,
		    const struct timespec *end)
{
	struct nf_vcheck *c = calloc(1, sizeof(*c));
	unsigned budget = e->def->budget_ms ? e->def->budget_ms : CHECK_BUDGET_MS;
	struct timespec t0, t1;
	bool done;
	int v;

	now(&t0);
	if (!c) {
		e->res.verdict = NF_V_FAIL;
		e->reason = strdup("out of memory");
		return;
	}
	c->run = run;
	atomic_fetch_add(&run->refs, 1);
	c->def = e->def;
	snprintf(c->id, sizeof(c->id), "%s", entry_id(e));
	c->section = e->section;
	atomic_init(&c->refs, 1);
	pthread_mutex_init(&c->mu, NULL);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&c->cv, &ca);
		pthread_condattr_destroy(&ca);
	}
	c->deadline = t0;
	add_ms(&c->deadline, budget);
	if (ts_before(end, &c->deadline)) {
		c->deadline = *end;
		budget = (unsigned)((end->tv_sec - t0.tv_sec) * 1000 +
				    (end->tv_nsec - t0.tv_nsec) / 1000000);
	}

	if (e->def->flags & NF_CHECK_PROBE) {
		pthread_attr_t pa;
		pthread_t th;

		atomic_fetch_add(&c->refs, 1);
		pthread_attr_init(&pa);
		pthread_attr_setdetachstate(&pa, PTHREAD_CREATE_DETACHED);
		if (pthread_create(&th, &pa, worker, c)) {
			atomic_fetch_sub(&c->refs, 1);
			c->verdict = e->def->fn(c, c->section);
			c->done = true;
		} else {
			/* the probe's own timeouts (exec) fire at the deadline;
			 * a little grace lets it report them itself */
			struct timespec lim = c->deadline;

			add_ms(&lim, 20);
			pthread_mutex_lock(&c->mu);
			while (!c->done &&
			       pthread_cond_timedwait(&c->cv, &c->mu, &lim) != ETIMEDOUT)
				;
			pthread_mutex_unlock(&c->mu);
		}
		pthread_attr_destroy(&pa);
	} else {
		c->verdict = e->def->fn(c, c->section);
		c->done = true;
	}
	pthread_mutex_lock(&c->mu);
	done = c->done;
	v = c->verdict;
	pthread_mutex_unlock(&c->mu);
	if (!done) {
		/* abandoned: the worker may still write into c, read nothing */
		e->res.verdict = NF_V_HUNG;
		e->reason = nf_asprintf("no answer within %u ms", budget);
	} else {
		if (v == NF_E_TIMEOUT || (v == NF_V_HUNG && !*c->reason)) {
			snprintf(c->reason, sizeof(c->reason), "no answer within %u ms", budget);
			v = NF_V_HUNG;
		}
		if (v < NF_V_PASS || v > NF_V_WARN)
			v = NF_V_FAIL;
		e->res.verdict = v;
		e->expected = *c->expected ? strdup(c->expected) : NULL;
		e->seen = *c->seen ? strdup(c->seen) : NULL;
		e->remedy = *c->remedy ? strdup(c->remedy) : NULL;
		e->reason = *c->reason ? strdup(c->reason) : NULL;
	}
	check_unref(c);
	now(&t1);
	e->res.elapsed_us = (unsigned)((t1.tv_sec - t0.tv_sec) * 1000000 +
				       (t1.tv_nsec - t0.tv_nsec) / 1000);
}

static struct entry *find_entry(struct nf_verify *v, const char *id, size_t len)
{
	for (size_t i = 0; i < v->n; i++)
		if (strlen(entry_id(&v->v[i])) == len &&
		    !strncmp(entry_id(&v->v[i]), id, len))
			return &v->v[i];
	return NULL;
}

/* 1: every dependency has run; *bad: the first one that did not pass */
static int deps_ready(struct nf_verify *v, struct entry *e, struct entry **bad)
{
	const char *d = e->def->deps;

	*bad = NULL;
	while (d && *d) {
		size_t len = strcspn(d, " ");
		struct entry *x = len ? find_entry(v, d, len) : NULL;

		if (x) {
			if (!x->done)
				return 0;
			/* a dependency skipped for its own reason (static
			 * mode, nothing to compare) does not block */
			if ((x->res.verdict == NF_V_FAIL || x->res.verdict == NF_V_HUNG ||
			     (x->res.verdict == NF_V_SKIP && x->cause)) && !*bad)
				*bad = x;
		}
		d += len;
		d += strspn(d, " ");
	}
	return 1;
}

/* A failure that a failed check of its explained_by list accounts for is
 * that check's consequence (cause set), not a root cause of its own.
 * Twice: an explanation may itself be explained. */
static void explain(struct nf_verify *v)
{
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < v->n; i++) {
			struct entry *e = &v->v[i];
			const char *d = e->def->explained_by;

			if (e->res.verdict != NF_V_FAIL || e->cause)
				continue;
			while (d && *d && !e->cause) {
				size_t len = strcspn(d, " ");
				struct entry *x = len ? find_entry(v, d, len) : NULL;

				if (x && x != e && (x->res.verdict == NF_V_FAIL ||
						    x->res.verdict == NF_V_HUNG))
					e->cause = strdup(x->cause ? x->cause : entry_id(x));
				d += len;
				d += strspn(d, " ");
			}
		}
}

/* A machine that is not an image of the role (system.image failed):
 * that is the one root cause, every other failure its consequence */
static int not_an_image(struct nf_verify *v)
{
	struct entry *img = find_entry(v, "system.image", strlen("system.image"));

	if (!img || img->res.verdict != NF_V_FAIL)
		return 0;
	for (size_t i = 0; i < v->n; i++) {
		struct entry *e = &v->v[i];
		int v_ = e->res.verdict;

		if (e == img || !(v_ == NF_V_FAIL || v_ == NF_V_HUNG ||
				  (v_ == NF_V_SKIP && e->cause)))
			continue;
		free(e->cause);
		if (!(e->cause = strdup("system.image")))
			return -ENOMEM;
	}
	return 0;
}

/* one item of --only, its first n bytes: a facet or an id prefix */
static int only_item(const char *it, size_t n, const struct entry *e)
{
	return (strlen(e->facet) == n && !strncmp(e->facet, it, n)) ||
	       (!strncmp(entry_id(e), it, n) &&
		(entry_id(e)[n] == '\0' || entry_id(e)[n] == '.'));
}

/* --only: a comma-separated list of items; any one selects */
static int only_match(const char *only, const struct entry *e)
{
	if (!only || !*only)
		return 1;
	for (const char *p = only;; p++) {
		size_t n = strcspn(p, ",");

		if (n && only_item(p, n, e))
			return 1;
		p += n;
		if (!*p)
			return 0;
	}
}

/* The first item of --only that selects no check of v (or is empty),
 * its length in *len; NULL when each selects one */
static const char *only_unmatched(const char *only, const struct nf_verify *v,
				  size_t *len)
{
	for (const char *p = only;; p++) {
		size_t n = strcspn(p, ","), i;

		for (i = 0; n && i < v->n && !only_item(p, n, &v->v[i]); i++)
			;
		if (!n || i == v->n) {
			*len = n;
			return p;
		}
		p += n;
		if (!*p)
			return NULL;
	}
}

/* The checks --only selects, and what they need: a check's dependencies
 * run with it (gpu.ecc reads the GPUs gpu.driver found), transitively */
static void select_checks(struct nf_verify *v, const char *only)
{
	bool more = true;

	for (size_t i = 0; i < v->n; i++)
		v->v[i].selected = only_match(only, &v->v[i]);
	while (more) {
		more = false;
		for (size_t i = 0; i < v->n; i++) {
			const char *d = v->v[i].def->deps;

			while (v->v[i].selected && d && *d) {
				size_t len = strcspn(d, " ");
				struct entry *x = len ? find_entry(v, d, len) : NULL;

				if (x && !x->selected)
					more = x->selected = true;
				d += len;
				d += strspn(d, " ");
			}
		}
	}
}

static int rank_of(const struct entry *e)
{
	switch (e->res.verdict) {
	case NF_V_FAIL: return e->cause ? 2 : 0;
	case NF_V_HUNG: return e->cause ? 2 : 1;
	case NF_V_SKIP: return e->cause ? 2 : 4;
	case NF_V_WARN: return 3;
	default: return 5;
	}
}

static int cmp_entry(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	if (x->rank != y->rank)
		return x->rank - y->rank;
	/* root causes: the deepest first (what the others stand on) */
	if (x->rank <= 1 && x->depth != y->depth)
		return x->depth > y->depth ? -1 : 1;
	return (int)x->order - (int)y->order;
}

int nf_hw_fixture_load(struct nf_ctx *ctx, const char *path, json_t **out)
{
	json_error_t err;
	char *buf;
	size_t len;
	int r = nf_read_file(ctx, path, FIXTURE_MAX, &buf, &len);

	if (r)
		return r;
	*out = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &err);
	free(buf);
	if (!*out)
		return nf_fail(ctx, NF_E_PARSE, "%s:%d:%d: %s", path, err.line,
			       err.column, err.text);
	if (!json_is_object(*out)) {
		json_decref(*out);
		*out = NULL;
		return nf_fail(ctx, NF_E_PARSE, "%s: the top level must be a "
			       "JSON object", path);
	}
	return 0;
}

/* The node's name: nodeforge.node= when the boot server named it (a
 * network-booted node knows no other name before its hostname is set),
 * else the kernel's host name */
static char *read_host(const char *sysroot)
{
	char p[4096], buf[256] = "", *node = NULL;
	FILE *f;

	if (!nf_cmdline_get_at(NULL, sysroot, "nodeforge.node", &node) && *node &&
	    strlen(node) < sizeof(buf) && !strpbrk(node, "/\\?#%\"'"))
		return node;
	free(node);
	if ((f = fopen(nf_sysroot_path_buf(sysroot, p, sizeof(p),
					   "/proc/sys/kernel/hostname"), "re"))) {
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = '\0';
		fclose(f);
	}
	buf[strcspn(buf, "\n")] = '\0';
	if (!*buf && gethostname(buf, sizeof(buf) - 1) < 0)
		snprintf(buf, sizeof(buf), "unknown");
	return strdup(buf);
}

char *nf_node_name(const char *sysroot)
{
	char *h = read_host(sysroot);

	if (h)
		h[strcspn(h, ".")] = '\0';
	return h;
}

char *nf_v_node(const struct nf_vcheck *c)
{
	return nf_node_name(c->run->sysroot);
}

int nf_vrun_new(struct nf_ctx *ctx, const json_t *prof,
		   const struct nf_verify_opts *o, struct nf_vrun **out)
{
	struct nf_vrun *run;
	int r;

	if (!(run = calloc(1, sizeof(*run))))
		return -ENOMEM;
	atomic_init(&run->refs, 1);
	run->rootfd = -1;
	pthread_mutex_init(&run->lock, NULL);
	run->cache = json_object();
	run->profile = json_incref((json_t *)prof);
	run->sysroot = strdup(o->sysroot && strcmp(o->sysroot, "/") ? o->sysroot : "");
	if (o->root && strcmp(o->root, "/"))
		run->root = strdup(o->root);
	else if (!o->root && *run->sysroot)
		run->root = strdup(run->sysroot);
	else
		run->root = strdup("");
	run->static_mode = o->root && strcmp(o->root, "/") && !(o->sysroot && *o->sysroot);
	if (!run->sysroot || !run->root) {
		nf_vrun_unref(run);
		return -ENOMEM;
	}
	if (*run->root) {
		run->rootfd = open(run->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (run->rootfd < 0) {
			r = nf_fail(ctx, -errno, "cannot open root '%s': %s",
				    run->root, strerror(errno));
			nf_vrun_unref(run);
			return r;
		}
	}
	if (o->fixture && (r = nf_hw_fixture_load(ctx, o->fixture, &run->fixture))) {
		nf_vrun_unref(run);
		return r;
	}
	*out = run;
	return 0;
}

/* One entry of DEF; KEY names a family's member */
static int add_entry(struct nf_verify *v, size_t *cap, const struct nf_check_def *def,
		     const char *key, const char *facet, const json_t *sec)
{
	struct entry *e;

	if (v->n == *cap) {
		struct entry *nv;
		size_t ncap = *cap ? *cap * 2 : 64;

		if (!(nv = realloc(v->v, ncap * sizeof(*nv))))
			return -ENOMEM;
		v->v = nv;
		*cap = ncap;
	}
	e = &v->v[v->n];
	memset(e, 0, sizeof(*e));
	if (key) {
		const char *dot = strrchr(def->id, '.');

		if (strlen(key) + (size_t)(dot - def->id) + 2 > NF_CHECK_ID_MAX)
			return NF_E_LIMIT;
		if (!(e->id = nf_asprintf("%.*s%s", (int)(dot - def->id + 1), def->id,
					  key)))
			return -ENOMEM;
	}
	e->def = def;
	e->facet = facet;
	e->section = sec;
	e->order = (unsigned)v->n++;
	return 0;
}

int nf_verify_run(struct nf_ctx *ctx, const struct nf_profile *p,
		  const struct nf_verify_opts *o, struct nf_verify **out)
{
	const json_t *prof = nf_profile_json(p);
	const struct nf_facet_table *ft;
	struct nf_verify *v;
	struct nf_vrun *run;
	struct timespec t0, end, t1;
	unsigned budget = o->budget_ms ? o->budget_ms : DEFAULT_BUDGET_MS;
	size_t cap = 0, left;
	int r;

	if ((r = nf_ctx_facets(ctx, &ft)))
		return r;
	now(&t0);
	end = t0;
	add_ms(&end, budget);
	if ((r = nf_vrun_new(ctx, prof, o, &run)))
		return r;
	if (!(v = calloc(1, sizeof(*v)))) {
		nf_vrun_unref(run);
		return -ENOMEM;
	}
	v->role = nf_strdup(nf_profile_name(p));
	v->host = read_host(run->sysroot);

	for (size_t f = 0; f < ft->n; f++) {
		const struct nf_facet *fc = ft->v[f];
		const json_t *sec = json_object_get(prof, fc->name);

		if (!fc->checks || !sec)
			continue;
		for (size_t i = 0; i < fc->checks->n; i++) {
			const struct nf_check_def *def = &fc->checks->v[i];
			const char *key = NULL;
			void *it = NULL;

			if (def->flags & NF_CHECK_FAMILY) {
				if (!(it = json_object_iter((json_t *)sec)))
					continue;
				key = json_object_iter_key(it);
			}
			do {
				if ((r = add_entry(v, &cap, def, key, fc->name, sec))) {
					nf_verify_free(v);
					nf_vrun_unref(run);
					return r;
				}
				it = key ? json_object_iter_next((json_t *)sec, it) : NULL;
				key = it ? json_object_iter_key(it) : NULL;
			} while (key);
		}
	}
	if (o->only && *o->only) {
		size_t n;
		const char *bad = only_unmatched(o->only, v, &n);

		if (bad) {
			r = n ? nf_fail(ctx, NF_E_USAGE, "--only '%.*s' names no facet "
					"and no check of role '%s'", (int)n, bad,
					v->role ? v->role : "?")
			      : nf_fail(ctx, NF_E_USAGE, "--only '%s': an empty item "
					"(facets and id prefixes, separated by commas)",
					o->only);
			nf_verify_free(v);
			nf_vrun_unref(run);
			return r;
		}
	}

	select_checks(v, o->only);
	for (left = v->n; left > 0;) {
		struct entry *e = NULL, *bad = NULL;

		for (size_t i = 0; i < v->n && !e; i++)
			if (!v->v[i].done && deps_ready(v, &v->v[i], &bad))
				e = &v->v[i];
		if (!e) {
			/* a dependency cycle: report what is left */
			for (size_t i = 0; i < v->n; i++)
				if (!v->v[i].done) {
					v->v[i].done = true;
					v->v[i].res.verdict = NF_V_FAIL;
					v->v[i].reason = strdup("dependency cycle");
				}
			break;
		}
		if (!e->selected) {
			e->res.verdict = NF_V_SKIP;
			e->reason = nf_asprintf("not selected");
		} else if (bad) {
			const char *root = bad->cause ? bad->cause : entry_id(bad);

			e->res.verdict = NF_V_SKIP;
			e->cause = strdup(root);
			e->reason = nf_asprintf("because %s %s", root,
						!bad->cause && bad->res.verdict == NF_V_HUNG
						? "hung" : "failed");
		} else if (run->static_mode && !(e->def->flags & NF_CHECK_STATIC)) {
			e->res.verdict = NF_V_SKIP;
			e->reason = strdup("static mode");
		} else if (ms_until(&end) <= 0) {
			e->res.verdict = NF_V_SKIP;
			e->reason = nf_asprintf("run budget of %u ms spent", budget);
		} else {
			run_one(run, e, &end);
		}
		e->done = true;
		left--;
	}
	/* an abandoned probe does not outlive the run (nor the verifier) */
	nf_vrun_end(run);
	nf_vrun_unref(run);
	explain(v);
	if ((r = not_an_image(v))) {
		nf_verify_free(v);
		return r;
	}

	for (size_t i = 0; i < v->n; i++) {
		struct entry *e = &v->v[i];

		e->rank = rank_of(e);
		/* the machine's own causes (identity, init) under the
		 * rest; the others in facet order, the kernel first */
		e->depth = e->rank <= 1 && (e->def->flags & NF_CHECK_BASE);
		e->res.id = entry_id(e);
		e->res.facet = e->facet;
		e->res.summary = e->def->summary;
	}
	qsort(v->v, v->n, sizeof(*v->v), cmp_entry);
	for (size_t i = 0; i < v->n; i++) {
		struct entry *e = &v->v[i];

		e->res.expected = e->expected;
		e->res.seen = e->seen;
		e->res.remedy = e->remedy;
		e->res.reason = e->reason;
		e->res.cause = e->cause;
	}
	now(&t1);
	v->elapsed_ms = (unsigned)((t1.tv_sec - t0.tv_sec) * 1000 +
				   (t1.tv_nsec - t0.tv_nsec) / 1000000);
	*out = v;
	return 0;
}

void nf_verify_free(struct nf_verify *v)
{
	if (!v)
		return;
	for (size_t i = 0; i < v->n; i++) {
		free(v->v[i].expected);
		free(v->v[i].seen);
		free(v->v[i].remedy);
		free(v->v[i].reason);
		free(v->v[i].cause);
		free(v->v[i].id);
	}
	free(v->v);
	free(v->role);
	free(v->host);
	free(v);
}

size_t nf_verify_count(const struct nf_verify *v)
{
	return v->n;
}

const struct nf_check_result *nf_verify_result(const struct nf_verify *v,
						size_t i)
{
	return i < v->n ? &v->v[i].res : NULL;
}

size_t nf_verify_tally(const struct nf_verify *v, int verdict)
{
	size_t n = 0;

	for (size_t i = 0; i < v->n; i++)
		n += v->v[i].res.verdict == verdict;
	return n;
}

int nf_verify_passed(const struct nf_verify *v)
{
	return !nf_verify_tally(v, NF_V_FAIL) && !nf_verify_tally(v, NF_V_HUNG);
}

const char *nf_verdict_name(int verdict)
{
	static const char *const names[] = { "pass", "fail", "skip", "hung", "warn" };

	return verdict >= 0 && verdict <= NF_V_WARN ? names[verdict] : "?";
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int nf_v_list(struct nf_vcheck *c, int where, const char *dir, char ***names,
	      size_t max)
{
	int fd = open_where(c, where, dir, O_RDONLY | O_DIRECTORY);
	struct dirent *de;
	char **v = NULL;
	size_t n = 0;
	DIR *d;

	*names = NULL;
	if (fd < 0)
		return fd;
	if (!(d = fdopendir(fd))) {
		close(fd);
		return -errno;
	}
	while ((de = readdir(d)) && n < max) {
		char **nv;

		if (de->d_name[0] == '.')
			continue;
		if (!(nv = realloc(v, (n + 1) * sizeof(*v)))) {
			nf_strv_free(v, n);
			closedir(d);
			return -ENOMEM;
		}
		v = nv;
		if (!(v[n] = strdup(de->d_name))) {
			nf_strv_free(v, n);
			closedir(d);
			return -ENOMEM;
		}
		n++;
	}
	closedir(d);
	if (n)
		qsort(v, n, sizeof(*v), cmp_name);
	*names = v;
	return (int)n;
}
