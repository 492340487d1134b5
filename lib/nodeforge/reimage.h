/* SPDX-License-Identifier: MIT */
/* libnodeforge's public API: rolling reimages of Slurm nodes
 * (lib/reimage.c, lib/slurm_node.c).  Included by nodeforge.h. */
#ifndef NF_PUBLIC_REIMAGE_H
#define NF_PUBLIC_REIMAGE_H

#include <signal.h>

/* One node as one line of `scontrol show node -o` describes it */
struct nf_slurm_node {
	char name[64];
	char state[128];         /* "IDLE+DRAIN", "MIXED+DRAIN", "DOWN+..." */
	char reason[256];        /* "" when none */
	long long slurmd_start;  /* SlurmdStartTime (local time, as scontrol
				  * prints it) in seconds since the epoch;
				  * 0 when unknown */
};

#define NF_SLURM_LINE_MAX (64u << 10)

/* Parse one line (at most NF_SLURM_LINE_MAX bytes; LEN bytes, need not
 * end in NUL) of `scontrol show node -o`: NF_E_PARSE when it holds no
 * NodeName= or State=, NF_E_LIMIT when too long.  Values longer than their
 * field are cut */
int nf_slurm_node_parse(const char *line, size_t len, struct nf_slurm_node *out);
/* 1 when the state's base (before the first '+') or one of its flags is
 * WORD ("DRAIN", "IDLE", "NOT_RESPONDING"); a trailing '*' is ignored */
int nf_slurm_state_has(const char *state, const char *word);

/* Events of a run, one JSON object each, handed to the caller's callback
 * (borrowed: the callback copies what it keeps).  Every event has
 * "event", "time" (ISO 8601 UTC) and, for a node's event, "node" */
typedef void (*nf_reimage_event_fn)(void *userdata, const json_t *event);

struct nf_reimage_opts {
	const char *image;      /* "ROLE@SHA", "ROLE@current" or "current" */
	unsigned batch;         /* nodes per batch; 0: 1 */
	unsigned max_down;      /* batch plus failed nodes drained at once;
				 * 0: no limit beyond batch */
	unsigned max_failed;    /* stop starting batches after N failures;
				 * 0: never */
	const char *images_dir; /* build output: ROLE/ROLE.current */
	const char *tree;       /* the rendered boot tree */
	const char *server;     /* the boot server: http://HOST:PORT */
	const char *run_dir;    /* run state and per-node locks */
	int resume;             /* continue the run RUN_ID (or the one
				 * unfinished run) instead of a new one */
	const char *run_id;
	long poll_ms;           /* between looks at Slurm and the server;
				 * 0: 5 s */
	long drain_timeout_ms;  /* running jobs to end; 0: no limit */
	long boot_timeout_ms;   /* power cycle to verdict and slurmd back;
				 * 0: 30 min */
	long bmc_timeout_ms;    /* per BMC request; 0: the site's */
	nf_reimage_event_fn event;
	void *userdata;
	/* called for each node just before its power cycle, with the
	 * seconds it has to boot (boot_timeout_ms): a PXE node comes back
	 * without the munge key it was given, so nodeforge reimage opens
	 * its enrollment again (nf_enroll_open with reenroll) when the site
	 * hands out keys; an error fails the node, uncycled.  NULL: none */
	int (*before_cycle)(void *cycle_userdata, const char *node,
			    long long seconds);
	void *cycle_userdata;
	/* set (by a signal handler): the run saves its state at the next
	 * step and returns -EINTR; --resume continues it */
	volatile sig_atomic_t *stop;
};

struct nf_reimage_summary {
	char run_id[64];
	char state_path[4096];
	size_t nodes, resumed, failed, pending;
	int stopped;            /* --max-failed or --max-down ended it early */
};

/* Reimage NAMES (or, with o->resume, the nodes of the saved run): batch by
 * batch, drain in Slurm, wait until no job runs, point each node's boot
 * entry at the image, boot device PXE once and power cycle through its
 * BMC, wait for its verdict on the server after the cycle and for its
 * slurmd to register again, then resume it; a node that fails stays
 * drained with its root cause as the reason.  Each node is locked
 * (flock) for the run; the run's state is written atomically to
 * RUN_DIR/RUN_ID.json after every step.  Returns 0 when every node ran
 * (failed nodes are counted in the summary), -EINTR when stopped by
 * o->stop, else an error naming what could not start */
int nf_reimage_run(struct nf_ctx *ctx, const struct nf_site *site,
		   const struct nf_inventory *inv, char *const *names, size_t n,
		   const struct nf_reimage_opts *o, struct nf_reimage_summary *sum);

#endif
