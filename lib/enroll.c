/* SPDX-License-Identifier: MIT */
/*
 * Enrollment, the server's side: a node's first-boot claim for its secrets.
 *
 * The node sends {name, mac, pubkey, nonce} (pubkey: its fresh X25519
 * public key, nonce: 16 random bytes, both base64).  The server accepts a
 * claim only for a known node, from that node's address, inside its window
 * and only once; it answers {node, role, munge_fingerprint, sealed} where
 * `sealed` is the role's secrets sealed to the node's key with the AAD
 * "nodeforge-enroll-v1" NUL name NUL nonce, so a response cannot be
 * replayed to another node or another claim.  Every refusal has its own
 * reason, is logged at error level and recorded in the state.
 *
 * The node's side is lib/enroll_client.c, munge key rotation
 * lib/enroll_rotate.c, the state directory (lock, windows, claims,
 * refusals) lib/enroll_state.c; lib/enroll_int.h holds what they share.
 */
#include "enroll_int.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

void nf_enroll_set_now(struct nf_enroll *e, long long now)
{
	e->now = now;
}

/* Is `path` (existing) equal to or below `tree` (existing)? */
static int path_inside(const char *path, const char *tree)
{
	char *a = realpath(path, NULL), *b = realpath(tree, NULL);
	int in = 0;

	if (a && b) {
		size_t n = strlen(b);

		in = !strncmp(a, b, n) &&
		     (a[n] == '/' || a[n] == '\0' || !strcmp(b, "/"));
	}
	free(a);
	free(b);
	return in;
}

int nf_enroll_new(struct nf_ctx *ctx, const struct nf_enroll_opts *o,
		  struct nf_enroll **out)
{
	struct nf_enroll *e;
	struct stat st;
	int created = 0;

