/* SPDX-License-Identifier: MIT */
/*
 * The boot server's transport, shared by its files: lib/adapters/http.c
 * (listening, the head deadline, requests, responses, the access log) and
 * lib/adapters/http_files.c (static files of the boot tree: sendfile,
 * HEAD, Range, ETag).  libmicrohttpd's types stay in these files; the
 * server above (lib/serve.c, lib/http_api.c) sees http.h.
 */
#ifndef NF_HTTP_INT_H
#define NF_HTTP_INT_H

#include "http.h"

#include <netinet/in.h>
#include <pthread.h>
#include <time.h>

#include <microhttpd.h>

#define NF_HTTP_SMALL_FILE (256u << 10)  /* read, hash and copy below this */

/* A connection whose request head is awaited (the head deadline) */
struct nf_conn {
	struct nf_conn *prev, *next;
	int fd;
	int64_t deadline;          /* CLOCK_MONOTONIC ms; 0: none */
	char addr[INET6_ADDRSTRLEN];
};

/* A request as the handler collects it */
struct nf_srv_req {
	struct MHD_Connection *c;
	char *body;
	size_t len;
	unsigned status; /* of the answer queued; 0: none yet */
	int too_large;
	int started;   /* the handler has seen this request */
	int url_nul;   /* the target, decoded, holds a NUL byte */
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

/* Queue R (taken) with STATUS as RQ's answer: 0, or -EIO */
int nf_srv_queue(struct nf_srv_req *rq, unsigned status,
		 struct MHD_Response *r);

/* static files of the boot tree (lib/adapters/http_files.c) */
int nf_srv_serve_file(struct nf_httpd *s, struct nf_srv_req *rq,
		      const char *method, const char *url);

#endif
