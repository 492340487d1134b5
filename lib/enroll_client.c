/* SPDX-License-Identifier: MIT */
/*
 * Enrollment, the node's side: make a claim, open the sealed answer and
 * write the secrets into the node's root (lib/enroll.c is the server's).
 */
#include "enroll_int.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int nf_enroll_claim_make(struct nf_ctx *ctx, struct nf_enroll_claim *c,
			 const char *node, const char *mac, char **body)
{
	char *pub64, *nonce64, m[18] = "";
	json_t *j;
	int r;

	if (!nf_en_name_ok(node))
		return nf_fail(ctx, NF_E_INVALID, "'%s' is not a node name",
			       node);
	if (mac && nf_en_mac_norm(mac, m))
		return nf_fail(ctx, NF_E_INVALID, "'%s' is not a MAC address",
			       mac);
	memset(c, 0, sizeof(*c));
	snprintf(c->node, sizeof(c->node), "%s", node);
	if ((r = nf_x25519_keypair(ctx, c->priv, c->pub)) ||
	    (r = nf_random_bytes(ctx, c->nonce, sizeof(c->nonce))))
		return r;
	pub64 = nf_b64_encode(c->pub, 32);
	nonce64 = nf_b64_encode(c->nonce, 16);
	j = pub64 && nonce64 ? json_pack("{s:s,s:s,s:s,s:s}", "name", node,
					 "mac", m, "pubkey", pub64, "nonce",
					 nonce64)
			     : NULL;
	free(pub64);
	free(nonce64);
	*body = j ? json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(j);
	if (!*body) {
		nf_wipe(c, sizeof(*c));
		return -ENOMEM;
	}
	return 0;
}

/* Wipe the string jansson holds for `key` before the tree goes */
void nf_en_json_wipe_str(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	if (json_is_string(v))
		nf_wipe((char *)json_string_value(v), json_string_length(v));
}

int nf_en_node_profile(struct nf_ctx *ctx, const char *root, json_t **out)
{
	char *path = nf_asprintf("%s/etc/nodeforge/profile.json",
				 root && *root ? root : ""), *buf = NULL;
	size_t len;
	int r;

	*out = NULL;
	if (!path)
		return -ENOMEM;
	r = nf_read_optional(ctx, path, 4 << 20, &buf, &len);
	if (r == -ENOENT) {
		r = 0;
	} else if (!r) {
		*out = json_loadb(buf, len, 0, NULL);
		free(buf);
		if (!*out)
			r = nf_fail(ctx, NF_E_PARSE, "'%s' is not JSON", path);
	}
	free(path);
	return r;
}

int nf_en_key_place(struct nf_ctx *ctx, const json_t *prof,
		    struct nf_en_key_place *k)
{
	const json_t *sec = json_object_get(prof, "munge");
	const char *p = nf_munge_key_path(sec), *o = nf_munge_key_owner(sec);
	size_t n = strlen(p);

	/* the node's own profile, but a path that climbs out of the root
	 * is never written */
	if (*p != '/' || strstr(p, "/../") ||
	    (n >= 3 && !strcmp(p + n - 3, "/..")) ||
	    n + sizeof(".next") > sizeof(k->rel))
		return nf_fail(ctx, NF_E_INVALID,
			       "munge.key_path '%s' of the node's profile is "
			       "not an absolute path in the root", p);
	if (strlen(o) >= sizeof(k->owner))
		return nf_fail(ctx, NF_E_INVALID,
			       "munge.owner '%s' of the node's profile is too "
			       "long", o);
	while (*p == '/')
		p++;
	snprintf(k->rel, sizeof(k->rel), "%s", p);
	snprintf(k->owner, sizeof(k->owner), "%s", o);
	k->mode = nf_munge_key_mode(sec);
	return 0;
}

/* The image knows the cluster's munge key by its fingerprint (the site's
 * secrets.munge_key.fingerprint, in /etc/nodeforge/profile.json): a key
 * that is neither it nor the previous one comes from a server that does
 * not hold the cluster's key, and is refused.  An image built from a
 * site that records no fingerprint takes the key as delivered. */
static int image_expects_key(struct nf_ctx *ctx, const json_t *prof,
			     const char *fp)
{
	const json_t *fps = json_object_get(json_object_get(prof, "site"),
					    "fingerprints");
	const char *want = json_string_value(json_object_get(fps, "munge_key"));
	const char *prev = json_string_value(json_object_get(
		fps, "munge_key.previous"));

	if (want && strcmp(want, fp) && (!prev || strcmp(prev, fp)))
		return nf_fail(ctx, NF_E_CHECKSUM,
			       "the boot server delivered munge key %s, but this "
			       "image expects %s (the site's "
			       "secrets.munge_key.fingerprint): refusing a key "
			       "from a server that does not hold the cluster's; "
			       "nothing written", fp, want);
	return 0;
}