	if (!o->state_dir || !*o->state_dir)
		return nf_fail(ctx, NF_E_USAGE, "no enrollment state directory");
	if (mkdir(o->state_dir, 0700) == 0)
		created = 1;
	else if (errno != EEXIST)
		return nf_fail(ctx, -errno, "cannot create '%s': %s",
			       o->state_dir, strerror(errno));
	if (lstat(o->state_dir, &st) < 0)
		return nf_fail(ctx, -errno, "cannot read '%s': %s",
			       o->state_dir, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return nf_fail(ctx, NF_E_UNSAFE,
			       "state directory '%s' is not a directory",
			       o->state_dir);
	if (st.st_mode & 077)
		return nf_fail(ctx, NF_E_UNSAFE,
			       "state directory '%s' has mode %04o: it holds "
			       "secrets, chmod 0700 it", o->state_dir,
			       (unsigned)(st.st_mode & 07777));
	/* another user's directory is refused, but for root: the operator
	 * rotating keys or opening windows for the serve user's state */
	if (st.st_uid != geteuid() && geteuid() != 0)
		return nf_fail(ctx, NF_E_UNSAFE,
			       "state directory '%s' belongs to uid %u, not to "
			       "this user", o->state_dir, (unsigned)st.st_uid);
	if (o->served_tree && path_inside(o->state_dir, o->served_tree)) {
		if (created)
			rmdir(o->state_dir);
		return nf_fail(ctx, NF_E_UNSAFE,
			       "state directory '%s' is inside the served tree "
			       "'%s': secrets would be published", o->state_dir,
			       o->served_tree);
	}
	if (o->served_tree && o->munge_key &&
	    path_inside(o->munge_key, o->served_tree))
		return nf_fail(ctx, NF_E_UNSAFE,
			       "munge key '%s' is inside the served tree '%s'",
			       o->munge_key, o->served_tree);
	if (o->served_tree && o->slurmdbd_password &&
	    path_inside(o->slurmdbd_password, o->served_tree))
		return nf_fail(ctx, NF_E_UNSAFE,
			       "slurmdbd password '%s' is inside the served "
			       "tree '%s'", o->slurmdbd_password, o->served_tree);
	if (!(e = calloc(1, sizeof(*e))))
		return -ENOMEM;
	e->ctx = ctx;
	e->own = st.st_uid != geteuid();
	e->uid = st.st_uid;
	e->gid = st.st_gid;
	e->dir = nf_strdup(o->state_dir);
	e->munge_key = nf_strdup(o->munge_key);
	e->pw_path = nf_strdup(o->slurmdbd_password);
	e->pw_cmd = nf_strdup(o->slurmdbd_password_command);
	if (!e->dir) {
		nf_enroll_free(e);
		return -ENOMEM;
	}
	*out = e;
	return 0;
}

void nf_enroll_free(struct nf_enroll *e)
{
	if (!e)
		return;
	for (size_t i = 0; i < e->n; i++) {
		free(e->nodes[i].name);
		free(e->nodes[i].role);
		free(e->nodes[i].rack);
		free(e->nodes[i].mac);
	}
	free(e->nodes);
	free(e->dir);
	free(e->munge_key);
	free(e->pw_path);
	free(e->pw_cmd);
	free(e);
}

/* A credential of DIR that exists replaces a path of the site: the
 * unit's LoadCredential= hands serve a copy its own user can read while
 * the file on disk stays root's 0400 */
static int credential_take(struct nf_enroll *e, const char *dir,
			   const char *name, char **path)
{
	char *p = nf_asprintf("%s/%s", dir, name);
	struct stat st;

	if (!p)
		return -ENOMEM;
	if (lstat(p, &st) < 0) {
		int r = -errno;

		free(p);
		return r == -ENOENT ? 0
			: nf_fail(e->ctx, r, "cannot read credential "
				  "'%s/%s': %s", dir, name, strerror(-r));
	}
	free(*path);
	*path = p;
	return 1;
}

int nf_enroll_credentials(struct nf_enroll *e, const char *dir)
{
	int r;

	if (!dir || !*dir)
		return 0;
	if ((r = credential_take(e, dir, NF_CREDENTIAL_MUNGE_KEY,
				 &e->munge_key)) < 0)
		return r;
	r = credential_take(e, dir, NF_CREDENTIAL_SLURMDBD_PASSWORD,
			    &e->pw_path);
	if (r > 0) {
		/* the credential is the password: no command runs */
		free(e->pw_cmd);
		e->pw_cmd = NULL;
	}
	return r < 0 ? r : 0;
}

int nf_en_mac_norm(const char *s, char out[18])
{
	unsigned v[6];
	char sep[5];
	int n = 0;

	if (strlen(s) != 17 ||
	    sscanf(s, "%2x%c%2x%c%2x%c%2x%c%2x%c%2x%n", &v[0], &sep[0], &v[1],
		   &sep[1], &v[2], &sep[2], &v[3], &sep[3], &v[4], &sep[4],
		   &v[5], &n) != 11 || n != 17)
		return -1;
	for (int i = 0; i < 5; i++)
		if (sep[i] != ':' && sep[i] != '-')
			return -1;
	for (int i = 0; i < 17; i++)
		if (i % 3 != 2 && !isxdigit((unsigned char)s[i]))
			return -1;
	snprintf(out, 18, "%02x:%02x:%02x:%02x:%02x:%02x", v[0], v[1], v[2],
		 v[3], v[4], v[5]);
	return 0;
}

int nf_en_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (!n || n > NAME_MAX_LEN)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '-' &&
		    s[i] != '_' && s[i] != '.')
			return 0;
	return 1;
}

