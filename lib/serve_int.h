/* SPDX-License-Identifier: MIT */
/*
 * The boot server's private parts, shared by lib/serve.c (node state and
 * its writer, start and stop) and lib/http_api.c (nodes, verdicts,
 * unknown MACs, enrollment).  The transport is lib/adapters/http.c
 * (adapters/http.h): it calls up only through struct nf_httpd_ops.
 */
#ifndef NF_SERVE_INT_H
#define NF_SERVE_INT_H

#include "adapters/http.h"

#include <netinet/in.h>
#include <pthread.h>
#include <time.h>

#define NF_HTTP_INDEX_MAX (64u << 20)
#define NF_HTTP_STATE_MAX (1u << 20)
#define NF_HTTP_UNKNOWN_MAX 4096         /* unknown MACs remembered */
#define NF_HTTP_UNKNOWN_PER_PEER 16      /* new ones one address may add */
#define NF_HTTP_UNKNOWN_WINDOW 600       /* ... per this many seconds */
#define NF_HTTP_UNKNOWN_TTL (7 * 86400)  /* an unknown MAC not seen for
					  * this long is forgotten */

struct nf_server {
	struct nf_httpd *http;     /* the transport */
	int tree;                  /* tree dirfd */
	char *state_dir;

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
};

/* the index and node state (lib/serve.c) */
void nf_srv_index_refresh(struct nf_server *s);
json_t *nf_srv_index_node(struct nf_server *s, const char *name);
int nf_srv_valid_name(const char *s);
int nf_srv_state_write(struct nf_server *s, const char *name, json_t *st);

/* unknown MACs (lib/serve.c; caller holds s->lock): an entry's last
 * sighting (seconds since the epoch; 0 unreadable); forget those not seen
 * for NF_HTTP_UNKNOWN_TTL, their files too; room for one more (the
 * expired go, then while full the one seen longest ago) */
time_t nf_srv_unknown_seen(json_t *rec);
void nf_srv_unknown_expire(struct nf_server *s, time_t now);
void nf_srv_unknown_make_room(struct nf_server *s);

/* the API (lib/http_api.c): struct nf_httpd_ops' api, DATA the server */
int nf_srv_api(void *data, struct nf_srv_req *rq, const char *method,
	       const char *url);

#endif
