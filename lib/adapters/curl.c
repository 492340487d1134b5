/* SPDX-License-Identifier: MIT */
/*
 * libcurl adapter: bounded HTTP transfers to memory.  Only http and https,
 * a hard cap on the body, a total timeout; CURLcode never leaves this file.
 * Used by `nodeforge status`, by the verifier's report to the boot server
 * and by enrollment; artifact downloads (resume, stall detection) are
 * lib/adapters/fetch.c's.
 */
#include "internal.h"
#include "lazy.h"

#include <pthread.h>
#include <stdlib.h>

#include <curl/curl.h>

struct sink {
	char *buf;
	size_t len, cap, max;
	int over;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static int curl_ok;

static void curl_init_once(void)
{
	curl_ok = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
}

int nf_curl_init(void)
{
	pthread_once(&curl_once, curl_init_once);
	return curl_ok ? 0 : -ENOMEM;
}

static size_t on_data(char *p, size_t sz, size_t n, void *data)
{
	struct sink *s = data;
	size_t add = sz * n;

	if (add > s->max - s->len) {
		s->over = 1;
		return 0; /* aborts the transfer */
	}
	if (s->len + add + 1 > s->cap) {
		size_t cap = s->cap ? s->cap : 4096;
		char *b;

		while (cap < s->len + add + 1)
			cap *= 2;
		b = realloc(s->buf, cap);
		if (!b)
			return 0;
		s->buf = b;
		s->cap = cap;
	}
	memcpy(s->buf + s->len, p, add);
	s->len += add;
	s->buf[s->len] = '\0';
	return add;
}

int nf_http_request(struct nf_ctx *ctx, const struct nf_http_req *rq,
		    char **body, size_t *len, long *status)
{
	struct sink s = { .max = rq->max_bytes ? rq->max_bytes : (1u << 20) };
	struct curl_slist *hdr = NULL;
	char errbuf[CURL_ERROR_SIZE] = "";
	long code = 0;
	CURLcode cc;
	CURL *c;
	int r = 0;

	*body = NULL;
	if (len)
		*len = 0;
	if (status)
		*status = 0;
	if (strncmp(rq->url, "http://", 7) && strncmp(rq->url, "https://", 8))
		return nf_fail(ctx, NF_E_UNSUPPORTED,
			       "cannot fetch '%s': only http and https URLs",
			       rq->url);
	c = nf_curl_init() ? NULL : curl_easy_init();
	if (!c)
		return nf_lazy_err(NF_LAZY_CURL);
	curl_easy_setopt(c, CURLOPT_URL, rq->url);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS,
			 rq->timeout_ms ? rq->timeout_ms : 30000L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
	curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)s.max);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &s);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "nodeforge/" NF_VERSION);
	if (rq->body) {
		char h[160];

		snprintf(h, sizeof(h), "Content-Type: %s",
			 rq->content_type ? rq->content_type
					  : "application/octet-stream");
		hdr = curl_slist_append(hdr, h);
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, rq->body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE,
				 (curl_off_t)rq->body_len);
	}
	for (size_t i = 0; rq->headers && rq->headers[i]; i++)
		hdr = curl_slist_append(hdr, rq->headers[i]);
	if (rq->method)
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, rq->method);
	if (rq->user) {
		curl_easy_setopt(c, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(c, CURLOPT_USERNAME, rq->user);
		curl_easy_setopt(c, CURLOPT_PASSWORD,
				 rq->password ? rq->password : "");
	}
	if (rq->ca_file)
		curl_easy_setopt(c, CURLOPT_CAINFO, rq->ca_file);
	if (rq->no_verify) {
		curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	if (hdr)
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
	cc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	if (status)
		*status = code;
	if (s.over || cc == CURLE_FILESIZE_EXCEEDED)
		r = nf_fail(ctx, NF_E_LIMIT, "cannot fetch '%s': larger than "
			    "%zu bytes", rq->url, s.max);
	else if (cc == CURLE_OPERATION_TIMEDOUT)
		r = nf_fail(ctx, NF_E_TIMEOUT, "cannot fetch '%s': timed out",
			    rq->url);
	else if (cc != CURLE_OK)
		r = nf_fail(ctx, NF_E_NETWORK, "cannot fetch '%s': %s", rq->url,
			    *errbuf ? errbuf : curl_easy_strerror(cc));
	else if (code >= 400) {
		/* the server's own words: nodeforge serve answers
		 * {"error": "..."}, a Redfish service {"error": {"message"}} */
		json_t *j = s.buf ? json_loadb(s.buf, s.len, 0, NULL) : NULL;
		json_t *err = json_object_get(j, "error");
		char why[160] = "";

		if (json_is_object(err))
			err = json_object_get(err, "message");
		if (json_is_string(err))
			nf_quote_value(json_string_value(err), why, sizeof(why));
		json_decref(j);
		r = nf_fail(ctx, NF_E_NETWORK, "cannot fetch '%s': HTTP %ld%s%s",
			    rq->url, code, *why ? ": " : "", why);
	}
	curl_slist_free_all(hdr);
	curl_easy_cleanup(c);
	if (r) {
		free(s.buf);
		return r;
	}
	if (!s.buf && !(s.buf = calloc(1, 1)))
		return -ENOMEM;
	*body = s.buf;
	if (len)
		*len = s.len;
	return 0;
}

int nf_http_get(struct nf_ctx *ctx, const char *url, size_t max,
		long timeout_ms, char **body, size_t *len)
{
	struct nf_http_req rq = { .url = url, .max_bytes = max,
				  .timeout_ms = timeout_ms };

	return nf_http_request(ctx, &rq, body, len, NULL);
}

/* ================================================= secrets: HTTP POST
 * Enrollment needs what nf_http_request does not give: the body of a
 * refusal (4xx), a chosen local address, no redirects, and no realloc
 * leaving copies of an answer in freed memory. */

struct post_buf {
	char *p;
	size_t n, cap, max;
	int over;
};

static size_t post_write(char *data, size_t size, size_t nmemb, void *u)
{
	struct post_buf *b = u;
	size_t n = size * nmemb;

	if (b->n + n > b->max) {
		b->over = 1;
		return 0;
	}
	if (b->n + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		char *p;

		while (cap < b->n + n + 1)
			cap *= 2;
		if (!(p = malloc(cap)))
			return 0;
		/* Copy rather than realloc so no stale copy is left unwiped */
		if (b->p) {
			memcpy(p, b->p, b->n);
			nf_wipe_free(b->p, b->cap);
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->n, data, n);
	b->n += n;
	b->p[b->n] = 0;
	return n;
}

int nf_http_post(struct nf_ctx *ctx, const char *url, const char *bind,
		 const char *body, size_t len, size_t max, long timeout_s,
		 char **resp, size_t *resplen, long *status)
{
	struct post_buf b = { .max = max };
	struct curl_slist *h = NULL;
	CURLcode cr;
	CURL *c;
	char errbuf[CURL_ERROR_SIZE] = "";

	if (strncmp(url, "http://", 7) && strncmp(url, "https://", 8))
		return nf_fail(ctx, NF_E_INVALID,
			       "'%s' is not an http:// or https:// URL", url);
	if (nf_curl_init() || !(c = curl_easy_init()))
		return nf_lazy_err(NF_LAZY_CURL);
	h = curl_slist_append(h, "Content-Type: application/json");
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, post_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, timeout_s);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_PROXY, "");
	if (bind)
		curl_easy_setopt(c, CURLOPT_INTERFACE, bind);
	cr = curl_easy_perform(c);
	if (cr == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
	curl_easy_cleanup(c);
	curl_slist_free_all(h);
	if (b.over) {
		nf_wipe_free(b.p, b.cap);
		return nf_fail(ctx, NF_E_LIMIT,
			       "response from '%s' is larger than %zu bytes", url,
			       max);
	}
	if (cr != CURLE_OK) {
		nf_wipe_free(b.p, b.cap);
		return nf_fail(ctx, NF_E_NETWORK, "cannot reach '%s': %s", url,
			       *errbuf ? errbuf : curl_easy_strerror(cr));
	}
	if (!b.p && !(b.p = calloc(1, 1)))
		return -ENOMEM;
	*resp = b.p;
	*resplen = b.n;
	return 0;
}

/* ========================================== end of secrets: HTTP POST */