int nf_enroll_add_node(struct nf_enroll *e, const struct nf_enroll_node *n)
{
	struct enode *x;
	char mac[18];

	if (!n->name || !nf_en_name_ok(n->name) || !n->role)
		return nf_fail(e->ctx, NF_E_INVALID, "bad node name '%s'",
			       n->name ? n->name : "");
	if (n->mac && nf_en_mac_norm(n->mac, mac))
		return nf_fail(e->ctx, NF_E_INVALID,
			       "node '%s': '%s' is not a MAC address", n->name,
			       n->mac);
	if (e->n == e->cap) {
		size_t cap = e->cap ? 2 * e->cap : 64;
		struct enode *v = realloc(e->nodes, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		e->nodes = v;
		e->cap = cap;
	}
	x = &e->nodes[e->n];
	memset(x, 0, sizeof(*x));
	x->name = nf_strdup(n->name);
	x->role = nf_strdup(n->role);
	x->rack = nf_strdup(n->rack ? n->rack : "");
	x->mac = n->mac ? nf_strdup(mac) : NULL;
	x->ip = n->ip;
	if (!x->name || !x->role || !x->rack || (n->mac && !x->mac)) {
		free(x->name);
		free(x->role);
		free(x->rack);
		free(x->mac);
		return -ENOMEM;
	}
	e->n++;
	return 0;
}

const struct enode *nf_en_find_node(const struct nf_enroll *e,
				    const char *name)
{
	for (size_t i = 0; i < e->n; i++)
		if (!strcmp(e->nodes[i].name, name))
			return &e->nodes[i];
	return NULL;
}

/* ------------------------------------------------------------- claims */

int nf_en_peer_ipv4(const char *s, uint32_t *ip)
{
	struct in_addr a;

	if (!s)
		return -1;
	if (!strncmp(s, "::ffff:", 7))
		s += 7;
	if (inet_pton(AF_INET, s, &a) != 1)
		return -1;
	*ip = ntohl(a.s_addr);
	return 0;
}

void nf_en_respond_err(json_t **resp, int *status, int code,
		       const char *reason, const char *msg)
{
	*status = code;
	*resp = json_pack("{s:s,s:s}", "error", msg, "reason", reason);
}

/* Append a refusal to the refusal log (caller holds the lock), log it
 * loudly and make the response */
void nf_en_refuse(struct nf_enroll *e, const char *node,
		  const char *peer, int code, const char *reason,
		  json_t **resp, int *status, const char *fmt, ...)
{
	json_t *rec;
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	nf_log(e->ctx, NF_LOG_ERR, "enroll: REFUSED claim for '%s' from %s: %s",
	       node ? node : "?", peer ? peer : "?", msg);
	rec = json_pack("{s:I,s:s,s:s,s:s,s:s}", "at", (json_int_t)now_of(e),
			"node", node ? node : "", "peer", peer ? peer : "",
			"reason", reason, "message", msg);
	if (!rec || nf_en_refusal_append(e, rec))
		nf_log(e->ctx, NF_LOG_ERR, "enroll: cannot record the refusal: %s",
		       rec ? nf_errmsg(e->ctx) : "out of memory");
	json_decref(rec);
	nf_en_respond_err(resp, status, code, reason, msg);
}

static int read_password(struct nf_enroll *e, char **pw, size_t *len)
{
	uint8_t *b;
	size_t n;
	int r;

	if (e->pw_path) {
		r = nf_secret_read(e->ctx, e->pw_path, NF_PASSWORD_MAX + 2, &b,
				   &n);
		if (r)
			return r;
	} else {
		/* the site's command (a vault client, say) through the
		 * shell; its stderr stays the server's, a hung one is
		 * stopped after a minute */
		const char *argv[] = { "/bin/sh", "-c", e->pw_cmd, NULL };
		struct timespec dl;
		struct nf_spawn sp = { .argv = argv, .out = NF_SPAWN_CAPTURE,
				       .err = NF_SPAWN_FD, .fd = 2,
				       .cap_max = NF_PASSWORD_MAX + 2,
				       .deadline = &dl,
				       .flags = NF_SPAWN_PGROUP };

		clock_gettime(CLOCK_MONOTONIC, &dl);
		dl.tv_sec += 60;
		r = nf_spawn_run(&sp);
		if (r || !WIFEXITED(sp.status) || WEXITSTATUS(sp.status)) {
			if (sp.cap)
				nf_wipe_free(sp.cap, sp.caplen + 1);
			return nf_fail(e->ctx, NF_E_EXTERNAL,
				       "slurmdbd password command '%s' failed%s",
				       e->pw_cmd, r == NF_E_TIMEOUT
				       ? " (stopped after 60 s)" : "");
		}
		if (!(b = calloc(1, NF_PASSWORD_MAX + 3))) {
			nf_wipe_free(sp.cap, sp.caplen + 1);
			return -ENOMEM;
		}
		n = sp.caplen < NF_PASSWORD_MAX + 2 ? sp.caplen
						     : NF_PASSWORD_MAX + 2;
		memcpy(b, sp.cap, n);
		nf_wipe_free(sp.cap, sp.caplen + 1);
		b[n] = 0;
	}
	while (n && (b[n - 1] == '\n' || b[n - 1] == '\r'))
		b[--n] = 0;
	if (!nf_password_ok((char *)b, n)) {
		nf_wipe(b, n);
		free(b);
		return nf_fail(e->ctx, NF_E_INVALID,
			       "the slurmdbd password is empty, longer than %d "
			       "bytes, or holds a control character, '#' or an "
			       "edge space", NF_PASSWORD_MAX);
	}
	*pw = (char *)b;
	*len = n;
	return 0;
}

/* JSON string body with the escapes a password may need */
static size_t json_escape(char *out, const char *s)
{
	size_t o = 0;

	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			out[o++] = '\\';
		out[o++] = *s;
	}
	return o;
}