int nf_enroll_claim_accept(struct nf_ctx *ctx, struct nf_enroll_claim *c,
			   const char *resp, size_t len, const char *root,
			   struct nf_enroll_result *res)
{
	uint8_t aad[AAD_MAX], *blob = NULL, *pt = NULL, *key = NULL;
	size_t alen, bloblen = 0, ptlen = 0, klen = 0;
	const char *s, *role, *fpsent, *pw;
	json_t *j = NULL, *p = NULL, *prof = NULL;
	struct nf_en_key_place kp;
	json_error_t jerr;
	long uid, gid;
	int rootfd = -1, r;

	memset(res, 0, sizeof(*res));
	j = json_loadb(resp, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!json_is_object(j)) {
		r = nf_fail(ctx, NF_E_PARSE, "enrollment response is not JSON");
		goto out;
	}
	if ((s = json_string_value(json_object_get(j, "error")))) {
		r = nf_fail(ctx, NF_E_SIGNATURE, "server refused the claim: %s",
			    s);
		goto out;
	}
	s = json_string_value(json_object_get(j, "node"));
	role = json_string_value(json_object_get(j, "role"));
	fpsent = json_string_value(json_object_get(j, "munge_fingerprint"));
	if (!s || strcmp(s, c->node) || !role || !nf_en_name_ok(role)) {
		r = nf_fail(ctx, NF_E_PARSE,
			    "enrollment response is for another node or has no "
			    "role");
		goto out;
	}
	s = json_string_value(json_object_get(j, "sealed"));
	if (!s || nf_b64_decode(s, NF_SEAL_MAX + NF_SEAL_OVERHEAD, &blob,
				&bloblen)) {
		r = nf_fail(ctx, NF_E_PARSE,
			    "enrollment response has no sealed secrets");
		goto out;
	}
	alen = nf_en_aad(aad, AAD_PREFIX, c->node, c->nonce);
	r = nf_seal_open(ctx, c->priv, aad, alen, blob, bloblen, &pt, &ptlen);
	nf_wipe(c->priv, sizeof(c->priv));
	if (r)
		goto out;
	p = json_loadb((char *)pt, ptlen, JSON_REJECT_DUPLICATES, &jerr);
	s = json_string_value(json_object_get(p, "munge_key"));
	if (!json_is_object(p) ||
	    json_integer_value(json_object_get(p, "v")) != 1 ||
	    !json_is_string(json_object_get(p, "node")) ||
	    strcmp(json_string_value(json_object_get(p, "node")), c->node) ||
	    !s || nf_b64_decode(s, NF_MUNGE_KEY_MAX, &key, &klen) ||
	    klen < NF_MUNGE_KEY_MIN) {
		r = nf_fail(ctx, NF_E_PARSE,
			    "sealed secrets are malformed or for another node");
		goto out;
	}
	nf_fingerprint(key, klen, res->munge_fingerprint);
	if (fpsent && strcmp(fpsent, res->munge_fingerprint)) {
		r = nf_fail(ctx, NF_E_CHECKSUM,
			    "delivered munge key is %s, the server announced %s",
			    res->munge_fingerprint, fpsent);
		goto out;
	}
	if ((r = nf_en_node_profile(ctx, root, &prof)) ||
	    (r = image_expects_key(ctx, prof, res->munge_fingerprint)) ||
	    (r = nf_en_key_place(ctx, prof, &kp)))
		goto out;
	snprintf(res->role, sizeof(res->role), "%s", role);
	rootfd = open(root && *root ? root : "/",
		      O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0) {
		r = nf_fail(ctx, -errno, "cannot open root '%s': %s",
			    root ? root : "/", strerror(errno));
		goto out;
	}
	/* All secrets or none: the munge key goes last, since its presence
	 * is what marks a node enrolled (the unit's condition); a failure
	 * before it leaves the node to enroll again once re-opened */
	pw = json_string_value(json_object_get(p, "slurmdbd_password"));
	if (pw) {
		if ((r = nf_root_user(ctx, root, "slurm", &uid, &gid)))
			goto unwritten;
		if ((r = nf_slurmdbd_set_password(ctx, rootfd,
						  "etc/slurm/slurmdbd.conf", pw,
						  uid, gid)))
			goto unwritten;
		res->slurmdbd_password = 1;
	}
	if ((r = nf_root_user(ctx, root, kp.owner, &uid, &gid)) ||
	    (r = nf_secret_write_at(ctx, rootfd, kp.rel, key, klen, kp.mode,
				    uid, gid)))
		goto unwritten;
	r = 0;
	goto out;
unwritten:
	{
		char msg[sizeof(ctx->errmsg)];

		snprintf(msg, sizeof(msg), "%s", nf_error_text(ctx, r));
		r = nf_fail(ctx, r, "%s; no munge key was written, and this "
			    "node's claim is used: on the boot server, "
			    "'nodeforge enroll open %s --reenroll' lets it "
			    "enroll again", msg, c->node);
	}
out:
	nf_wipe(c->priv, sizeof(c->priv));
	if (rootfd >= 0)
		close(rootfd);
	if (key)
		nf_wipe_free(key, klen);
	if (p) {
		nf_en_json_wipe_str(p, "munge_key");
		nf_en_json_wipe_str(p, "slurmdbd_password");
		json_decref(p);
	}
	if (pt)
		nf_wipe_free(pt, ptlen + 1);
	free(blob);
	json_decref(prof);
	json_decref(j);
	return r;
}

