/* SPDX-License-Identifier: MIT */
/*
 * The verifier's engine: runs every facet's checks in dependency order,
 * each within its time budget, and keeps the results with root causes
 * first.  Checks that may block run in a worker thread; when one passes its
 * deadline it is reported `hung` and abandoned (its thread keeps the run's
 * shared state alive), so the run always ends within its total budget.
 */
#include "internal.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef __has_include
#if __has_include(<linux/openat2.h>)
#include <linux/openat2.h>
#define NF_HAVE_OPENAT2 1
#endif
#endif

extern char **environ;

#define DEFAULT_BUDGET_MS 10000u
#define CHECK_BUDGET_MS 2000u
#define EXEC_OUT_MAX (64u * 1024)
#define FIXTURE_MAX (1u << 20)

/* State shared by the run and its worker threads; reference counted so an
 * abandoned probe never touches freed memory */
struct nf_vrun {
	atomic_int refs;
	char *root;          /* "" for "/" */
	char *sysroot;       /* "" for the real /proc, /sys */
	int rootfd;
	bool static_mode;
	json_t *profile;     /* own reference */
	json_t *fixture;     /* NULL: real ops */
	pthread_mutex_t lock;
	json_t *cache;
};

struct nf_vcheck {
	struct nf_vrun *run;
	const struct nf_check_def *def;
	struct timespec deadline;
	char expected[512];
	char seen[1024];
	char remedy[512];
	char reason[256];
	/* library calls bound to the run's sysroot (nf_v_ctx) */
	struct nf_ctx *ctx;
	/* worker thread hand-off */
	const json_t *section;
	int verdict;
	bool done;
	atomic_int refs;
	pthread_mutex_t mu;
	pthread_cond_t cv;
};

struct entry {
	const struct nf_check_def *def;
	const char *facet;
	const json_t *section;
	bool done;
	struct nf_check_result res;
	char *expected, *seen, *remedy, *reason, *cause;
	unsigned order;
	int rank;
};

struct nf_verify {
	struct entry *v;
	size_t n;
	char *role;
	char *host;
	unsigned elapsed_ms;
};

/* ------------------------------------------------------------ helpers */

static void run_unref(struct nf_vrun *r)
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

static void check_unref(struct nf_vcheck *c)
{
	if (atomic_fetch_sub(&c->refs, 1) != 1)
		return;
	run_unref(c->run);
	nf_ctx_free(c->ctx);
	pthread_mutex_destroy(&c->mu);
	pthread_cond_destroy(&c->cv);
	free(c);
}

static void now(struct timespec *t)
{
	clock_gettime(CLOCK_MONOTONIC, t);
}

static long long ms_until(const struct timespec *t)
{
	struct timespec n;

	now(&n);
	return (t->tv_sec - n.tv_sec) * 1000LL + (t->tv_nsec - n.tv_nsec) / 1000000;
}

static void add_ms(struct timespec *t, long long ms)
{
	t->tv_sec += ms / 1000;
	t->tv_nsec += (ms % 1000) * 1000000;
	if (t->tv_nsec >= 1000000000) {
		t->tv_sec++;
		t->tv_nsec -= 1000000000;
	}
}