int nf_en_role_gets_password(const char *role)
{
	return !strcmp(role, "controller");
}

/* The plaintext to seal: {"v":1,"node":..,"munge_key":..[,"slurmdbd_password":..]} */
static int make_payload(struct nf_enroll *e, const struct enode *n,
			char **out, size_t *outlen, size_t *outcap,
			char fp[NF_FINGERPRINT_LEN])
{
	uint8_t *key = NULL;
	size_t klen = 0, pwlen = 0, cap;
	char *b64 = NULL, *pw = NULL, *buf;
	size_t o;
	int r;

	if (!e->munge_key)
		return nf_fail(e->ctx, NF_E_NOTFOUND,
			       "no munge key configured (site secrets.munge_key)");
	r = nf_secret_read(e->ctx, e->munge_key, NF_MUNGE_KEY_MAX, &key, &klen);
	if (r)
		return r;
	if (klen < NF_MUNGE_KEY_MIN) {
		nf_wipe_free(key, klen + 1);
		return nf_fail(e->ctx, NF_E_INVALID,
			       "munge key '%s' has %zu bytes: munged needs 32 "
			       "to 1024", e->munge_key, klen);
	}
	nf_fingerprint(key, klen, fp);
	b64 = nf_b64_encode(key, klen);
	nf_wipe_free(key, klen + 1);
	if (!b64)
		return -ENOMEM;
	if (nf_en_role_gets_password(n->role)) {
		if (!e->pw_path && !e->pw_cmd) {
			nf_wipe_free(b64, strlen(b64));
			return nf_fail(e->ctx, NF_E_NOTFOUND,
				       "role '%s' needs the slurmdbd password: "
				       "no site secrets.slurmdbd_password",
				       n->role);
		}
		if ((r = read_password(e, &pw, &pwlen))) {
			nf_wipe_free(b64, strlen(b64));
			return r;
		}
	}
	cap = 128 + strlen(n->name) + strlen(b64) + 2 * pwlen;
	if (!(buf = malloc(cap))) {
		nf_wipe_free(b64, strlen(b64));
		if (pw)
			nf_wipe_free(pw, pwlen);
		return -ENOMEM;
	}
	o = (size_t)sprintf(buf, "{\"v\":1,\"node\":\"%s\",\"munge_key\":\"%s\"",
			    n->name, b64);
	if (pw) {
		o += (size_t)sprintf(buf + o, ",\"slurmdbd_password\":\"");
		o += json_escape(buf + o, pw);
		buf[o++] = '"';
	}
	buf[o++] = '}';
	buf[o] = 0;
	nf_wipe_free(b64, strlen(b64));
	if (pw)
		nf_wipe_free(pw, pwlen);
	*out = buf;
	*outlen = o;
	*outcap = cap;
	return 0;
}

size_t nf_en_aad(uint8_t *aad, const char *prefix, const char *name,
		 const uint8_t nonce[16])
{
	size_t pl = strlen(prefix) + 1, nl = strlen(name);

	memcpy(aad, prefix, pl);              /* with its NUL */
	memcpy(aad + pl, name, nl + 1);
	memcpy(aad + pl + nl + 1, nonce, 16);
	return pl + nl + 1 + 16;
}

/* Decode a base64 field that must hold exactly `want` bytes */
int nf_en_field_bytes(const json_t *req, const char *key, uint8_t *out,
		      size_t want)
{
	const char *s = json_string_value(json_object_get(req, key));
	uint8_t *b;
	size_t n;

	if (!s || nf_b64_decode(s, want, &b, &n))
		return -1;
	if (n != want) {
		free(b);
		return -1;
	}
	memcpy(out, b, want);
	free(b);
	return 0;
}