/* The node's MAC: the boot interface iPXE names (BOOTIF=01-aa-bb-..), or
 * the first non-loopback interface with an address */
static int own_mac(struct nf_ctx *ctx, char out[18])
{
	char *v = NULL;

	if (!nf_cmdline_get(ctx, "nodeforge.mac", &v) ||
	    !nf_cmdline_get(ctx, "BOOTIF", &v)) {
		const char *m = v;

		if (strlen(m) == 20 && m[2] == '-')
			m += 3;
		if (!nf_en_mac_norm(m, out)) {
			free(v);
			return 0;
		}
		free(v);
	}
	{
		char *dir = nf_sr_path(ctx, "/sys/class/net");
		struct dirent **ents = NULL;
		int n, found = -1;

		if (!dir)
			return -ENOMEM;
		n = scandir(dir, &ents, NULL, alphasort);
		for (int i = 0; i < n; i++) {
			char *p, *buf = NULL;

			if (found < 0 && ents[i]->d_name[0] != '.' &&
			    strcmp(ents[i]->d_name, "lo") &&
			    (p = nf_asprintf("%s/%s/address", dir,
					     ents[i]->d_name))) {
				unsigned m = nf_err_mark(ctx);

				/* an interface without an address is passed by */
				if (nf_read_file(ctx, p, 64, &buf, NULL)) {
					nf_err_drop(ctx, m);
				} else {
					buf[strcspn(buf, "\n")] = 0;
					if (!nf_en_mac_norm(buf, out) &&
					    strcmp(out, "00:00:00:00:00:00"))
						found = 0;
				}
				free(buf);
				free(p);
			}
			free(ents[i]);
		}
		free(ents);
		free(dir);
		if (found < 0)
			return nf_fail(ctx, NF_E_NOTFOUND,
				       "cannot tell this node's MAC: give --mac");
	}
	return 0;
}

int nf_enroll_client(struct nf_ctx *ctx, const struct nf_enroll_client_opts *o,
		     struct nf_enroll_result *res)
{
	struct nf_enroll_claim c;
	char mac[18], *body = NULL, *resp = NULL, *url;
	size_t rlen = 0;
	long status = 0;
	int r;

	if (o->mac)
		snprintf(mac, sizeof(mac), "%s", o->mac);
	else if ((r = own_mac(ctx, mac)))
		return r;
	if ((r = nf_enroll_claim_make(ctx, &c, o->node, mac, &body)))
		return r;
	url = nf_asprintf("%s/api/v1/enroll", o->server);
	if (!url) {
		nf_wipe(&c, sizeof(c));
		free(body);
		return -ENOMEM;
	}
	/* Only transport failures are retried: an answer, even a refusal,
	 * is final */
	for (time_t t0 = time(NULL);;) {
		r = nf_http_post(ctx, url, o->bind, body, strlen(body),
				 NF_ENROLL_RESPONSE_MAX,
				 o->timeout_s > 0 ? o->timeout_s : 30, &resp,
				 &rlen, &status);
		if (r != NF_E_NETWORK || time(NULL) - t0 + 3 > o->retry_s)
			break;
		nf_log(ctx, NF_LOG_WARN, "enroll: %s; retrying", nf_errmsg(ctx));
		sleep(3);
	}
	free(body);
	free(url);
	if (!r && status != 200) {
		json_t *j = json_loadb(resp, rlen, 0, NULL);
		const char *m = json_string_value(json_object_get(j, "error"));

		r = nf_fail(ctx, NF_E_SIGNATURE,
			    "server refused the claim (HTTP %ld): %s", status,
			    m ? m : "no reason given");
		json_decref(j);
	}
	if (!r)
		r = nf_enroll_claim_accept(ctx, &c, resp, rlen, o->root, res);
	nf_wipe(&c, sizeof(c));
	free(resp);
	return r;
}
