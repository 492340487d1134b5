/* SPDX-License-Identifier: MIT */
/* Verdict reporting to the boot server: a JSON POST through the HTTP
 * adapter (lib/adapters/curl.c), signed with the node's munge key when it
 * has one. */
#include "internal.h"

#include <stdlib.h>
#include <time.h>

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
	char *body = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);
	char tline[64], pline[96], *resp = NULL;
	const char *hdr[3] = { NULL };
	struct nf_http_req rq = {
		.url = url, .content_type = "application/json",
		.max_bytes = 64u << 10, .timeout_ms = (long)timeout_ms,
		.headers = hdr,
	};
	int r;

	if (!body)
		return -ENOMEM;
	rq.body = body;
	rq.body_len = strlen(body);
	if (key && name) {
		char t[32], *b64;
		uint8_t mac[32];

		snprintf(t, sizeof(t), "%lld", (long long)time(NULL));
		if (nf_verdict_proof(key, klen, name, t, body, strlen(body),
				     mac) == 0 && (b64 = nf_b64_encode(mac, 32))) {
			snprintf(tline, sizeof(tline), "X-Nodeforge-Time: %s", t);
			snprintf(pline, sizeof(pline), "X-Nodeforge-Proof: %s", b64);
			hdr[0] = tline;
			hdr[1] = pline;
			free(b64);
		}
	}
	r = nf_http_request(ctx, &rq, &resp, NULL, NULL);
	free(resp);
	free(body);
	return r;
}
