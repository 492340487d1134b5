/* SPDX-License-Identifier: MIT */
/* libcurl adapter: CURLcode and curl's options stay in this file. */
#include "internal.h"

#include <stdlib.h>

#include <curl/curl.h>

/* ================================================= secrets: HTTP POST */

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
	if (!(c = curl_easy_init()))
		return -ENOMEM;
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
