/* SPDX-License-Identifier: MIT */
/*
 * The boot server's transport as the server above it sees it (lib/serve.c,
 * lib/http_api.c): a request handle, what a request says, the answers it
 * can queue and the access log.  The transport is lib/adapters/http.c and
 * http_files.c (http_int.h), the only files that see libmicrohttpd.
 */
#ifndef NF_HTTP_H
#define NF_HTTP_H

#include "internal.h"

#define NF_HTTP_URL_MAX 1024
#define NF_HTTP_BODY_MAX (64u << 10)

/* One request, from its head to its answer (the transport's) */
struct nf_srv_req;
/* The transport: listening, the head deadline, requests, files */
struct nf_httpd;

/* What the server above the transport does with a request, registered by
 * it (lib/serve.c); DATA is the caller's, given to nf_httpd_new().  The
 * functions that queue an answer return 0, or a negative errno when none
 * could be queued: the transport then drops the connection */
struct nf_httpd_ops {
	/* A whole request under /api/v1/: queue its answer (nf_srv_send_*)
	 * and log it (nf_srv_access_log) */
	int (*api)(void *data, struct nf_srv_req *rq, const char *method,
		   const char *url);
	/* A file of the tree was sent whole to a GET; may be NULL */
	void (*file_sent)(void *data, struct nf_srv_req *rq, const char *url);
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

/* requests and responses (lib/adapters/http.c) */
void nf_srv_iso_now(char out[32]);
/* The client's address (see http.c), *LOCAL 1 for the operator's */
void nf_srv_request_peer(const struct nf_httpd *s, struct nf_srv_req *rq,
			 char *out, size_t sz, int *local);
/* A request header's value (borrowed), or NULL */
const char *nf_srv_request_header(struct nf_srv_req *rq, const char *name);
/* The request's body (borrowed, NUL-terminated; "" without one), its
 * length in *LEN; NULL when it was over NF_HTTP_BODY_MAX */
const char *nf_srv_request_body(const struct nf_srv_req *rq, size_t *len);
/* The status of the answer queued to RQ; 0 before one is */
unsigned nf_srv_request_status(const struct nf_srv_req *rq);
int nf_srv_send_buf(struct nf_srv_req *rq, unsigned status,
		    const char *type, const char *body, size_t len);
/* J (taken, even on error) as compact JSON */
int nf_srv_send_json(struct nf_srv_req *rq, unsigned status, json_t *j);
/* {"error": MSG} */
int nf_srv_send_error(struct nf_srv_req *rq, unsigned status,
		      const char *msg);
void nf_srv_access_log(struct nf_httpd *s, struct nf_srv_req *rq,
		       const char *method, const char *url, unsigned status,
		       unsigned long long bytes);

#endif
