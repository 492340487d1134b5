/* SPDX-License-Identifier: MIT */
/* Verdict reporting to the boot server over HTTP (libcurl). */
#include "internal.h"

#include <curl/curl.h>
#include <stdlib.h>
#include <time.h>

static size_t discard(char *p, size_t sz, size_t n, void *ud)
{
	(void)p;
	(void)ud;
	return sz * n;
}

#define VERDICT_AAD "nodeforge-verdict-v1"

int nf_verdict_proof(const uint8_t *key, size_t klen, const char *name,
		     const char *time, const void *body, size_t len,
		     uint8_t out[32])
{
	size_t al = sizeof(VERDICT_AAD), nl = strlen(name) + 1,
	       tl = strlen(time) + 1;
	uint8_t *msg = malloc(al + nl + tl + len);
	int r;

	if (!msg)
		return -ENOMEM;
	memcpy(msg, VERDICT_AAD, al);
	memcpy(msg + al, name, nl);
	memcpy(msg + al + nl, time, tl);
	memcpy(msg + al + nl + tl, body, len);
	r = nf_hmac_sha256(key, klen, msg, al + nl + tl + len, out);
	free(msg);
	return r;
}

int nf_http_post_json(struct nf_ctx *ctx, const char *url, const json_t *doc,
		      unsigned timeout_ms, const char *name,
		      const uint8_t *key, size_t klen)
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
	if (key && name) {
		char t[32], line[128], *b64;
		uint8_t mac[32];

		snprintf(t, sizeof(t), "%lld", (long long)time(NULL));
		if (nf_verdict_proof(key, klen, name, t, body, strlen(body),
				     mac) == 0 && (b64 = nf_b64_encode(mac, 32))) {
			snprintf(line, sizeof(line), "X-Nodeforge-Time: %s", t);
			hdr = curl_slist_append(hdr, line);
			snprintf(line, sizeof(line), "X-Nodeforge-Proof: %s", b64);
			hdr = curl_slist_append(hdr, line);
			free(b64);
		}
	}
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
