/* SPDX-License-Identifier: MIT */
/*
 * Enrollment: a node's first-boot claim for its secrets.
 *
 * The node sends {name, mac, pubkey, nonce} (pubkey: its fresh X25519
 * public key, nonce: 16 random bytes, both base64).  The server accepts a
 * claim only for a known node, from that node's address, inside its window
 * and only once; it answers {node, role, munge_fingerprint, sealed} where
 * `sealed` is the role's secrets sealed to the node's key with the AAD
 * "nodeforge-enroll-v1" NUL name NUL nonce, so a response cannot be
 * replayed to another node or another claim.  Every refusal has its own
 * reason, is logged at error level and recorded in the state.
 */
#include "internal.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define STATE_FILE "enroll.json"
#define LOCK_FILE "enroll.lock"
#define STATE_MAX (64u << 20)
#define AAD_PREFIX "nodeforge-enroll-v1"
#define NAME_MAX_LEN 255

struct enode {
	char *name, *role, *rack, *mac;
	uint32_t ip;
};

struct nf_enroll {
	struct nf_ctx *ctx;
	char *dir;
	char *munge_key;
	char *pw_path;
	char *pw_cmd;
	struct enode *nodes;
	size_t n, cap;
	long long now;
};

static long long now_of(const struct nf_enroll *e)
{
	return e->now ? e->now : (long long)time(NULL);
}

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
	if (st.st_uid != geteuid())
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

static int mac_norm(const char *s, char out[18])
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

static int name_ok(const char *s)
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

	if (!n->name || !name_ok(n->name) || !n->role)
		return nf_fail(e->ctx, NF_E_INVALID, "bad node name '%s'",
			       n->name ? n->name : "");
	if (n->mac && mac_norm(n->mac, mac))
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

static const struct enode *find_node(const struct nf_enroll *e,
				     const char *name)
{
	for (size_t i = 0; i < e->n; i++)
		if (!strcmp(e->nodes[i].name, name))
			return &e->nodes[i];
	return NULL;
}

/* ------------------------------------------------------------- state */

static int state_lock(struct nf_enroll *e)
{
	char *p = nf_asprintf("%s/%s", e->dir, LOCK_FILE);
	int fd;

	if (!p)
		return -ENOMEM;
	fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	free(p);
	if (fd < 0)
		return nf_fail(e->ctx, -errno, "cannot lock '%s': %s", e->dir,
			       strerror(errno));
	while (flock(fd, LOCK_EX) < 0) {
		if (errno != EINTR) {
			int r = -errno;

			close(fd);
			return nf_fail(e->ctx, r, "cannot lock '%s': %s",
				       e->dir, strerror(-r));
		}
	}
	return fd;
}

static void state_unlock(int fd)
{
	if (fd >= 0)
		close(fd);
}

static int state_load(struct nf_enroll *e, json_t **out)
{
	char *p = nf_asprintf("%s/%s", e->dir, STATE_FILE), *buf;
	json_error_t err;
	json_t *j;
	size_t len;
	int r;

	if (!p)
		return -ENOMEM;
	r = nf_read_file(e->ctx, p, STATE_MAX, &buf, &len);
	if (r == -ENOENT) {
		free(p);
		j = json_pack("{s:i,s:{},s:{},s:[]}", "version", 1, "windows",
			      "claims", "refusals");
		if (!j)
			return -ENOMEM;
		*out = j;
		return 0;
	}
	if (r) {
		free(p);
		return r;
	}
	j = json_loadb(buf, len, 0, &err);
	free(buf);
	if (!j || !json_is_object(json_object_get(j, "windows")) ||
	    !json_is_object(json_object_get(j, "claims")) ||
	    !json_is_array(json_object_get(j, "refusals"))) {
		json_decref(j);
		r = nf_fail(e->ctx, NF_E_PARSE, "'%s' is not an enrollment state",
			    p);
		free(p);
		return r;
	}
	free(p);
	*out = j;
	return 0;
}

/* A JSON document of the state directory, written atomically, 0600 */
static int json_save(struct nf_enroll *e, const char *name, json_t *j)
{
	char *p = nf_asprintf("%s/%s", e->dir, name);
	char *s = json_dumps(j, JSON_INDENT(1) | JSON_SORT_KEYS);
	int r;

	if (!p || !s) {
		free(p);
		free(s);
		return -ENOMEM;
	}
	r = nf_write_atomic(e->ctx, p, s, strlen(s), 0600);
	free(p);
	free(s);
	return r;
}

static int state_save(struct nf_enroll *e, json_t *j)
{
	return json_save(e, STATE_FILE, j);
}

int nf_enroll_state(struct nf_enroll *e, json_t **out)
{
	int fd = state_lock(e), r;

	if (fd < 0)
		return fd;
	r = state_load(e, out);
	state_unlock(fd);
	return r;
}

int nf_enroll_open(struct nf_enroll *e, char *const *names, size_t n,
		   long long seconds, int reenroll)
{
	json_t *st, *win, *claims;
	long long now = now_of(e);
	int fd, r;

	if (seconds <= 0 || seconds > 30LL * 86400)
		return nf_fail(e->ctx, NF_E_INVALID,
			       "window of %lld s: it must be 1 s to 30 days",
			       seconds);
	for (size_t i = 0; i < n; i++)
		if (!name_ok(names[i]))
			return nf_fail(e->ctx, NF_E_INVALID,
				       "'%s' is not a node name", names[i]);
	if ((fd = state_lock(e)) < 0)
		return fd;
	if ((r = state_load(e, &st))) {
		state_unlock(fd);
		return r;
	}
	win = json_object_get(st, "windows");
	claims = json_object_get(st, "claims");
	for (size_t i = 0; i < n; i++) {
		if (json_object_get(claims, names[i]) && !reenroll) {
			r = nf_fail(e->ctx, -EEXIST,
				    "node '%s' is already enrolled: give "
				    "--reenroll to let it claim again",
				    names[i]);
			goto out;
		}
	}
	for (size_t i = 0; i < n; i++) {
		json_t *c = json_object_get(claims, names[i]);

		if (c) {
			nf_log(e->ctx, NF_LOG_WARN,
			       "enroll: dropping the claim of '%s' for a new "
			       "enrollment", names[i]);
			json_array_append_new(
				json_object_get(st, "refusals"),
				json_pack("{s:I,s:s,s:s,s:s,s:s}", "at",
					  (json_int_t)now, "node", names[i],
					  "peer", "", "reason", "reenroll",
					  "message", "claim dropped by "
					  "'enroll open --reenroll'"));
			json_object_del(claims, names[i]);
		}
		json_object_set_new(win, names[i],
				    json_pack("{s:I,s:I}", "opened",
					      (json_int_t)now, "until",
					      (json_int_t)(now + seconds)));
	}
	r = state_save(e, st);
out:
	json_decref(st);
	state_unlock(fd);
	return r;
}