int nf_enroll_claim(struct nf_enroll *e, const char *peer_addr,
		    const void *body, size_t len, json_t **response,
		    int *http_status)
{
	char fp[NF_FINGERPRINT_LEN], mac[18] = "";
	const char *name, *macs;
	const struct enode *n;
	uint8_t pub[32], nonce[16], aad[AAD_MAX];
	uint8_t *blob = NULL;
	size_t bloblen = 0, plen = 0, pcap = 0;
	char *payload = NULL, *b64;
	json_t *req = NULL, *st = NULL, *win, *claim;
	json_error_t jerr;
	uint32_t peer;
	long long now = now_of(e);
	char pubhex[NF_SHA256_HEX];
	int fd, r, retry = 0;

	*response = NULL;
	if (len > NF_ENROLL_BODY_MAX) {
		nf_en_respond_err(response, http_status, 413, "too-large",
			    "claim is larger than 4096 bytes");
		nf_log(e->ctx, NF_LOG_ERR,
		       "enroll: REFUSED claim from %s: %zu bytes",
		       peer_addr ? peer_addr : "?", len);
		return *response ? 0 : -ENOMEM;
	}
	req = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
	name = json_string_value(json_object_get(req, "name"));
	macs = json_string_value(json_object_get(req, "mac"));
	if ((fd = nf_en_lock(e)) < 0) {
		json_decref(req);
		nf_en_respond_err(response, http_status, 500, "server",
			    "enrollment state unavailable");
		return *response ? 0 : -ENOMEM;
	}
	if ((r = nf_en_state_load(e, &st))) {
		nf_en_unlock(fd);
		json_decref(req);
		nf_en_respond_err(response, http_status, 500, "server",
			    "enrollment state unavailable");
		return *response ? 0 : -ENOMEM;
	}
	if (!json_is_object(req) || !name || !nf_en_name_ok(name) ||
	    nf_en_field_bytes(req, "pubkey", pub, 32) ||
	    nf_en_field_bytes(req, "nonce", nonce, 16) ||
	    (macs && *macs && nf_en_mac_norm(macs, mac))) {
		nf_en_refuse(e, name && nf_en_name_ok(name) ? name : NULL, peer_addr,
		       400, "malformed", response, http_status,
		       "malformed claim: needs name, pubkey (32 bytes) and "
		       "nonce (16 bytes), base64");
		goto out;
	}
	n = nf_en_find_node(e, name);
	if (!n) {
		nf_en_refuse(e, name, peer_addr, 403, "unknown-node", response,
		       http_status, "'%s' is not a node of the inventory",
		       name);
		goto out;
	}
	if (nf_en_peer_ipv4(peer_addr, &peer) || peer != n->ip) {
		struct in_addr a = { htonl(n->ip) };
		char want[INET_ADDRSTRLEN];

		inet_ntop(AF_INET, &a, want, sizeof(want));
		nf_en_refuse(e, name, peer_addr, 403, "wrong-address", response,
		       http_status,
		       "claim for '%s' came from %s, not from its inventory "
		       "address %s", name, peer_addr ? peer_addr : "?", want);
		goto out;
	}
	if (n->mac && (!*mac || strcmp(mac, n->mac))) {
		nf_en_refuse(e, name, peer_addr, 403, "wrong-mac", response,
		       http_status,
		       "claim for '%s' names MAC '%s', not its inventory MAC %s",
		       name, *mac ? mac : "", n->mac);
		goto out;
	}
	claim = json_object_get(json_object_get(st, "claims"), name);
	nf_sha256_hex(pub, 32, pubhex);
	/* the node asking again with the key of its recorded claim (its
	 * answer was lost: the server stopped before sending it, or the
	 * network dropped it) gets the same answer: only the holder of that
	 * key's private half can open it */
	retry = claim && json_is_string(json_object_get(claim, "pubkey_sha256")) &&
		!strcmp(json_string_value(json_object_get(claim, "pubkey_sha256")),
			pubhex);
	if (claim && !retry) {
		nf_en_refuse(e, name, peer_addr, 409, "already-enrolled", response,
		       http_status,
		       "'%s' already enrolled at %lld from %s: a second claim "
		       "may be a stolen identity; re-open with "
		       "'enroll open %s --reenroll' if the node was reinstalled",
		       name, (long long)json_integer_value(
				     json_object_get(claim, "at")),
		       json_string_value(json_object_get(claim, "peer")), name);
		goto out;
	}
	win = json_object_get(json_object_get(st, "windows"), name);
	if (!win && !retry) {
		nf_en_refuse(e, name, peer_addr, 403, "no-window", response,
		       http_status,
		       "no enrollment window for '%s': open one with "
		       "'nodeforge enroll open %s --for 15m'", name, name);
		goto out;
	}
	if (!retry && (now < json_integer_value(json_object_get(win, "opened")) ||
		       now > json_integer_value(json_object_get(win, "until")))) {
		nf_en_refuse(e, name, peer_addr, 403, "outside-window", response,
		       http_status,
		       "claim for '%s' at %lld is outside its window %lld-%lld",
		       name, now,
		       (long long)json_integer_value(json_object_get(win, "opened")),
		       (long long)json_integer_value(json_object_get(win, "until")));
		goto out;
	}
	r = make_payload(e, n, &payload, &plen, &pcap, fp);
	if (!r) {
		size_t alen = nf_en_aad(aad, AAD_PREFIX, name, nonce);

		r = nf_seal(e->ctx, pub, aad, alen, payload, plen, &blob,
			    &bloblen);
		nf_wipe_free(payload, pcap);
	}
	if (r) {
		nf_log(e->ctx, NF_LOG_ERR, "enroll: claim for '%s': %s", name,
		       nf_errmsg(e->ctx));
		nf_en_respond_err(response, http_status, 500, "server",
			    "the server cannot deliver this node's secrets; "
			    "see its log");
		goto out;
	}
	/* Record the claim before any secret leaves: a failed save sends
	 * nothing */
	if (!retry) {
		json_object_set_new(json_object_get(st, "claims"), name,
				    json_pack("{s:I,s:s,s:s,s:s,s:s}", "at",
					      (json_int_t)now, "peer",
					      peer_addr, "mac", mac, "pubkey_sha256",
					      pubhex, "munge_fingerprint", fp));
		json_object_del(json_object_get(st, "windows"), name);
	}
	if (!retry && (r = nf_en_state_save(e, st))) {
		nf_en_respond_err(response, http_status, 500, "server",
			    "enrollment state cannot be saved");
		goto out;
	}
	b64 = nf_b64_encode(blob, bloblen);
	if (!b64) {
		nf_en_respond_err(response, http_status, 500, "server", "out of memory");
		goto out;
	}
	nf_log(e->ctx, NF_LOG_INFO, "enroll: '%s' (%s) enrolled from %s%s", name,
	       n->role, peer_addr, retry ? " (its claim again: answered again)" : "");
	*response = json_pack("{s:s,s:s,s:s,s:s}", "node", name, "role",
			      n->role, "munge_fingerprint", fp, "sealed", b64);
	*http_status = 200;
	free(b64);
	goto out;
out:
	free(blob);
	json_decref(st);
	json_decref(req);
	nf_en_unlock(fd);
	return *response ? 0 : -ENOMEM;
}

