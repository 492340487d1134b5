/* SPDX-License-Identifier: MIT */
/* Verdict reporting to the boot server over HTTP (libcurl). */
#include "internal.h"

#include <curl/curl.h>
#include <stdlib.h>

static size_t discard(char *p, size_t sz, size_t n, void *ud)
{
	(void)p;
	(void)ud;
	return sz * n;
}

int nf_http_post_json(struct nf_ctx *ctx, const char *url, const json_t *doc,
		      unsigned timeout_ms)
{
	struct curl_slist *hdr = NULL;
	char *body = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);
	long code = 0;
	CURLcode cr;
	CURL *h;
	int r = 0;

	if (!body)
		return -ENOMEM;
	if (!(h = curl_easy_init())) {
		free(body);
		return -ENOMEM;
	}
	hdr = curl_slist_append(hdr, "Content-Type: application/json");
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)timeout_ms);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
	cr = curl_easy_perform(h);
	if (cr != CURLE_OK)
		r = nf_fail(ctx, NF_E_NETWORK, "cannot post to '%s': %s", url,
			    curl_easy_strerror(cr));
	else if (curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code) == CURLE_OK &&
		 (code < 200 || code > 299))
		r = nf_fail(ctx, NF_E_NETWORK, "'%s' answered HTTP %ld", url, code);
	curl_slist_free_all(hdr);
	curl_easy_cleanup(h);
	free(body);
	return r;
}