/* ------------------------------------------------------------- claims */

static int peer_ipv4(const char *s, uint32_t *ip)
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

static void respond_err(json_t **resp, int *status, int code,
			const char *reason, const char *msg)
{
	*status = code;
	*resp = json_pack("{s:s,s:s}", "error", msg, "reason", reason);
}

/* Record a refusal in the state (caller holds the lock), log it loudly
 * and make the response */
static void refuse(struct nf_enroll *e, json_t *st, const char *node,
		   const char *peer, int code, const char *reason,
		   json_t **resp, int *status, const char *fmt, ...)
	__attribute__((format(printf, 9, 10)));

static void refuse(struct nf_enroll *e, json_t *st, const char *node,
		   const char *peer, int code, const char *reason,
		   json_t **resp, int *status, const char *fmt, ...)
{
	json_t *ref = json_object_get(st, "refusals");
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	nf_log(e->ctx, NF_LOG_ERR, "enroll: REFUSED claim for '%s' from %s: %s",
	       node ? node : "?", peer ? peer : "?", msg);
	json_array_append_new(ref, json_pack("{s:I,s:s,s:s,s:s,s:s}", "at",
					     (json_int_t)now_of(e), "node",
					     node ? node : "", "peer",
					     peer ? peer : "", "reason", reason,
					     "message", msg));
	while (json_array_size(ref) > NF_ENROLL_REFUSALS_KEPT)
		json_array_remove(ref, 0);
	respond_err(resp, status, code, reason, msg);
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
		FILE *p = popen(e->pw_cmd, "r");
		int st;

		if (!p)
			return nf_fail(e->ctx, -errno, "cannot run '%s': %s",
				       e->pw_cmd, strerror(errno));
		if (!(b = calloc(1, NF_PASSWORD_MAX + 3))) {
			pclose(p);
			return -ENOMEM;
		}
		n = fread(b, 1, NF_PASSWORD_MAX + 2, p);
		st = pclose(p);
		if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st)) {
			nf_wipe_free(b, NF_PASSWORD_MAX + 3);
			return nf_fail(e->ctx, NF_E_EXTERNAL,
				       "slurmdbd password command '%s' failed",
				       e->pw_cmd);
		}
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