static int ts_before(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec < b->tv_sec ||
	       (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

#define VSET(buf, fmt)                                        \
	do {                                                  \
		va_list ap_;                                  \
		va_start(ap_, fmt);                           \
		vsnprintf(buf, sizeof(buf), fmt, ap_);        \
		va_end(ap_);                                  \
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

int nf_v_netboot(struct nf_vcheck *c)
{
	char *buf = NULL;
	int r = nf_v_read(c, NF_VSYS, "/proc/cmdline", 64 * 1024, &buf, NULL);

	r = !r && nf_cmdline_find(buf, "nodeforge.server", NULL, 0) == 0;
	free(buf);
	return r;
}

struct nf_ctx *nf_v_ctx(struct nf_vcheck *c)
{
	if (c->ctx)
		return c->ctx;
	if (nf_ctx_new(&c->ctx))
		return NULL;
	if (nf_ctx_set_sysroot(c->ctx, c->run->sysroot)) {
		nf_ctx_free(c->ctx);
		c->ctx = NULL;
	}
	return c->ctx;
}

const char *nf_v_id(const struct nf_vcheck *c)
{
	return c->def->id;
}

bool nf_v_static(const struct nf_vcheck *c)
{
	return c->run->static_mode;
}

const char *nf_v_path(struct nf_vcheck *c, int where, const char *path,
		      char *buf, size_t sz)
{
	const char *base = where == NF_VSYS ? c->run->sysroot : c->run->root;

	snprintf(buf, sz, "%s%s", base, path);
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
#ifdef NF_HAVE_OPENAT2
	{
		struct open_how how = { .flags = (unsigned)(flags | O_CLOEXEC),
					.resolve = RESOLVE_IN_ROOT |
						   RESOLVE_NO_MAGICLINKS };
		long fd = syscall(SYS_openat2, c->run->rootfd, rel, &how,
				  sizeof(how));

		if (fd >= 0)
			return (int)fd;
		if (errno != ENOSYS)
			return -errno;
	}
#endif
	{
		int fd = openat(c->run->rootfd, rel, flags | O_CLOEXEC | O_NOFOLLOW);

		return fd < 0 ? -errno : fd;
	}
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
	size_t n = 0, cap = 1024;
	char *b;
	int fd = open_where(c, where, path, O_RDONLY | O_NONBLOCK);

	if (fd < 0)
		return fd;
	if (!(b = malloc(cap))) {
		close(fd);
		return -ENOMEM;
	}
	for (;;) {
		ssize_t r;

		if (n + 1 >= cap) {
			char *nb;

			if (cap > max) {
				free(b);
				close(fd);
				return NF_E_LIMIT;
			}
			cap *= 2;
			if (!(nb = realloc(b, cap))) {
				free(b);
				close(fd);
				return -ENOMEM;
			}
			b = nb;
		}
		r = read(fd, b + n, cap - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = -errno;

			free(b);
			close(fd);
			return e;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	b[n] = '\0';
	*out = b;
	if (len)
		*len = n;
	return 0;
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

/* ---------------------------------------------------------------- exec */

int nf_spawn_capture(const char *const *argv, const char *in,
		     const struct timespec *deadline, char **out, int *status)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	int ip[2] = { -1, -1 }, op[2] = { -1, -1 };
	size_t inlen = in ? strlen(in) : 0, inoff = 0, n = 0;
	char *buf = NULL;
	pid_t pid;
	int r, st = 0;

	if (pipe2(op, O_CLOEXEC) < 0)
		return -errno;
	if (in && pipe2(ip, O_CLOEXEC) < 0) {
		r = -errno;
		close(op[0]);
		close(op[1]);
		return r;
	}
	posix_spawn_file_actions_init(&fa);
	if (in)
		posix_spawn_file_actions_adddup2(&fa, ip[0], 0);
	else
		posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, op[1], 1);
	posix_spawn_file_actions_adddup2(&fa, op[1], 2);
	posix_spawnattr_init(&at);
	/* its own process group, so a timeout kills what it started too */
	posix_spawnattr_setpgroup(&at, 0);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
	r = posix_spawnp(&pid, argv[0], &fa, &at, (char *const *)argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	close(op[1]);
	if (in)
		close(ip[0]);
	if (r) {
		close(op[0]);
		if (in)
			close(ip[1]);
		return -r;
	}
	if (in)
		fcntl(ip[1], F_SETFL, O_NONBLOCK);
	if (!(buf = malloc(EXEC_OUT_MAX + 1))) {
		r = -ENOMEM;
		goto kill;
	}
	for (;;) {
		struct pollfd pf[2] = { { op[0], POLLIN, 0 }, { in ? ip[1] : -1, POLLOUT, 0 } };
		long long left = ms_until(deadline);
		ssize_t k;

		if (left <= 0) {
			r = NF_E_TIMEOUT;
			goto kill;
		}
		if (in && ip[1] >= 0 && inoff >= inlen) {
			close(ip[1]);
			ip[1] = -1;
			pf[1].fd = -1;
		}
		if (poll(pf, 2, (int)left) < 0 && errno != EINTR) {
			r = -errno;
			goto kill;
		}
		if (pf[1].fd >= 0 && (pf[1].revents & (POLLOUT | POLLERR | POLLHUP))) {
			k = write(ip[1], in + inoff, inlen - inoff);
			if (k > 0)
				inoff += (size_t)k;
			else if (k < 0 && errno != EAGAIN)
				inoff = inlen;
		}
		if (pf[0].revents & (POLLIN | POLLHUP | POLLERR)) {
			char tmp[4096];

			k = read(op[0], tmp, sizeof(tmp));
			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0)
				break;
			if (n < EXEC_OUT_MAX) {
				size_t take = (size_t)k;

				if (take > EXEC_OUT_MAX - n)
					take = EXEC_OUT_MAX - n;
				memcpy(buf + n, tmp, take);
				n += take;
			}
		}
	}
	/* output closed: wait for the exit within the deadline */
	for (;;) {
		pid_t w = waitpid(pid, &st, WNOHANG);

		if (w == pid)
			break;
		if (w < 0 && errno != EINTR) {
			r = -errno;
			goto kill;
		}
		if (ms_until(deadline) <= 0) {
			r = NF_E_TIMEOUT;
			goto kill;
		}
		usleep(1000);
	}
	close(op[0]);
	if (in && ip[1] >= 0)
		close(ip[1]);
	buf[n] = '\0';
	*status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	if (out)
		*out = buf;
	else
		free(buf);
	return 0;
kill:
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	close(op[0]);
	if (in && ip[1] >= 0)
		close(ip[1]);
	free(buf);
	return r;
}

/* Fixture answer for a command: the longest "argv joined by spaces" prefix
 * listed in fixture.commands, then the program's base name */
static const json_t *fixture_command(const json_t *fx, const char *const *argv)
{
	const json_t *cmds = json_object_get(fx, "commands");
	const json_t *best = NULL;
	char key[1024] = "";
	size_t len = 0;
	const char *b = strrchr(argv[0], '/');

	for (size_t i = 0; argv[i]; i++) {
		int k = snprintf(key + len, sizeof(key) - len, "%s%s", i ? " " : "",
				 argv[i]);
		const json_t *v;

		if (k < 0 || (size_t)k >= sizeof(key) - len)
			break;
		len += (size_t)k;
		if ((v = json_object_get(cmds, key)))
			best = v;
	}
	if (!best)
		best = json_object_get(cmds, b ? b + 1 : argv[0]);
	return best;
}

static void fixture_log(const json_t *fx, const char *const *argv)
{
	const char *log = json_string_value(json_object_get(fx, "exec_log"));
	FILE *f;

	if (!log || !(f = fopen(log, "ae")))
		return;
	for (size_t i = 0; argv[i]; i++)
		fprintf(f, "%s%s", i ? " " : "", argv[i]);
	fputc('\n', f);
	fclose(f);
}

/* Programs the fixture lets through to the real system ("passthrough"):
 * a test with recorded hardware and a real scontrol */
static int fixture_passthrough(const json_t *fx, const char *prog)
{
	const char *b = strrchr(prog, '/');
	size_t i;
	json_t *p;

	json_array_foreach(json_object_get(fx, "passthrough"), i, p)
		if (json_is_string(p) && !strcmp(json_string_value(p), b ? b + 1 : prog))
			return 1;
	return 0;
}

int nf_v_exec(struct nf_vcheck *c, const char *const *argv, const char *in,
	      char **out, int *status)
{
	const json_t *fx = c->run->fixture;

	if (fx && !fixture_passthrough(fx, argv[0])) {
		const json_t *a;

		fixture_log(fx, argv);
		a = fixture_command(fx, argv);
		if (!a)
			return -ENOENT;
		if (json_is_true(json_object_get(a, "hang"))) {
			/* a real process that never answers: exercises the
			 * deadline and the kill */
			static const char *const sl[] = { "sleep", "3600", NULL };

			return nf_spawn_capture(sl, NULL, &c->deadline, out, status);
		}
		*status = (int)json_integer_value(json_object_get(a, "rc"));
		if (out) {
			const char *s = json_string_value(json_object_get(a, "out"));

			*out = strdup(s ? s : "");
			if (!*out)
				return -ENOMEM;
		}
		return 0;
	}
	return nf_spawn_capture(argv, in, &c->deadline, out, status);
}

int nf_v_service_active(struct nf_vcheck *c, const char *unit, char *state,
			size_t statesz)
{
	const char *argv[] = { "systemctl", "is-active", unit, NULL };
	char *out = NULL;
	int st = 0, r = nf_v_exec(c, argv, NULL, &out, &st);

	if (r)
		return r;
	out[strcspn(out, "\n")] = '\0';
	snprintf(state, statesz, "%s", *out ? out : "unknown");
	free(out);
	return !strcmp(state, "active");
}

/* ----------------------------------------------------------------- ops */

#include <sys/statfs.h>
#include <sys/timex.h>
#include <dlfcn.h>

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

int nf_v_cgroup2(struct nf_vcheck *c, const char *path)
{
	char buf[4096];
	struct statfs sf;

	if (c->run->fixture || *c->run->sysroot) {
		/* a recorded tree is no cgroup2 mount: the kernel's marker
		 * file stands for it */
		char p[4096];
		struct stat st;

		snprintf(p, sizeof(p), "%s/cgroup.controllers", path);
		return nf_v_stat(c, NF_VSYS, p, &st) == 0;
	}
	if (statfs(nf_v_path(c, NF_VSYS, path, buf, sizeof(buf)), &sf) < 0)
		return -errno;
	return sf.f_type == CGROUP2_SUPER_MAGIC;
}

int nf_v_adjtimex(struct nf_vcheck *c, struct nf_timex *t)
{
	const json_t *fx = c->run->fixture, *a;
	struct timex tx = { 0 };
	int st;

	if (fx) {
		if (!(a = json_object_get(fx, "adjtimex")))
			return NF_E_NOHW;
		t->synced = json_is_true(json_object_get(a, "synced"));
		t->offset_ms = json_number_value(json_object_get(a, "offset_ms"));
		t->maxerror_ms = json_number_value(json_object_get(a, "maxerror_ms"));
		return 0;
	}
	st = adjtimex(&tx);
	if (st < 0)
		return -errno;
	t->synced = st != TIME_ERROR && !(tx.status & STA_UNSYNC);
	t->offset_ms = (tx.status & STA_NANO) ? tx.offset / 1e6 : tx.offset / 1e3;
	t->maxerror_ms = tx.maxerror / 1e3;
	return 0;
}

/* NVML, loaded at run time: no build dependency on the driver */
typedef int nvmlReturn_t;
typedef void *nvmlDevice_t;
struct nf_nvml_fabric {
	unsigned char cluster_uuid[16];
	nvmlReturn_t status;
	unsigned int clique_id;
	unsigned char state;
};

/* nvmlPciInfo_t */
struct nf_nvml_pci {
	char bus_id_legacy[16];
	unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
	char bus_id[32];
};

#define NF_NVML_MAX_LINKS 18    /* NVML_NVLINK_MAX_LINKS */

/* The PCI bus id of every active NVLink's far end, one entry per link:
 * a peer GPU's, or an NVSwitch's (tells gres.conf's Links=) */
static json_t *nvml_nvlinks(nvmlDevice_t d,
			    nvmlReturn_t (*state)(nvmlDevice_t, unsigned, int *),
			    nvmlReturn_t (*remote)(nvmlDevice_t, unsigned,
						   struct nf_nvml_pci *))
{
	json_t *v = json_array();

	for (unsigned l = 0; v && l < NF_NVML_MAX_LINKS; l++) {
		struct nf_nvml_pci pci = { 0 };
		char id[NF_PCI_ADDR_LEN];
		int active = 0;

		if (state(d, l, &active) != 0 || !active ||
		    remote(d, l, &pci) != 0)
			continue;
		pci.bus_id[sizeof(pci.bus_id) - 1] = '\0';
		if (nf_pci_addr_norm(pci.bus_id, id) == 0)
			json_array_append_new(v, json_string(id));
	}
	return v;
}

static int nvml_real(json_t **snap)
{
	nvmlReturn_t (*init)(void), (*shutdown)(void);
	nvmlReturn_t (*drv)(char *, unsigned);
	nvmlReturn_t (*count)(unsigned *);
	nvmlReturn_t (*handle)(unsigned, nvmlDevice_t *);
	nvmlReturn_t (*name)(nvmlDevice_t, char *, unsigned);
	nvmlReturn_t (*ecc)(nvmlDevice_t, int *, int *);
	nvmlReturn_t (*remap)(nvmlDevice_t, unsigned *, unsigned *, unsigned *, unsigned *);
	nvmlReturn_t (*persist)(nvmlDevice_t, int *);
	nvmlReturn_t (*fabric)(nvmlDevice_t, struct nf_nvml_fabric *);
	nvmlReturn_t (*pciinfo)(nvmlDevice_t, struct nf_nvml_pci *);
	nvmlReturn_t (*lstate)(nvmlDevice_t, unsigned, int *);
	nvmlReturn_t (*lremote)(nvmlDevice_t, unsigned, struct nf_nvml_pci *);
	void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	char ver[96] = "";
	unsigned n = 0;
	json_t *gpus;

	if (!h)
		return NF_E_NOHW;
	*(void **)&init = dlsym(h, "nvmlInit_v2");
	*(void **)&shutdown = dlsym(h, "nvmlShutdown");
	*(void **)&drv = dlsym(h, "nvmlSystemGetDriverVersion");
	*(void **)&count = dlsym(h, "nvmlDeviceGetCount_v2");
	*(void **)&handle = dlsym(h, "nvmlDeviceGetHandleByIndex_v2");
	*(void **)&name = dlsym(h, "nvmlDeviceGetName");
	*(void **)&ecc = dlsym(h, "nvmlDeviceGetEccMode");
	*(void **)&remap = dlsym(h, "nvmlDeviceGetRemappedRows");
	*(void **)&persist = dlsym(h, "nvmlDeviceGetPersistenceMode");
	*(void **)&fabric = dlsym(h, "nvmlDeviceGetGpuFabricInfo");
	*(void **)&pciinfo = dlsym(h, "nvmlDeviceGetPciInfo_v3");
	*(void **)&lstate = dlsym(h, "nvmlDeviceGetNvLinkState");
	*(void **)&lremote = dlsym(h, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
	if (!init || !shutdown || !drv || !count || !handle || !name) {
		dlclose(h);
		return NF_E_NOHW;
	}
	if (init() != 0) {
		dlclose(h);
		return NF_E_NOHW;
	}
	drv(ver, sizeof(ver));
	count(&n);
	gpus = json_array();
	for (unsigned i = 0; i < n && i < 64; i++) {
		nvmlDevice_t d;
		char nm[96] = "";
		json_t *g = json_object();
		int cur = 0, pend = 0, pm = 0;
		unsigned corr = 0, unc = 0, ispend = 0, fail = 0;
		struct nf_nvml_fabric fi = { 0 };

		json_array_append_new(gpus, g);
		if (handle(i, &d) != 0)
			continue;
		if (name(d, nm, sizeof(nm)) == 0)
			json_object_set_new(g, "name", json_string(nm));
		if (ecc && ecc(d, &cur, &pend) == 0) {
			json_object_set_new(g, "ecc_current", json_boolean(cur));
			json_object_set_new(g, "ecc_pending", json_boolean(pend));
		}
		if (remap && remap(d, &corr, &unc, &ispend, &fail) == 0) {
			json_object_set_new(g, "remap_pending", json_boolean(ispend));
			json_object_set_new(g, "remap_failure", json_boolean(fail));
		}
		if (persist && persist(d, &pm) == 0)
			json_object_set_new(g, "persistence", json_boolean(pm));
		if (fabric && fabric(d, &fi) == 0) {
			static const char *const st[] = { "not_supported", "not_started",
							  "in_progress", "completed" };

			json_object_set_new(g, "fabric_state",
					    json_string(fi.state < 4 ? st[fi.state] : "unknown"));
			json_object_set_new(g, "fabric_status", json_integer(fi.status));
		}
		if (pciinfo) {
			struct nf_nvml_pci pci = { 0 };
			char id[NF_PCI_ADDR_LEN];

			if (pciinfo(d, &pci) == 0) {
				pci.bus_id[sizeof(pci.bus_id) - 1] = '\0';
				if (nf_pci_addr_norm(pci.bus_id, id) == 0)
					json_object_set_new(g, "pci_bus_id",
							    json_string(id));
			}
		}
		if (lstate && lremote)
			json_object_set_new(g, "nvlink_remote",
					    nvml_nvlinks(d, lstate, lremote));
	}
	shutdown();
	dlclose(h);
	*snap = json_pack("{s:s, s:o}", "driver_version", ver, "gpus", gpus);
	return *snap ? 0 : -ENOMEM;
}

int nf_nvml_snapshot(const json_t *fixture, json_t **snap)
{
	const json_t *a;

	if (!fixture)
		return nvml_real(snap);
	a = json_object_get(fixture, "nvml");
	if (!a || json_is_null(a))
		return NF_E_NOHW;
	*snap = json_deep_copy(a);
	return *snap ? 0 : -ENOMEM;
}

int nf_v_nvml(struct nf_vcheck *c, json_t **snap)
{
	const json_t *fx = c->run->fixture;

	if (fx && json_is_true(json_object_get(json_object_get(fx, "nvml"),
					       "hang"))) {
		/* a driver call that never returns: only the deadline ends it */
		for (;;)
			pause();
	}
	return nf_nvml_snapshot(fx, snap);
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
		if (strlen(v->v[i].def->id) == len &&
		    !strncmp(v->v[i].def->id, id, len))
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
					e->cause = strdup(x->cause ? x->cause : x->def->id);
				d += len;
				d += strspn(d, " ");
			}
		}
}

static int only_match(const char *only, const struct entry *e)
{
	size_t n;

	if (!only || !*only)
		return 1;
	n = strlen(only);
	return !strcmp(e->facet, only) ||
	       (!strncmp(e->def->id, only, n) &&
		(e->def->id[n] == '\0' || e->def->id[n] == '.'));
}

static int rank_of(const struct entry *e)
{
	switch (e->res.verdict) {
	case NF_V_FAIL: return e->cause ? 2 : 0;
	case NF_V_HUNG: return 1;
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

/* KEY=VALUE of the kernel command line (nf_cmdline_find), 0 if present */
static int cmdline_value(const char *sysroot, const char *key, char *out, size_t sz)
{
	char p[4096], buf[8192];
	size_t n;
	FILE *f;

	snprintf(p, sizeof(p), "%s/proc/cmdline", sysroot ? sysroot : "");
	if (!(f = fopen(p, "re")))
		return -errno;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return nf_cmdline_find(buf, key, out, sz);
}

/* The node's name: nodeforge.node= when the boot server named it (a
 * network-booted node knows no other name before its hostname is set),
 * else the kernel's host name */
static char *read_host(const char *sysroot)
{
	char p[4096], buf[256] = "";
	FILE *f;

	if (!cmdline_value(sysroot, "nodeforge.node", buf, sizeof(buf)) && *buf &&
	    !strpbrk(buf, "/\\?#%\"'"))
		return strdup(buf);
	*buf = '\0';
	snprintf(p, sizeof(p), "%s/proc/sys/kernel/hostname", sysroot ? sysroot : "");
	if ((f = fopen(p, "re"))) {
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = '\0';
		fclose(f);
	}
	buf[strcspn(buf, "\n")] = '\0';
	if (!*buf && gethostname(buf, sizeof(buf) - 1) < 0)
		snprintf(buf, sizeof(buf), "unknown");
	return strdup(buf);
}

char *nf_v_node(const struct nf_vcheck *c)
{
	char *h = read_host(c->run->sysroot);

	if (h)
		h[strcspn(h, ".")] = '\0';
	return h;
}

static int run_new(struct nf_ctx *ctx, const json_t *prof,
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
		run_unref(run);
		return -ENOMEM;
	}
	if (*run->root) {
		run->rootfd = open(run->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (run->rootfd < 0) {
			r = nf_fail(ctx, -errno, "cannot open root '%s': %s",
				    run->root, strerror(errno));
			run_unref(run);
			return r;
		}
	}
	if (o->fixture && (r = nf_hw_fixture_load(ctx, o->fixture, &run->fixture))) {
		run_unref(run);
		return r;
	}
	*out = run;
	return 0;
}

int nf_verify_run(struct nf_ctx *ctx, const struct nf_profile *p,
		  const struct nf_verify_opts *o, struct nf_verify **out)
{
	const json_t *prof = nf_profile_json(p);
	struct nf_verify *v;
	struct nf_vrun *run;
	struct timespec t0, end, t1;
	unsigned budget = o->budget_ms ? o->budget_ms : DEFAULT_BUDGET_MS;
	size_t cap = 0, left;
	int r;

	now(&t0);
	end = t0;
	add_ms(&end, budget);
	if ((r = run_new(ctx, prof, o, &run)))
		return r;
	if (!(v = calloc(1, sizeof(*v)))) {
		run_unref(run);
		return -ENOMEM;
	}
	v->role = nf_strdup(nf_profile_name(p));
	v->host = read_host(run->sysroot);

	for (size_t f = 0; f < nf_nfacets; f++) {
		const struct nf_facet *fc = nf_facets[f];
		const json_t *sec = json_object_get(prof, fc->name);

		if (!fc->checks || !sec)
			continue;
		for (size_t i = 0; i < fc->checks->n; i++) {
			struct entry *e;

			if (v->n == cap) {
				struct entry *nv;

				cap = cap ? cap * 2 : 64;
				if (!(nv = realloc(v->v, cap * sizeof(*nv)))) {
					nf_verify_free(v);
					run_unref(run);
					return -ENOMEM;
				}
				v->v = nv;
			}
			e = &v->v[v->n];
			memset(e, 0, sizeof(*e));
			e->def = &fc->checks->v[i];
			e->facet = fc->name;
			e->section = sec;
			e->order = (unsigned)v->n++;
		}
	}
	if (o->only && *o->only) {
		size_t i;

		for (i = 0; i < v->n && !only_match(o->only, &v->v[i]); i++)
			;
		if (i == v->n) {
			r = nf_fail(ctx, NF_E_USAGE, "--only '%s' names no facet "
				    "and no check of role '%s'", o->only,
				    v->role ? v->role : "?");
			nf_verify_free(v);
			run_unref(run);
			return r;
		}
	}

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
		if (!only_match(o->only, e)) {
			e->res.verdict = NF_V_SKIP;
			e->reason = nf_asprintf("not selected");
		} else if (bad) {
			const char *root = bad->cause ? bad->cause : bad->def->id;

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
	run_unref(run);
	explain(v);

	for (size_t i = 0; i < v->n; i++) {
		struct entry *e = &v->v[i];

		e->rank = rank_of(e);
		e->res.id = e->def->id;
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

static void set_str(json_t *o, const char *k, const char *s)
{
	if (s)
		json_object_set_new(o, k, json_string(s));
}

json_t *nf_verify_json(const struct nf_verify *v)
{
	json_t *doc = json_object(), *checks = json_array(), *roots = json_array();

	for (size_t i = 0; i < v->n; i++) {
		const struct nf_check_result *r = &v->v[i].res;
		json_t *c = json_object();

		json_object_set_new(c, "id", json_string(r->id));
		json_object_set_new(c, "facet", json_string(r->facet));
		json_object_set_new(c, "verdict", json_string(nf_verdict_name(r->verdict)));
		set_str(c, "summary", r->summary);
		set_str(c, "expected", r->expected);
		set_str(c, "seen", r->seen);
		set_str(c, "remedy", r->remedy);
		set_str(c, "reason", r->reason);
		set_str(c, "cause", r->cause);
		json_object_set_new(c, "elapsed_us", json_integer(r->elapsed_us));
		json_array_append_new(checks, c);
		if ((r->verdict == NF_V_FAIL || r->verdict == NF_V_HUNG) && !r->cause) {
			json_t *rc = json_pack("{s:s}", "id", r->id);

			set_str(rc, "message", r->verdict == NF_V_HUNG ? r->reason : r->seen);
			json_array_append_new(roots, rc);
		}
	}
	/* the boot server's verdict format (nodeforge serve) */
	json_object_set_new(doc, "result",
			    json_string(nf_verify_passed(v) ? "pass" : "fail"));
	if (v->host) {
		json_object_set_new(doc, "node", json_stringn(v->host, strcspn(v->host, ".")));
		set_str(doc, "host", v->host);
	}
	set_str(doc, "role", v->role);
	json_object_set_new(doc, "version", json_string(NF_VERSION));
	json_object_set_new(doc, "elapsed_ms", json_integer(v->elapsed_ms));
	json_object_set_new(doc, "counts",
			    json_pack("{s:i, s:i, s:i, s:i, s:i}",
				      "pass", (int)nf_verify_tally(v, NF_V_PASS),
				      "fail", (int)nf_verify_tally(v, NF_V_FAIL),
				      "skip", (int)nf_verify_tally(v, NF_V_SKIP),
				      "hung", (int)nf_verify_tally(v, NF_V_HUNG),
				      "warn", (int)nf_verify_tally(v, NF_V_WARN)));
	json_object_set_new(doc, "root_causes", roots);
	json_object_set_new(doc, "checks", checks);
	return doc;
}

int nf_verify_write_junit(struct nf_ctx *ctx, const struct nf_verify *v,
			  const char *path)
{
	struct nf_junit_case *cs = calloc(v->n ? v->n : 1, sizeof(*cs));
	char **texts = calloc(v->n ? v->n : 1, sizeof(*texts));
	int r = 0;

	if (!cs || !texts) {
		free(cs);
		free(texts);
		return -ENOMEM;
	}
	for (size_t i = 0; i < v->n && !r; i++) {
		const struct nf_check_result *c = &v->v[i].res;

		cs[i] = (struct nf_junit_case){ .classname = c->facet, .name = c->id,
						.verdict = c->verdict,
						.secs = c->elapsed_us / 1e6 };
		if (c->verdict == NF_V_WARN)
			texts[i] = nf_asprintf("warning: %s\nremedy: %s", c->seen ? c->seen : "",
					       c->remedy ? c->remedy : "");
		else if (c->verdict == NF_V_SKIP)
			cs[i].message = c->reason;
		else if (c->verdict != NF_V_PASS) {
			cs[i].message = c->verdict == NF_V_HUNG ? c->reason : c->seen;
			texts[i] = nf_asprintf("expected: %s\nseen: %s\nremedy: %s",
					       c->expected ? c->expected : "",
					       c->seen ? c->seen : "",
					       c->remedy ? c->remedy : "");
		}
		if ((c->verdict == NF_V_WARN || c->verdict == NF_V_FAIL ||
		     c->verdict == NF_V_HUNG) && !texts[i])
			r = -ENOMEM;
		cs[i].text = texts[i];
	}
	if (!r)
		r = nf_junit_write(ctx, path, "nodeforge-verify", v->host ? v->host : "",
				   cs, v->n, v->elapsed_ms / 1000.0);
	for (size_t i = 0; i < v->n; i++)
		free(texts[i]);
	free(texts);
	free(cs);
	return r;
}

int nf_verify_server_url(struct nf_ctx *ctx, const char *sysroot, char **url)
{
	char buf[4096];
	int r = cmdline_value(sysroot, "nodeforge.server", buf, sizeof(buf));

	if (r == -ENOENT || (!r && !*buf))
		return nf_fail(ctx, NF_E_NOTFOUND,
			       "no nodeforge.server= on the kernel command line");
	if (r)
		return nf_fail(ctx, r, "cannot read '%s/proc/cmdline': %s",
			       sysroot ? sysroot : "", strerror(-r));
	if (strncmp(buf, "http://", 7) && strncmp(buf, "https://", 8))
		return nf_fail(ctx, NF_E_INVALID,
			       "nodeforge.server '%s' is not an http(s) URL", buf);
	return (*url = strdup(buf)) ? 0 : -ENOMEM;
}

static int health_exec(struct nf_ctx *ctx, struct nf_vcheck *c,
		       const char *const *argv, char **out)
{
	int st = 0, r = nf_v_exec(c, argv, NULL, out, &st);

	if (r == NF_E_TIMEOUT)
		return nf_fail(ctx, r, "'%s %s' did not answer in time", argv[0], argv[1]);
	if (r)
		return nf_fail(ctx, r, "cannot run '%s': %s", argv[0],
			       r < 0 ? strerror(-r) : nf_strerror(r));
	if (st)
		return nf_fail(ctx, NF_E_EXTERNAL, "'%s %s' exited with %d", argv[0],
			       argv[1], st);
	return 0;
}

int nf_verify_health(struct nf_ctx *ctx, const struct nf_verify *v,
		     const struct nf_verify_opts *o, const char **action)
{
	struct nf_vcheck c = { 0 };
	char node[256], reason[512], arg_node[300];
	char *out = NULL;
	int r;

	*action = "none";
	snprintf(node, sizeof(node), "%s", v->host ? v->host : "");
	node[strcspn(node, ".")] = '\0';
	if (!*node || strpbrk(node, " \t="))
		return nf_fail(ctx, NF_E_INVALID, "bad host name '%s'", node);
	if ((r = run_new(ctx, NULL, o, &c.run)))
		return r;
	now(&c.deadline);
	add_ms(&c.deadline, 5000);
	snprintf(arg_node, sizeof(arg_node), "nodename=%s", node);
	if (!nf_verify_passed(v)) {
		const struct nf_check_result *root = &v->v[0].res;
		const char *argv[] = { "scontrol", "update", arg_node, "state=drain",
				       reason, NULL };

		snprintf(reason, sizeof(reason), "reason=nodeforge: %s%s%.120s", root->id,
			 root->seen ? ": " : "", root->seen ? root->seen : "");
		r = health_exec(ctx, &c, argv, NULL);
		if (!r)
			*action = "drain";
	} else {
		const char *show[] = { "scontrol", "show", "node", node, "-o", NULL };
		const char *argv[] = { "scontrol", "update", arg_node, "state=resume", NULL };
		const char *rs, *st;

		r = health_exec(ctx, &c, show, &out);
		if (!r) {
			rs = strstr(out, " Reason=");
			st = strstr(out, " State=");
			/* resume only what this tool drained itself */
			if (rs && !strncmp(rs + 8, "nodeforge:", 10) && st &&
			    strstr(st, "DRAIN") && strstr(st, "DRAIN") < st + 64) {
				r = health_exec(ctx, &c, argv, NULL);
				if (!r)
					*action = "resume";
			}
		}
		free(out);
	}
	run_unref(c.run);
	return r;
}

int nf_verify_publish(struct nf_ctx *ctx, const struct nf_verify *v,
		      const struct nf_verify_opts *o, const char *verdict_path)
{
	/* the node's files: --root, else the sysroot a fixture run reads them
	 * from (never the real /run of the machine running the fixture) */
	const char *root = o->root && strcmp(o->root, "/") ? o->root
			   : o->sysroot && *o->sysroot ? o->sysroot : "";
	char path[4096], dir[4096];
	json_t *doc = nf_verify_json(v);
	char *s = json_dumps(doc, JSON_INDENT(2) | JSON_SORT_KEYS), *url = NULL;
	int r;

	if (!s) {
		json_decref(doc);
		return -ENOMEM;
	}
	if (verdict_path) {
		snprintf(path, sizeof(path), "%s", verdict_path);
	} else {
		snprintf(dir, sizeof(dir), "%s/run", root);
		mkdir(dir, 0755);
		snprintf(dir, sizeof(dir), "%s/run/nodeforge", root);
		mkdir(dir, 0755);
		snprintf(path, sizeof(path), "%s/verdict.json", dir);
	}
	r = nf_write_atomic(ctx, path, s, strlen(s), 0644);
	free(s);
	if (r) {
		json_decref(doc);
		return r;
	}
	if (!verdict_path) {
		const struct nf_check_result *c = v->n ? &v->v[0].res : NULL;
		char *motd;

		snprintf(dir, sizeof(dir), "%s/run/motd.d", root);
		mkdir(dir, 0755);
		snprintf(path, sizeof(path), "%s/nodeforge", dir);
		const struct nf_check_result *w = NULL;

		for (size_t i = 0; i < v->n && !w; i++)
			if (v->v[i].res.verdict == NF_V_WARN)
				w = &v->v[i].res;
		motd = (nf_verify_passed(v) || !c) && w
			? nf_asprintf("nodeforge verify: PASS (warning: %s: %s)\n"
				      "  details: /run/nodeforge/verdict.json\n",
				      w->id, w->seen ? w->seen : "")
			: nf_verify_passed(v) || !c
			? nf_asprintf("nodeforge verify: PASS\n")
			: nf_asprintf("nodeforge verify: FAIL: %s: %s\n"
				      "  details: /run/nodeforge/verdict.json\n",
				      c->id, c->seen ? c->seen : c->reason ? c->reason : "");
		if (motd)
			nf_write_atomic(ctx, path, motd, strlen(motd), 0644);
		free(motd);
	}
	if (nf_verify_server_url(ctx, o->sysroot, &url) == 0) {
		size_t ul = strlen(url);
		char *post;

		while (ul > 0 && url[ul - 1] == '/')
			url[--ul] = '\0';
		const char *node = json_string_value(json_object_get(doc, "node"));
		uint8_t *key = NULL;
		size_t klen = 0;

		post = nf_asprintf("%s/api/v1/nodes/%s/verdict", url, node);
		/* an enrolled node signs its verdict with its munge key */
		{
			const char *kp = NULL;
			char *kf;

			for (size_t i = 0; i < v->n && !kp; i++)
				if (!strcmp(v->v[i].facet, "munge"))
					kp = json_string_value(json_object_get(
						v->v[i].section, "key_path"));
			kf = nf_asprintf("%s%s", root,
					       kp ? kp : "/etc/munge/munge.key");

			if (kf && nf_secret_read(ctx, kf, NF_MUNGE_KEY_MAX,
						 &key, &klen))
				key = NULL;
			free(kf);
		}
		if (post && nf_http_post_json(ctx, post, doc, 3000, node, key,
					      klen))
			nf_log(ctx, NF_LOG_WARN, "%s", nf_errmsg(ctx));
		if (key)
			nf_wipe_free(key, klen + 1);
		free(post);
		free(url);
	}
	ctx->errmsg[0] = '\0';
	json_decref(doc);
	return 0;
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
