/* SPDX-License-Identifier: MIT */
/*
 * The boot server's transport, shared by its files: lib/adapters/http.c
 * (listening, the head deadline, requests, responses, the access log),
 * lib/adapters/http_files.c (static files of the boot tree: sendfile,
 * HEAD, Range, ETag), and what the server above it (lib/serve_int.h)
 * answers with.  libmicrohttpd's types stay in these files and those of
 * the server (lib/serve.c, lib/http_api.c).
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

/* A connection whose request head is awaited (the head deadline) */
struct nf_conn {
	struct nf_conn *prev, *next;
	int fd;
	int64_t deadline;          /* CLOCK_MONOTONIC ms; 0: none */
	char addr[INET6_ADDRSTRLEN];
};

/* A request as the handler collects it */
struct req {
	char *body;
	size_t len;
	int too_large;
	int started;   /* the handler has seen this request */
	int url_nul;   /* the target, decoded, holds a NUL byte */
};

/* What the server above the transport does with a request, registered by
 * it (lib/serve.c); DATA is the caller's, given to nf_httpd_new() */
struct nf_httpd_ops {
	/* A whole request under /api/v1/: queue its answer (nf_srv_send_*)
	 * and log it (nf_srv_access_log) */
	enum MHD_Result (*api)(void *data, struct MHD_Connection *c,
			       const char *method, const char *url,
			       struct req *rq);
	/* A file of the tree was sent whole to a GET; may be NULL */
	void (*file_sent)(void *data, struct MHD_Connection *c,
			  const char *url);
};

struct nf_httpd {
	struct MHD_Daemon *mhd;
	int tree;                  /* tree dirfd (the caller's) */
	char url[96];
	nf_access_log_fn log_fn;
	void *log_data;
	const struct nf_httpd_ops *ops;
	void *ops_data;

	unsigned head_timeout;     /* --head-timeout */
	unsigned per_address;      /* connections one address may hold */
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

/* The transport of O (its log, trusted proxies, head timeout and per
 * address limit), answering through OPS with DATA; *OUT is set, to free
 * with nf_httpd_free(), even on error */
int nf_httpd_new(struct nf_ctx *ctx, const struct nf_serve_opts *o,
		 const struct nf_httpd_ops *ops, void *data,
		 struct nf_httpd **out);
/* Listen on LISTEN and serve the files beneath TREE (borrowed until
 * nf_httpd_free) in THREADS threads (0: one per CPU) */
int nf_httpd_start(struct nf_ctx *ctx, struct nf_httpd *s, int tree,
		   const char *listen, unsigned threads);
/* "http://ADDR:PORT" actually bound */
const char *nf_httpd_url(const struct nf_httpd *s);
/* Stop serving (no callback runs after this) and free */
void nf_httpd_free(struct nf_httpd *s);

/* Status of the response this thread queued last (for the access log) */
extern __thread unsigned nf_srv_last_status;

/* requests and responses (lib/adapters/http.c) */
void nf_srv_iso_now(char out[32]);
void nf_srv_request_peer(const struct nf_httpd *s, struct MHD_Connection *c,
			 char *out, size_t sz, int *local);
enum MHD_Result nf_srv_send_buf(struct MHD_Connection *c, unsigned status,
				const char *type, const char *body, size_t len);
enum MHD_Result nf_srv_send_json(struct MHD_Connection *c, unsigned status,
				 json_t *j);
enum MHD_Result nf_srv_send_error(struct MHD_Connection *c, unsigned status,
				  const char *msg);
void nf_srv_access_log(struct nf_httpd *s, struct MHD_Connection *c,
		       const char *method, const char *url, unsigned status,
		       unsigned long long bytes);

/* static files of the boot tree (lib/adapters/http_files.c) */
enum MHD_Result nf_srv_serve_file(struct nf_httpd *s,
				  struct MHD_Connection *c, const char *method,
				  const char *url);

#endif