static int role_gets_password(const char *role)
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
	if (role_gets_password(n->role)) {
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

static size_t make_aad(uint8_t *aad, const char *name, const uint8_t nonce[16])
{
	size_t pl = sizeof(AAD_PREFIX), nl = strlen(name);

	memcpy(aad, AAD_PREFIX, pl);          /* with its NUL */
	memcpy(aad + pl, name, nl + 1);
	memcpy(aad + pl + nl + 1, nonce, 16);
	return pl + nl + 1 + 16;
}

#define AAD_MAX (sizeof(AAD_PREFIX) + NAME_MAX_LEN + 1 + 16)

/* Decode a base64 field that must hold exactly `want` bytes */
static int field_bytes(const json_t *req, const char *key, uint8_t *out,
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
	int fd, r;

	*response = NULL;
	if (len > NF_ENROLL_BODY_MAX) {
		respond_err(response, http_status, 413, "too-large",
			    "claim is larger than 4096 bytes");
		nf_log(e->ctx, NF_LOG_ERR,
		       "enroll: REFUSED claim from %s: %zu bytes",
		       peer_addr ? peer_addr : "?", len);
		return *response ? 0 : -ENOMEM;
	}
	req = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
	name = json_string_value(json_object_get(req, "name"));
	macs = json_string_value(json_object_get(req, "mac"));
	if ((fd = state_lock(e)) < 0) {
		json_decref(req);
		respond_err(response, http_status, 500, "server",
			    "enrollment state unavailable");
		return *response ? 0 : -ENOMEM;
	}
	if ((r = state_load(e, &st))) {
		state_unlock(fd);
		json_decref(req);
		respond_err(response, http_status, 500, "server",
			    "enrollment state unavailable");
		return *response ? 0 : -ENOMEM;
	}
	if (!json_is_object(req) || !name || !name_ok(name) ||
	    field_bytes(req, "pubkey", pub, 32) ||
	    field_bytes(req, "nonce", nonce, 16) ||
	    (macs && *macs && mac_norm(macs, mac))) {
		refuse(e, st, name && name_ok(name) ? name : NULL, peer_addr,
		       400, "malformed", response, http_status,
		       "malformed claim: needs name, pubkey (32 bytes) and "
		       "nonce (16 bytes), base64");
		goto save;
	}
	n = find_node(e, name);
	if (!n) {
		refuse(e, st, name, peer_addr, 403, "unknown-node", response,
		       http_status, "'%s' is not a node of the inventory",
		       name);
		goto save;
	}
	if (peer_ipv4(peer_addr, &peer) || peer != n->ip) {
		struct in_addr a = { htonl(n->ip) };
		char want[INET_ADDRSTRLEN];

		inet_ntop(AF_INET, &a, want, sizeof(want));
		refuse(e, st, name, peer_addr, 403, "wrong-address", response,
		       http_status,
		       "claim for '%s' came from %s, not from its inventory "
		       "address %s", name, peer_addr ? peer_addr : "?", want);
		goto save;
	}
	if (n->mac && (!*mac || strcmp(mac, n->mac))) {
		refuse(e, st, name, peer_addr, 403, "wrong-mac", response,
		       http_status,
		       "claim for '%s' names MAC '%s', not its inventory MAC %s",
		       name, *mac ? mac : "", n->mac);
		goto save;
	}
	claim = json_object_get(json_object_get(st, "claims"), name);
	if (claim) {
		refuse(e, st, name, peer_addr, 409, "already-enrolled", response,
		       http_status,
		       "'%s' already enrolled at %lld from %s: a second claim "
		       "may be a stolen identity; re-open with "
		       "'enroll open %s --reenroll' if the node was reinstalled",
		       name, (long long)json_integer_value(
				     json_object_get(claim, "at")),
		       json_string_value(json_object_get(claim, "peer")), name);
		goto save;
	}
	win = json_object_get(json_object_get(st, "windows"), name);
	if (!win) {
		refuse(e, st, name, peer_addr, 403, "no-window", response,
		       http_status,
		       "no enrollment window for '%s': open one with "
		       "'nodeforge enroll open %s --for 15m'", name, name);
		goto save;
	}
	if (now < json_integer_value(json_object_get(win, "opened")) ||
	    now > json_integer_value(json_object_get(win, "until"))) {
		refuse(e, st, name, peer_addr, 403, "outside-window", response,
		       http_status,
		       "claim for '%s' at %lld is outside its window %lld-%lld",
		       name, now,
		       (long long)json_integer_value(json_object_get(win, "opened")),
		       (long long)json_integer_value(json_object_get(win, "until")));
		goto save;
	}
	r = make_payload(e, n, &payload, &plen, &pcap, fp);
	if (!r) {
		size_t alen = make_aad(aad, name, nonce);

		r = nf_seal(e->ctx, pub, aad, alen, payload, plen, &blob,
			    &bloblen);
		nf_wipe_free(payload, pcap);
	}
	if (r) {
		nf_log(e->ctx, NF_LOG_ERR, "enroll: claim for '%s': %s", name,
		       nf_errmsg(e->ctx));
		respond_err(response, http_status, 500, "server",
			    "the server cannot deliver this node's secrets; "
			    "see its log");
		goto out;
	}
	/* Record the claim before any secret leaves: a failed save sends
	 * nothing */
	{
		char pubhex[NF_SHA256_HEX];

		nf_sha256_hex(pub, 32, pubhex);
		json_object_set_new(json_object_get(st, "claims"), name,
				    json_pack("{s:I,s:s,s:s,s:s,s:s}", "at",
					      (json_int_t)now, "peer",
					      peer_addr, "mac", mac, "pubkey_sha256",
					      pubhex, "munge_fingerprint", fp));
		json_object_del(json_object_get(st, "windows"), name);
	}
	if ((r = state_save(e, st))) {
		respond_err(response, http_status, 500, "server",
			    "enrollment state cannot be saved");
		goto out;
	}
	b64 = nf_b64_encode(blob, bloblen);
	if (!b64) {
		respond_err(response, http_status, 500, "server", "out of memory");
		goto out;
	}
	nf_log(e->ctx, NF_LOG_INFO, "enroll: '%s' (%s) enrolled from %s", name,
	       n->role, peer_addr);
	*response = json_pack("{s:s,s:s,s:s,s:s}", "node", name, "role",
			      n->role, "munge_fingerprint", fp, "sealed", b64);
	*http_status = 200;
	free(b64);
	goto out;
save:
	if (state_save(e, st))
		nf_log(e->ctx, NF_LOG_ERR, "enroll: cannot record the refusal: %s",
		       nf_errmsg(e->ctx));
out:
	free(blob);
	json_decref(st);
	json_decref(req);
	state_unlock(fd);
	return *response ? 0 : -ENOMEM;
}

/* ----------------------------------------------------------- node side */

int nf_enroll_claim_make(struct nf_ctx *ctx, struct nf_enroll_claim *c,
			 const char *node, const char *mac, char **body)
{
	char *pub64, *nonce64, m[18] = "";
	json_t *j;
	int r;

	if (!name_ok(node))
		return nf_fail(ctx, NF_E_INVALID, "'%s' is not a node name",
			       node);
	if (mac && mac_norm(mac, m))
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
static void json_wipe_str(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	if (json_is_string(v))
		nf_wipe((char *)json_string_value(v), json_string_length(v));
}

/* The image knows the cluster's munge key by its fingerprint (the site's
 * secrets.munge_key.fingerprint, in /etc/nodeforge/profile.json): a key
 * that is neither it nor the previous one comes from a server that does
 * not hold the cluster's key, and is refused.  An image built from a
 * site that records no fingerprint takes the key as delivered. */
static int image_expects_key(struct nf_ctx *ctx, const char *root,
			     const char *fp)
{
	char *path = nf_asprintf("%s/etc/nodeforge/profile.json",
				 root && *root ? root : ""), *buf = NULL;
	const json_t *fps;
	const char *want, *prev;
	json_t *prof;
	size_t len;
	int r;

	if (!path)
		return -ENOMEM;
	r = nf_read_file(ctx, path, 4 << 20, &buf, &len);
	if (r == -ENOENT) {
		free(path);
		return 0;
	}
	if (r) {
		free(path);
		return r;
	}
	prof = json_loadb(buf, len, 0, NULL);
	free(buf);
	fps = json_object_get(json_object_get(prof, "site"), "fingerprints");
	want = json_string_value(json_object_get(fps, "munge_key"));
	prev = json_string_value(json_object_get(fps, "munge_key.previous"));
	r = 0;
	if (!prof)
		r = nf_fail(ctx, NF_E_PARSE, "'%s' is not JSON", path);
	else if (want && strcmp(want, fp) && (!prev || strcmp(prev, fp)))
		r = nf_fail(ctx, NF_E_CHECKSUM,
			    "the boot server delivered munge key %s, but this "
			    "image expects %s (the site's "
			    "secrets.munge_key.fingerprint): refusing a key "
			    "from a server that does not hold the cluster's; "
			    "nothing written", fp, want);
	json_decref(prof);
	free(path);
	return r;
}

int nf_enroll_claim_accept(struct nf_ctx *ctx, struct nf_enroll_claim *c,
			   const char *resp, size_t len, const char *root,
			   struct nf_enroll_result *res)
{
	uint8_t aad[AAD_MAX], *blob = NULL, *pt = NULL, *key = NULL;
	size_t alen, bloblen = 0, ptlen = 0, klen = 0;
	const char *s, *role, *fpsent, *pw;
	json_t *j = NULL, *p = NULL;
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
	if (!s || strcmp(s, c->node) || !role || !name_ok(role)) {
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
	alen = make_aad(aad, c->node, c->nonce);
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
	if ((r = image_expects_key(ctx, root, res->munge_fingerprint)))
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
	if ((r = nf_root_user(ctx, root, "munge", &uid, &gid)) ||
	    (r = nf_secret_write_at(ctx, rootfd, "etc/munge/munge.key", key,
				    klen, 0400, uid, gid)))
		goto unwritten;
	r = 0;
	goto out;
unwritten:
	{
		char msg[sizeof(ctx->errmsg)];

		snprintf(msg, sizeof(msg), "%s", nf_errmsg(ctx));
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
		json_wipe_str(p, "munge_key");
		json_wipe_str(p, "slurmdbd_password");
		json_decref(p);
	}
	if (pt)
		nf_wipe_free(pt, ptlen + 1);
	free(blob);
	json_decref(j);
	return r;
}

int nf_cmdline_get(struct nf_ctx *ctx, const char *key, char **out)
{
	const char *sys = nf_ctx_sysroot(ctx);
	char *path = nf_asprintf("%s/proc/cmdline", sys ? sys : ""), *buf, *v;
	size_t len;
	int r;

	if (!path)
		return -ENOMEM;
	r = nf_read_file(ctx, path, 64 * 1024, &buf, &len);
	free(path);
	if (r)
		return r;
	if (!(v = malloc(len + 1))) {
		free(buf);
		return -ENOMEM;
	}
	r = nf_cmdline_find(buf, key, v, len + 1);
	free(buf);
	if (r)
		free(v);
	else
		*out = v;
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
		if (!mac_norm(m, out)) {
			free(v);
			return 0;
		}
		free(v);
	}
	{
		const char *sys = nf_ctx_sysroot(ctx);
		char *dir = nf_asprintf("%s/sys/class/net", sys ? sys : "");
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
				if (!nf_read_file(ctx, p, 64, &buf, NULL)) {
					buf[strcspn(buf, "\n")] = 0;
					if (!mac_norm(buf, out) &&
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

/* ------------------------------------------------------------- rotation
 *
 * A munge key rotation is a plan in STATE/rotation.json:
 *   {old_fp, new_fp, old_path, new_path, groups: [[names]...], go,
 *    finished, nodes: {name: {staged, switched}}}
 * groups: the controllers first, then the other nodes rack by rack.  Nodes
 * poll POST /api/v1/rotate with {name, pubkey, nonce, have, proof}: `have`
 * is the fingerprint of the key they hold and `proof` an HMAC-SHA256 with
 * that key over "nodeforge-rotate-v1" NUL name NUL nonce pubkey, so only a
 * node holding a cluster key learns the next one.  The answer's `action`:
 *   stage   the next key is sealed in the answer: keep it beside the key
 *   switch  the node's group may switch now (next key sealed again)
 *   done    the node holds the new key (recorded as switched)
 *   none    no rotation
 * The driver (nf_rotate_begin, nf_rotate_go, nf_rotate_finish) moves `go`
 * from group to group once the previous one has switched, so two keys are
 * in flight only while one group restarts munged. */

#define ROTATE_FILE "rotation.json"
#define ROTATE_AAD "nodeforge-rotate-v1"

static int rot_load(struct nf_enroll *e, json_t **out)
{
	char *p = nf_asprintf("%s/%s", e->dir, ROTATE_FILE), *buf;
	json_t *j;
	size_t len;
	int r;

	if (!p)
		return -ENOMEM;
	r = nf_read_file(e->ctx, p, STATE_MAX, &buf, &len);
	if (r == -ENOENT) {
		free(p);
		*out = NULL;
		return 0;
	}
	if (r) {
		free(p);
		return r;
	}
	j = json_loadb(buf, len, 0, NULL);
	free(buf);
	if (!json_is_object(j) || !json_is_array(json_object_get(j, "groups")) ||
	    !json_is_object(json_object_get(j, "nodes"))) {
		json_decref(j);
		r = nf_fail(e->ctx, NF_E_PARSE, "'%s' is not a rotation plan", p);
		free(p);
		return r;
	}
	free(p);
	*out = j;
	return 0;
}

static int rot_save(struct nf_enroll *e, json_t *j)
{
	return json_save(e, ROTATE_FILE, j);
}

int nf_rotate_status(struct nf_enroll *e, json_t **out)
{
	int fd = state_lock(e), r;

	if (fd < 0)
		return fd;
	r = rot_load(e, out);
	state_unlock(fd);
	if (!r && !*out)
		r = nf_fail(e->ctx, NF_E_NOTFOUND,
			    "no munge key rotation in '%s'", e->dir);
	return r;
}

static int rack_cmp(const void *a, const void *b)
{
	const struct enode *x = *(const struct enode *const *)a;
	const struct enode *y = *(const struct enode *const *)b;
	int r;

	/* nodes without a rack go last */
	if (!*x->rack != !*y->rack)
		return *x->rack ? -1 : 1;
	r = strcmp(x->rack, y->rack);
	return r ? r : strcmp(x->name, y->name);
}

int nf_rotate_begin(struct nf_enroll *e, char fp[NF_FINGERPRINT_LEN])
{
	char oldfp[NF_FINGERPRINT_LEN], *next = NULL;
	json_t *st = NULL, *rot = NULL, *groups, *nodes, *g = NULL;
	const struct enode **v = NULL;
	size_t nv = 0;
	int fd, r;

	if (!e->munge_key)
		return nf_fail(e->ctx, NF_E_NOTFOUND,
			       "no munge key configured (site secrets.munge_key)");
	if ((fd = state_lock(e)) < 0)
		return fd;
	if ((r = rot_load(e, &rot)))
		goto out;
	if (rot && !json_is_true(json_object_get(rot, "finished"))) {
		r = nf_fail(e->ctx, -EBUSY,
			    "a munge key rotation is already in progress (%s): "
			    "finish it first", json_string_value(
				    json_object_get(rot, "new_fp")));
		goto out;
	}
	if ((r = state_load(e, &st)))
		goto out;
	if ((r = nf_munge_fingerprint_file(e->ctx, e->munge_key, oldfp)))
		goto out;
	next = nf_asprintf("%s/munge.key.next", e->dir);
	if (!next) {
		r = -ENOMEM;
		goto out;
	}
	unlink(next);
	if ((r = nf_munge_key_new(e->ctx, next, NULL, fp)))
		goto out;
	/* The enrolled nodes: controllers, then by rack */
	if (!(v = calloc(e->n + 1, sizeof(*v)))) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < e->n; i++)
		if (json_object_get(json_object_get(st, "claims"),
				    e->nodes[i].name))
			v[nv++] = &e->nodes[i];
	groups = json_array();
	nodes = json_object();
	g = json_array();
	for (size_t i = 0; i < nv; i++)
		if (role_gets_password(v[i]->role))
			json_array_append_new(g, json_string(v[i]->name));
	if (json_array_size(g))
		json_array_append(groups, g);
	json_decref(g);
	g = NULL;
	{
		const struct enode **w = calloc(nv + 1, sizeof(*w));
		size_t nw = 0;
		const char *rack = NULL;

		if (!w) {
			json_decref(groups);
			json_decref(nodes);
			r = -ENOMEM;
			goto out;
		}
		for (size_t i = 0; i < nv; i++)
			if (!role_gets_password(v[i]->role))
				w[nw++] = v[i];
		qsort(w, nw, sizeof(*w), rack_cmp);
		for (size_t i = 0; i < nw; i++) {
			if (!g || strcmp(rack, w[i]->rack)) {
				if (g)
					json_array_append_new(groups, g);
				g = json_array();
				rack = w[i]->rack;
			}
			json_array_append_new(g, json_string(w[i]->name));
		}
		if (g)
			json_array_append_new(groups, g);
		g = NULL;
		free(w);
	}
	for (size_t i = 0; i < nv; i++)
		json_object_set_new(nodes, v[i]->name, json_object());
	json_decref(rot);
	rot = json_pack("{s:i,s:s,s:s,s:s,s:s,s:o,s:i,s:b,s:o,s:I}", "version",
			1, "old_fp", oldfp, "new_fp", fp, "old_path",
			e->munge_key, "new_path", next, "groups", groups, "go",
			-1, "finished", 0, "nodes", nodes, "started",
			(json_int_t)now_of(e));
	r = rot ? rot_save(e, rot) : -ENOMEM;
out:
	free(v);
	free(next);
	json_decref(st);
	json_decref(rot);
	state_unlock(fd);
	return r;
}

int nf_rotate_go(struct nf_enroll *e, int group)
{
	json_t *rot = NULL;
	int fd = state_lock(e), r;

	if (fd < 0)
		return fd;
	if (!(r = rot_load(e, &rot)) && !rot)
		r = nf_fail(e->ctx, NF_E_NOTFOUND, "no munge key rotation");
	if (!r) {
		json_object_set_new(rot, "go", json_integer(group));
		r = rot_save(e, rot);
	}
	json_decref(rot);
	state_unlock(fd);
	return r;
}

/* The new key becomes the server's key; the old one is kept (0400) in the
 * state dir to answer stragglers, which present it as proof */
int nf_rotate_finish(struct nf_enroll *e)
{
	json_t *rot = NULL;
	char *prev = NULL;
	const char *np;
	int fd = state_lock(e), r;

	if (fd < 0)
		return fd;
	if (!(r = rot_load(e, &rot)) && !rot)
		r = nf_fail(e->ctx, NF_E_NOTFOUND, "no munge key rotation");
	if (r)
		goto out;
	np = json_string_value(json_object_get(rot, "new_path"));
	prev = nf_asprintf("%s/munge.key.previous", e->dir);
	if (!prev || !np) {
		r = -ENOMEM;
		goto out;
	}
	/* same file system is not guaranteed: copy old, then rename new over
	 * the key (link first so a crash never leaves no key) */
	{
		uint8_t *k;
		size_t kl;
		int dfd;

		if ((r = nf_secret_read(e->ctx, e->munge_key, NF_MUNGE_KEY_MAX,
					&k, &kl)))
			goto out;
		dfd = open(e->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		r = dfd < 0 ? -errno
			    : nf_secret_write_at(e->ctx, dfd,
						 "munge.key.previous", k, kl,
						 0400, -1, -1);
		if (dfd >= 0)
			close(dfd);
		nf_wipe_free(k, kl + 1);
		if (r)
			goto out;
		if ((r = nf_secret_read(e->ctx, np, NF_MUNGE_KEY_MAX, &k, &kl)))
			goto out;
		r = nf_write_atomic(e->ctx, e->munge_key, k, kl, 0400);
		nf_wipe_free(k, kl + 1);
		if (r)
			goto out;
		unlink(np);
	}
	json_object_set_new(rot, "old_path", json_string(prev));
	json_object_set_new(rot, "new_path", json_string(e->munge_key));
	json_object_set_new(rot, "finished", json_true());
	json_object_set_new(rot, "go", json_integer(INT32_MAX));
	r = rot_save(e, rot);
out:
	free(prev);
	json_decref(rot);
	state_unlock(fd);
	return r;
}

static int group_of(const json_t *rot, const char *name)
{
	size_t i, j;
	json_t *g, *n;

	json_array_foreach(json_object_get(rot, "groups"), i, g)
		json_array_foreach(g, j, n)
			if (!strcmp(json_string_value(n), name))
				return (int)i;
	return -1;
}

static size_t make_aad_with(uint8_t *aad, const char *prefix,
			    const char *name, const uint8_t nonce[16])
{
	size_t pl = strlen(prefix) + 1, nl = strlen(name);

	memcpy(aad, prefix, pl);
	memcpy(aad + pl, name, nl + 1);
	memcpy(aad + pl + nl + 1, nonce, 16);
	return pl + nl + 1 + 16;
}

static int rotate_proof(const uint8_t *key, size_t klen, const char *name,
			const uint8_t nonce[16], const uint8_t pub[32],
			uint8_t out[32])
{
	uint8_t msg[AAD_MAX + 32];
	size_t n = make_aad_with(msg, ROTATE_AAD, name, nonce);

	memcpy(msg + n, pub, 32);
	return nf_hmac_sha256(key, klen, msg, n + 32, out);
}

/* The server's side: a stage or switch answer carries an HMAC with the
 * key the node holds over "nodeforge-rotate-answer-v1" NUL name NUL nonce
 * action NUL sealed, so only a server holding the cluster's key can
 * direct a node to a new one */
#define ROTATE_ANSWER "nodeforge-rotate-answer-v1"

static int answer_proof(const uint8_t *key, size_t klen, const char *name,
			const uint8_t nonce[16], const char *action,
			const char *sealed, uint8_t out[32])
{
	size_t al = strlen(action) + 1, sl = strlen(sealed);
	uint8_t *msg = malloc(AAD_MAX + al + sl);
	size_t n;
	int r;

	if (!msg)
		return -ENOMEM;
	n = make_aad_with(msg, ROTATE_ANSWER, name, nonce);
	memcpy(msg + n, action, al);
	memcpy(msg + n + al, sealed, sl);
	r = nf_hmac_sha256(key, klen, msg, n + al + sl, out);
	free(msg);
	return r;
}

int nf_rotate_poll(struct nf_enroll *e, const char *peer_addr,
		   const void *body, size_t len, json_t **response,
		   int *http_status)
{
	json_t *req = NULL, *st = NULL, *rot = NULL, *nrec;
	const char *name, *have, *oldfp, *newfp, *action;
	const struct enode *n;
	uint8_t pub[32], nonce[16], proof[32], want[32], aad[AAD_MAX];
	uint8_t *key = NULL, *nkey = NULL, *blob = NULL;
	size_t klen = 0, nklen = 0, bloblen = 0;
	uint32_t peer;
	int fd, r, grp, holds_new;
	long long now = now_of(e);

	*response = NULL;
	if (len > NF_ENROLL_BODY_MAX) {
		respond_err(response, http_status, 413, "too-large",
			    "request is larger than 4096 bytes");
		return *response ? 0 : -ENOMEM;
	}
	req = json_loadb(body, len, JSON_REJECT_DUPLICATES, NULL);
	name = json_string_value(json_object_get(req, "name"));
	have = json_string_value(json_object_get(req, "have"));
	if ((fd = state_lock(e)) < 0 || state_load(e, &st) || rot_load(e, &rot)) {
		state_unlock(fd);
		json_decref(req);
		json_decref(st);
		respond_err(response, http_status, 500, "server",
			    "rotation state unavailable");
		return *response ? 0 : -ENOMEM;
	}
	if (!json_is_object(req) || !name || !name_ok(name) || !have ||
	    field_bytes(req, "pubkey", pub, 32) ||
	    field_bytes(req, "nonce", nonce, 16) ||
	    field_bytes(req, "proof", proof, 32)) {
		refuse(e, st, NULL, peer_addr, 400, "malformed", response,
		       http_status, "malformed rotation request");
		goto save;
	}
	n = find_node(e, name);
	if (!n) {
		refuse(e, st, name, peer_addr, 403, "unknown-node", response,
		       http_status, "'%s' is not a node of the inventory", name);
		goto save;
	}
	if (peer_ipv4(peer_addr, &peer) || peer != n->ip) {
		refuse(e, st, name, peer_addr, 403, "wrong-address", response,
		       http_status, "rotation request for '%s' came from %s, "
		       "not from its inventory address", name,
		       peer_addr ? peer_addr : "?");
		goto save;
	}
	if (!rot) {
		*response = json_pack("{s:s,s:s}", "node", name, "action", "none");
		*http_status = 200;
		goto out;
	}
	oldfp = json_string_value(json_object_get(rot, "old_fp"));
	newfp = json_string_value(json_object_get(rot, "new_fp"));
	nrec = json_object_get(json_object_get(rot, "nodes"), name);
	holds_new = !strcmp(have, newfp);
	if ((!holds_new && strcmp(have, oldfp)) ||
	    (!nrec && !json_object_get(json_object_get(st, "claims"), name))) {
		refuse(e, st, name, peer_addr, 403, "not-in-rotation", response,
		       http_status, "'%s' holds key %s: not part of the rotation "
		       "%s -> %s; re-enroll it", name, have, oldfp, newfp);
		goto save;
	}
	r = nf_secret_read(e->ctx, json_string_value(json_object_get(
			   rot, holds_new ? "new_path" : "old_path")),
			   NF_MUNGE_KEY_MAX, &key, &klen);
	if (r || rotate_proof(key, klen, name, nonce, pub, want) ||
	    !nf_memeq_ct(want, proof, 32)) {
		if (r) {
			nf_log(e->ctx, NF_LOG_ERR, "rotate: %s", nf_errmsg(e->ctx));
			respond_err(response, http_status, 500, "server",
				    "the server cannot read its keys");
			goto out;
		}
		refuse(e, st, name, peer_addr, 403, "bad-proof", response,
		       http_status, "'%s' does not prove it holds key %s", name,
		       have);
		goto save;
	}
	/* Enrolled after the plan was made: it joins the last group */
	if (!nrec) {
		json_t *groups = json_object_get(rot, "groups");

		if (!json_array_size(groups))
			json_array_append_new(groups, json_array());
		json_array_append_new(json_array_get(groups,
						     json_array_size(groups) - 1),
				      json_string(name));
		nrec = json_object();
		json_object_set_new(json_object_get(rot, "nodes"), name, nrec);
		rot_save(e, rot);
	}
	if (holds_new) {
		if (!json_object_get(nrec, "switched")) {
			json_object_set_new(nrec, "switched", json_integer(now));
			nf_log(e->ctx, NF_LOG_INFO,
			       "rotate: '%s' switched to %s", name, newfp);
			rot_save(e, rot);
		}
		*response = json_pack("{s:s,s:s}", "node", name, "action", "done");
		*http_status = 200;
		goto out;
	}
	/* Holds the old key (kept in key to prove the answer): send the new
	 * one, sealed */
	r = nf_secret_read(e->ctx, json_string_value(json_object_get(
			   rot, "new_path")), NF_MUNGE_KEY_MAX, &nkey, &nklen);
	if (!r) {
		char *b64 = nf_b64_encode(nkey, nklen);
		size_t cap = b64 ? strlen(b64) + 64 + strlen(name) : 0;
		char *pl = b64 ? malloc(cap) : NULL;
		size_t pn;

		if (pl) {
			pn = (size_t)snprintf(pl, cap,
					      "{\"v\":1,\"node\":\"%s\",\"munge_key\":\"%s\"}",
					      name, b64);
			r = nf_seal(e->ctx, pub, aad,
				    make_aad_with(aad, ROTATE_AAD, name, nonce),
				    pl, pn, &blob, &bloblen);
			nf_wipe_free(pl, cap);
		} else {
			r = -ENOMEM;
		}
		if (b64)
			nf_wipe_free(b64, strlen(b64));
	}
	if (r) {
		nf_log(e->ctx, NF_LOG_ERR, "rotate: '%s': %s", name,
		       nf_errmsg(e->ctx));
		respond_err(response, http_status, 500, "server",
			    "the server cannot seal the next key");
		goto out;
	}
	grp = group_of(rot, name);
	action = grp >= 0 && grp <= json_integer_value(json_object_get(rot, "go"))
			 ? "switch" : "stage";
	if (!json_object_get(nrec, "staged")) {
		json_object_set_new(nrec, "staged", json_integer(now));
		rot_save(e, rot);
	}
	{
		char *b64 = nf_b64_encode(blob, bloblen), *ab = NULL;
		uint8_t ap[32];

		if (b64 && !answer_proof(key, klen, name, nonce, action, b64, ap))
			ab = nf_b64_encode(ap, 32);
		*response = ab ? json_pack("{s:s,s:s,s:s,s:s,s:s}", "node", name,
					   "action", action, "munge_fingerprint",
					   newfp, "sealed", b64, "answer_proof", ab)
			       : NULL;
		*http_status = 200;
		free(b64);
		free(ab);
	}
	goto out;
save:
	state_save(e, st);
out:
	if (key)
		nf_wipe_free(key, klen + 1);
	if (nkey)
		nf_wipe_free(nkey, nklen + 1);
	free(blob);
	json_decref(rot);
	json_decref(st);
	json_decref(req);
	state_unlock(fd);
	return *response ? 0 : -ENOMEM;
}

/* ------------------------------------------------- rotation, node side */

/* Open the sealed next key of a rotation answer */
static int rotate_open(struct nf_ctx *ctx, const json_t *j, const char *node,
		       const uint8_t priv[32], const uint8_t nonce[16],
		       uint8_t **key, size_t *klen)
{
	const char *s = json_string_value(json_object_get(j, "sealed"));
	const char *fpsent = json_string_value(json_object_get(j,
							"munge_fingerprint"));
	uint8_t aad[AAD_MAX], *blob = NULL, *pt = NULL;
	size_t bl = 0, pl = 0;
	char fp[NF_FINGERPRINT_LEN];
	json_t *p;
	int r;

	*key = NULL;
	if (!s || nf_b64_decode(s, NF_SEAL_MAX + NF_SEAL_OVERHEAD, &blob, &bl))
		return nf_fail(ctx, NF_E_PARSE, "rotation answer has no sealed key");
	r = nf_seal_open(ctx, priv, aad,
			 make_aad_with(aad, ROTATE_AAD, node, nonce), blob, bl,
			 &pt, &pl);
	free(blob);
	if (r)
		return r;
	p = json_loadb((char *)pt, pl, JSON_REJECT_DUPLICATES, NULL);
	s = json_string_value(json_object_get(p, "munge_key"));
	r = 0;
	if (!s || !json_is_string(json_object_get(p, "node")) ||
	    strcmp(json_string_value(json_object_get(p, "node")), node) ||
	    nf_b64_decode(s, NF_MUNGE_KEY_MAX, key, klen) ||
	    *klen < NF_MUNGE_KEY_MIN)
		r = nf_fail(ctx, NF_E_PARSE, "sealed key is malformed");
	if (!r) {
		nf_fingerprint(*key, *klen, fp);
		if (!fpsent || strcmp(fp, fpsent))
			r = nf_fail(ctx, NF_E_CHECKSUM,
				    "sealed key is %s, the server announced %s",
				    fp, fpsent ? fpsent : "nothing");
	}
	if (r && *key) {
		nf_wipe_free(*key, *klen);
		*key = NULL;
	}
	if (p) {
		json_wipe_str(p, "munge_key");
		json_decref(p);
	}
	nf_wipe_free(pt, pl + 1);
	return r;
}

static int answer_check(struct nf_ctx *ctx, const json_t *j,
			const char *node, const uint8_t nonce[16],
			const char *action, const uint8_t *key, size_t klen)
{
	const char *sealed = json_string_value(json_object_get(j, "sealed"));
	const char *ab = json_string_value(json_object_get(j, "answer_proof"));
	uint8_t want[32], *got = NULL;
	size_t gl = 0;
	int ok;

	ok = sealed && ab && !nf_b64_decode(ab, 32, &got, &gl) && gl == 32 &&
	     !answer_proof(key, klen, node, nonce, action, sealed, want) &&
	     nf_memeq_ct(want, got, 32);
	free(got);
	return ok ? 0 : nf_fail(ctx, NF_E_SIGNATURE,
				"the rotation answer does not prove the server "
				"holds this node's munge key: ignored, nothing "
				"written");
}

static int rotate_request(struct nf_ctx *ctx, const char *node,
			  const uint8_t *key, size_t klen, uint8_t priv[32],
			  uint8_t nonce[16], char **body)
{
	uint8_t pub[32], proof[32];
	char fp[NF_FINGERPRINT_LEN], *a, *b, *c;
	json_t *j;
	int r;

	if ((r = nf_x25519_keypair(ctx, priv, pub)) ||
	    (r = nf_random_bytes(ctx, nonce, 16)))
		return r;
	if (rotate_proof(key, klen, node, nonce, pub, proof))
		return nf_fail(ctx, NF_E_EXTERNAL, "cannot compute the proof");
	nf_fingerprint(key, klen, fp);
	a = nf_b64_encode(pub, 32);
	b = nf_b64_encode(nonce, 16);
	c = nf_b64_encode(proof, 32);
	j = a && b && c ? json_pack("{s:s,s:s,s:s,s:s,s:s}", "name", node,
				    "pubkey", a, "nonce", b, "have", fp,
				    "proof", c)
			: NULL;
	free(a);
	free(b);
	free(c);
	*body = j ? json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(j);
	return *body ? 0 : -ENOMEM;
}

static int read_key_at(struct nf_ctx *ctx, int rootfd, const char *rel,
		       uint8_t **key, size_t *klen)
{
	int fd = openat(rootfd, rel, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	uint8_t buf[NF_MUNGE_KEY_MAX + 1];
	ssize_t n;

	if (fd < 0)
		return nf_fail(ctx, -errno, "cannot read '%s': %s", rel,
			       strerror(errno));
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n < NF_MUNGE_KEY_MIN || n > NF_MUNGE_KEY_MAX) {
		nf_wipe(buf, sizeof(buf));
		return nf_fail(ctx, NF_E_INVALID, "'%s' is not a munge key", rel);
	}
	if (!(*key = malloc((size_t)n))) {
		nf_wipe(buf, sizeof(buf));
		return -ENOMEM;
	}
	memcpy(*key, buf, (size_t)n);
	*klen = (size_t)n;
	nf_wipe(buf, sizeof(buf));
	return 0;
}

int nf_rotate_client(struct nf_ctx *ctx, const struct nf_rotate_client_opts *o,
		     struct nf_rotate_result *res)
{
	const char *root = o->root && *o->root ? o->root : "/";
	char *url = nf_asprintf("%s/api/v1/rotate", o->server);
	time_t t0 = time(NULL);
	long uid, gid;
	int rootfd, r;

	memset(res, 0, sizeof(*res));
	if (!url)
		return -ENOMEM;
	if (!name_ok(o->node)) {
		free(url);
		return nf_fail(ctx, NF_E_INVALID, "'%s' is not a node name",
			       o->node);
	}
	rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0) {
		r = nf_fail(ctx, -errno, "cannot open root '%s': %s", root,
			    strerror(errno));
		free(url);
		return r;
	}
	if ((r = nf_root_user(ctx, root, "munge", &uid, &gid)))
		goto out;
	for (;;) {
		uint8_t priv[32], nonce[16], *key = NULL, *next = NULL;
		size_t klen = 0, nlen = 0, rlen = 0;
		char *body = NULL, *resp = NULL;
		const char *action;
		long status = 0;
		int switched_now;
		json_t *j;

		if ((r = read_key_at(ctx, rootfd, "etc/munge/munge.key", &key,
				     &klen)))
			break;
		nf_fingerprint(key, klen, res->munge_fingerprint);
		r = rotate_request(ctx, o->node, key, klen, priv, nonce, &body);
		if (r) {
			nf_wipe_free(key, klen);
			break;
		}
		r = nf_http_post(ctx, url, o->bind, body, strlen(body),
				 NF_ENROLL_RESPONSE_MAX,
				 o->timeout_s > 0 ? o->timeout_s : 30, &resp,
				 &rlen, &status);
		free(body);
		if (r && r != NF_E_NETWORK) {
			nf_wipe_free(key, klen);
			nf_wipe(priv, sizeof(priv));
			break;
		}
		j = r ? NULL : json_loadb(resp, rlen, 0, NULL);
		free(resp);
		action = json_string_value(json_object_get(j, "action"));
		/* a new key only from a server holding the one this node has */
		if (!r && action && (!strcmp(action, "stage") ||
				     !strcmp(action, "switch")))
			r = answer_check(ctx, j, o->node, nonce, action, key, klen);
		nf_wipe_free(key, klen);
		key = NULL;
		if (r == NF_E_SIGNATURE) {
			json_decref(j);
			nf_wipe(priv, sizeof(priv));
			break;
		}
		if (!r && (status != 200 || !action)) {
			const char *m = json_string_value(json_object_get(j, "error"));

			r = nf_fail(ctx, NF_E_SIGNATURE,
				    "server refused the rotation request (HTTP "
				    "%ld): %s", status, m ? m : "no reason given");
			json_decref(j);
			nf_wipe(priv, sizeof(priv));
			break;
		}
		if (!r && (!strcmp(action, "none") || !strcmp(action, "done"))) {
			res->switched = !strcmp(action, "done");
			json_decref(j);
			nf_wipe(priv, sizeof(priv));
			break;
		}
		if (!r && (!strcmp(action, "stage") || !strcmp(action, "switch"))) {
			r = rotate_open(ctx, j, o->node, priv, nonce, &next, &nlen);
			if (!r && !strcmp(action, "stage") && !res->staged) {
				r = nf_secret_write_at(ctx, rootfd,
						       "etc/munge/munge.key.next",
						       next, nlen, 0400, uid, gid);
				res->staged = !r;
			} else if (!r && !strcmp(action, "switch")) {
				r = nf_secret_write_at(ctx, rootfd,
						       "etc/munge/munge.key",
						       next, nlen, 0400, uid, gid);
				if (!r) {
					unlinkat(rootfd, "etc/munge/munge.key.next", 0);
					res->staged = 1;
					if (o->restart_cmd && *o->restart_cmd) {
						int st = system(o->restart_cmd);

						if (st == -1 || !WIFEXITED(st) ||
						    WEXITSTATUS(st))
							nf_log(ctx, NF_LOG_ERR,
							       "rotate: '%s' failed",
							       o->restart_cmd);
					}
				}
			}
			if (next)
				nf_wipe_free(next, nlen);
			next = NULL;
		} else if (!r) {
			r = nf_fail(ctx, NF_E_PARSE, "unknown rotation action '%s'",
				    action);
		}
		switched_now = !r && action && !strcmp(action, "switch");
		json_decref(j);
		nf_wipe(priv, sizeof(priv));
		if (r && r != NF_E_NETWORK)
			break;
		if (time(NULL) - t0 >= o->wait_s) {
			r = nf_fail(ctx, NF_E_TIMEOUT,
				    "no switch within %ld s (staged: %s)",
				    o->wait_s, res->staged ? "yes" : "no");
			break;
		}
		/* the switch itself is reported on the next poll at once */
		if (switched_now)
			continue;
		usleep((useconds_t)(o->poll_ms > 0 ? o->poll_ms : 5000) * 1000);
	}
out:
	close(rootfd);
	free(url);
	return r;
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

	if ((fd = state_lock(e)) < 0)
		return fd;
	r = state_load(e, &st);
	if (!r)
		r = rot_load(e, &rot);
	state_unlock(fd);
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
	if (!ok && rot && !json_is_true(json_object_get(rot, "finished")))
		ok = proof_with(e, json_string_value(json_object_get(
					   rot, "new_path")),
				name, time, body, len, got);
	if (!ok && rot && json_is_true(json_object_get(rot, "finished")))
		ok = proof_with(e, json_string_value(json_object_get(
					   rot, "old_path")),
				name, time, body, len, got);
	free(got);
	json_decref(rot);
	return ok ? 0 : nf_fail(e->ctx, NF_E_SIGNATURE,
				"the verdict of '%s' is not signed with the "
				"cluster's munge key", name);
}
