/* SPDX-License-Identifier: MIT */
/*
 * The boot server's private parts, shared by its files:
 * lib/adapters/http.c (node state and its writer, responses, the request
 * handler, listening), lib/adapters/http_files.c (static files of the boot
 * tree: sendfile, HEAD, Range, ETag) and lib/http_api.c (nodes, verdicts, unknown MACs, enrollment).
 * libmicrohttpd's types stay in these files.
 */
#ifndef NF_HTTP_INT_H
#define NF_HTTP_INT_H

#include "internal.h"

#include <netinet/in.h>
#include <pthread.h>
#include <time.h>

#include <microhttpd.h>

#define NF_HTTP_URL_MAX 1024
#define NF_HTTP_BODY_MAX (64u << 10)
#define NF_HTTP_SMALL_FILE (256u << 10)  /* read, hash and copy below this */
#define NF_HTTP_INDEX_MAX (64u << 20)
#define NF_HTTP_STATE_MAX (1u << 20)
#define NF_HTTP_UNKNOWN_MAX 4096         /* unknown MACs remembered */
#define NF_HTTP_UNKNOWN_PER_PEER 16      /* new ones one address may add */
#define NF_HTTP_UNKNOWN_WINDOW 600       /* ... per this many seconds */
#define NF_HTTP_UNKNOWN_TTL (7 * 86400)  /* an unknown MAC not seen for
					  * this long is forgotten */

/* A connection whose request head is awaited (the head deadline) */
struct nf_conn {
	struct nf_conn *prev, *next;
	int fd;
	int64_t deadline;          /* CLOCK_MONOTONIC ms; 0: none */
	char addr[INET6_ADDRSTRLEN];
};

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

	unsigned head_timeout;     /* --head-timeout */
	pthread_mutex_t conns_lock; /* the list below */
	struct nf_conn conns;      /* every open connection (list head) */
	pthread_t sweeper;         /* closes heads past their deadline */
	pthread_cond_t sweep_wake;
	int sweeper_started, sweep_stop;

	struct trusted {           /* --trusted-proxy */
		int family;
		unsigned char addr[sizeof(struct in6_addr)];
	} trusted[NF_SERVE_TRUSTED_MAX];
	size_t ntrusted;
};

struct req {
	char *body;
	size_t len;
	int too_large;
	int started;   /* the handler has seen this request */
	int url_nul;   /* the target, decoded, holds a NUL byte */
};

/* Status of the response this thread queued last (for the access log) */
extern __thread unsigned nf_srv_last_status;

/* state, responses, the request handler (lib/adapters/http.c) */
void nf_srv_iso_now(char out[32]);
void nf_srv_index_refresh(struct nf_server *s);
json_t *nf_srv_index_node(struct nf_server *s, const char *name);
void nf_srv_request_peer(const struct nf_server *s, struct MHD_Connection *c,
			 char *out, size_t sz, int *local);
int nf_srv_valid_name(const char *s);
int nf_srv_state_write(struct nf_server *s, const char *name, json_t *st);
enum MHD_Result nf_srv_send_buf(struct MHD_Connection *c, unsigned status,
				const char *type, const char *body, size_t len);
enum MHD_Result nf_srv_send_json(struct MHD_Connection *c, unsigned status,
				 json_t *j);
enum MHD_Result nf_srv_send_error(struct MHD_Connection *c, unsigned status,
				  const char *msg);
void nf_srv_access_log(struct nf_server *s, struct MHD_Connection *c,
		       const char *method, const char *url, unsigned status,
		       unsigned long long bytes);

/* unknown MACs (lib/adapters/http.c; caller holds s->lock): an entry's
 * last sighting (seconds since the epoch; 0 unreadable); forget those
 * not seen for NF_HTTP_UNKNOWN_TTL, their files too; room for one more
 * (the expired go, then while full the one seen longest ago) */
time_t nf_srv_unknown_seen(json_t *rec);
void nf_srv_unknown_expire(struct nf_server *s, time_t now);
void nf_srv_unknown_make_room(struct nf_server *s);

/* static files of the boot tree (lib/adapters/http_files.c) */
enum MHD_Result nf_srv_serve_file(struct nf_server *s,
				  struct MHD_Connection *c, const char *method,
				  const char *url);

/* the API (lib/http_api.c) */
enum MHD_Result nf_srv_api(struct nf_server *s, struct MHD_Connection *c,
			   const char *method, const char *url,
			   struct req *rq);

#endif