/* ------------------------------------------------ from site and inventory */

int nf_enroll_from_site(struct nf_ctx *ctx, const struct nf_site *site,
			const struct nf_inventory *inv, const char *state_dir,
			const char *served_tree, struct nf_enroll **out)
{
	const json_t *sj = site ? nf_site_json(site) : NULL;
	const json_t *sec = json_object_get(sj, "secrets");
	const json_t *mk = json_object_get(sec, "munge_key");
	const json_t *pw = json_object_get(sec, "slurmdbd_password");
	struct nf_enroll_opts o = {
		.state_dir = state_dir,
		.served_tree = served_tree,
		.munge_key = json_string_value(json_object_get(mk, "path")),
		.slurmdbd_password = json_string_value(json_object_get(pw, "path")),
		.slurmdbd_password_command =
			json_string_value(json_object_get(pw, "command")),
	};
	struct nf_enroll *e;
	int r;

	if (!o.state_dir)
		o.state_dir = json_string_value(json_object_get(
			json_object_get(sj, "server"), "state_dir"));
	if (!o.state_dir)
		o.state_dir = NF_ENROLL_STATE_DEFAULT;
	if ((r = nf_enroll_new(ctx, &o, &e)))
		return r;
	for (size_t i = 0; inv && i < nf_inventory_count(inv); i++) {
		const struct nf_node *n = nf_inventory_node(inv, i);
		char mac[18];
		struct nf_enroll_node en = {
			.name = n->name, .role = n->role, .rack = n->rack,
			.mac = mac, .ip = n->ip,
		};

		nf_mac_format(n->mac, ':', mac);
		if ((r = nf_enroll_add_node(e, &en))) {
			nf_enroll_free(e);
			return r;
		}
	}
	*out = e;
	return 0;
}

