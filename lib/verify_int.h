/* SPDX-License-Identifier: MIT */
/*
 * The verifier's private parts, shared by its files: lib/verify.c (the
 * check API and the engine), lib/verify_exec.c (commands with a deadline,
 * fixture answers), lib/verify_ops.c (cgroup, clock and NVML reads) and
 * lib/verify_report.c (JSON, JUnit, health, the verdict's publication).
 */
#ifndef NF_VERIFY_INT_H
#define NF_VERIFY_INT_H

#include "internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>

#define DEFAULT_BUDGET_MS 10000u
#define CHECK_BUDGET_MS 2000u
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
	/* under lock: the process groups of the exec'd probes still running
	 * (a check abandoned as hung leaves its probe behind), killed when
	 * the run is over; a probe started after that is killed at once */
	pid_t probes[64];
	size_t nprobes;
	bool over;
};

struct nf_vcheck {
	struct nf_vrun *run;
	const struct nf_check_def *def;
	char id[NF_CHECK_ID_MAX];       /* the family member's id, or def's */
	struct timespec deadline;
	char expected[512];
	char seen[2048];     /* whole: -v and --json show all of it */
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
	char *id;               /* a family member's own id; NULL: def's */
	const char *facet;
	const json_t *section;
	bool done;
	bool selected;          /* by --only, or needed by a check it selects */
	struct nf_check_result res;
	char *expected, *seen, *remedy, *reason, *cause;
	unsigned order;
	int rank;
	unsigned depth;         /* 1: a root cause of the machine itself */
};

struct nf_verify {
	struct entry *v;
	size_t n;
	char *role;
	char *host;
	unsigned elapsed_ms;
};

/* A run's shared state (lib/verify.c) */
int nf_vrun_new(struct nf_ctx *ctx, const json_t *prof,
		const struct nf_verify_opts *o, struct nf_vrun **out);
void nf_vrun_unref(struct nf_vrun *r);
/* The run is over: kill the probes still running, and any started later */
void nf_vrun_end(struct nf_vrun *r);
/* nf_spawn_capture_watched's watch for a probe of run ARG */
void nf_vrun_probe_watch(void *arg, pid_t pgid, int alive);

/* The check's id: a family member's own, else its definition's */
static inline const char *entry_id(const struct entry *e)
{
	return e->id ? e->id : e->def->id;
}

static inline void now(struct timespec *t)
{
	clock_gettime(CLOCK_MONOTONIC, t);
}

static inline long long ms_until(const struct timespec *t)
{
	struct timespec n;

	now(&n);
	return (t->tv_sec - n.tv_sec) * 1000LL + (t->tv_nsec - n.tv_nsec) / 1000000;
}

static inline void add_ms(struct timespec *t, long long ms)
{
	t->tv_sec += ms / 1000;
	t->tv_nsec += (ms % 1000) * 1000000;
	if (t->tv_nsec >= 1000000000) {
		t->tv_sec++;
		t->tv_nsec -= 1000000000;
	}
}

static inline int ts_before(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec < b->tv_sec ||
	       (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

#endif