struct nf_ctx *nf_enroll_ctx(const struct nf_enroll *e)
{
	return e->ctx;
}

const char *nf_enroll_state_dir(const struct nf_enroll *e)
{
	return e->dir;
}

/* ------------------------------------------------------ verdict proof */

#define VERDICT_SKEW 300  /* seconds a signed verdict may be off the clock */

static int proof_with(struct nf_enroll *e, const char *path, const char *name,
		      const char *time, const void *body, size_t len,
		      const uint8_t got[32])
{
	uint8_t *key = NULL, want[32];
	size_t klen = 0;
	int ok;

	if (!path || nf_secret_read(e->ctx, path, NF_MUNGE_KEY_MAX, &key, &klen))
		return 0;
	ok = !nf_verdict_proof(key, klen, name, time, body, len, want) &&
	     nf_memeq_ct(want, got, 32);
	nf_wipe_free(key, klen + 1);
	return ok;
}

int nf_enroll_verdict_auth(struct nf_enroll *e, const char *name,
			   const char *time, const char *proof,
			   const void *body, size_t len)
{
	json_t *st = NULL, *rot = NULL;
	uint8_t *got = NULL;
	size_t gl = 0;
	long long t;
	char *end;
	int fd, r, claimed, ok = 0;

	if ((fd = nf_en_lock(e)) < 0)
		return fd;
	r = nf_en_state_load(e, &st);
	if (!r)
		r = nf_en_rot_load(e, &rot);
	nf_en_unlock(fd);
	if (r) {
		json_decref(st);
		return r;
	}
	claimed = json_object_get(json_object_get(st, "claims"), name) != NULL;
	json_decref(st);
	if (!claimed) {
		json_decref(rot);
		return 1;
	}
	if (!time || !proof) {
		json_decref(rot);
		return nf_fail(e->ctx, NF_E_SIGNATURE,
			       "'%s' is enrolled: its verdict must be signed "
			       "with its munge key (X-Nodeforge-Time, "
			       "X-Nodeforge-Proof)", name);
	}
	errno = 0;
	t = strtoll(time, &end, 10);
	if (errno || end == time || *end || t < now_of(e) - VERDICT_SKEW ||
	    t > now_of(e) + VERDICT_SKEW) {
		json_decref(rot);
		return nf_fail(e->ctx, NF_E_SIGNATURE,
			       "the verdict of '%s' is dated '%s', more than "
			       "%d s from the server's clock %lld", name, time,
			       VERDICT_SKEW, now_of(e));
	}
	if (nf_b64_decode(proof, 32, &got, &gl) || gl != 32) {
		free(got);
		json_decref(rot);
		return nf_fail(e->ctx, NF_E_SIGNATURE,
			       "the verdict proof of '%s' is not 32 bytes of "
			       "base64", name);
	}
	/* the cluster's key; during a rotation the node may hold the other
	 * one, and after it a straggler the previous one */
	ok = proof_with(e, e->munge_key, name, time, body, len, got);
	/* the plan keeps both keys of a rotation in files of their own at
	 * every step, whichever one the site's path holds just now */
	if (!ok && rot)
		ok = proof_with(e, json_string_value(json_object_get(
					   rot, "new_path")),
				name, time, body, len, got);
	if (!ok && rot)
		ok = proof_with(e, json_string_value(json_object_get(
					   rot, "old_path")),
				name, time, body, len, got);
	free(got);
	json_decref(rot);
	return ok ? 0 : nf_fail(e->ctx, NF_E_SIGNATURE,
				"the verdict of '%s' is not signed with the "
				"cluster's munge key", name);
}
