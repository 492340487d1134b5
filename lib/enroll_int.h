/* SPDX-License-Identifier: MIT */
/*
 * Enrollment's private parts, shared by its files: lib/enroll.c (the
 * server: nodes, claims, verdict proofs), lib/enroll_state.c (the state
 * directory and its windows), lib/enroll_client.c (the node's claim and
 * the secrets it writes) and munge key rotation: lib/enroll_rotate.c (the
 * plan), lib/enroll_rotate_serve.c (the server's answers) and
 * lib/enroll_rotate_node.c (the node's poll).
 */
#ifndef NF_ENROLL_INT_H
#define NF_ENROLL_INT_H

#include "internal.h"

#include <limits.h>
#include <stdint.h>
#include <time.h>

#define STATE_MAX (64u << 20)
#define AAD_PREFIX "nodeforge-enroll-v1"
#define NAME_MAX_LEN 255
/* The longest AAD of a prefix of AAD_PREFIX's length */
#define AAD_MAX (sizeof(AAD_PREFIX) + NAME_MAX_LEN + 1 + 16)

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
	/* root acting on the state directory of the user serve runs as
	 * (nodeforge-serve.service's): what it writes there is that user's */
	int own;
	uid_t uid;
	gid_t gid;
};

static inline long long now_of(const struct nf_enroll *e)
{
	return e->now ? e->now : (long long)time(NULL);
}

/* Nodes and names (lib/enroll.c) */
int nf_en_mac_norm(const char *s, char out[18]);
int nf_en_name_ok(const char *s);
const struct enode *nf_en_find_node(const struct nf_enroll *e,
				    const char *name);
/* The roles that get the slurmdbd password; rotation switches them first */
int nf_en_role_gets_password(const char *role);

/* The state directory (lib/enroll_state.c): the lock's fd or a negative
 * code */
int nf_en_lock(struct nf_enroll *e);
void nf_en_unlock(int fd);
int nf_en_state_load(struct nf_enroll *e, json_t **out);
int nf_en_state_save(struct nf_enroll *e, json_t *j);
/* A JSON document of the state directory, written atomically, 0600 */
int nf_en_json_save(struct nf_enroll *e, const char *name, json_t *j);
/* A file just written in the state directory (by path, not followed, or
 * by fd when fd >= 0) given to the directory's owner when root writes
 * for it; 0 otherwise, and for a path outside the directory */
int nf_en_own(struct nf_enroll *e, const char *path, int fd);
/* The rotation plan, or *out NULL when there is none (lib/enroll_rotate.c) */
int nf_en_rot_load(struct nf_enroll *e, json_t **out);
int nf_en_rot_save(struct nf_enroll *e, json_t *j);
/* The index of the group the plan puts node `name` in; -1 when none */
int nf_en_rot_group(const json_t *rot, const char *name);
/* The old key of plan rot (fingerprint oldfp), for a node's proof */
int nf_en_rot_old_key(struct nf_enroll *e, const json_t *rot,
		      const char *oldfp, uint8_t **key, size_t *klen);

/* Rotation's proofs (lib/enroll_rotate_serve.c): the node's, an HMAC with
 * the key it holds over ROTATE_AAD NUL name NUL nonce pubkey, and the
 * server's over its answer's action and sealed key */
#define ROTATE_AAD "nodeforge-rotate-v1"
int nf_en_rot_proof(const uint8_t *key, size_t klen, const char *name,
		    const uint8_t nonce[16], const uint8_t pub[32],
		    uint8_t out[32]);
int nf_en_rot_answer_proof(const uint8_t *key, size_t klen,
			   const char *name, const uint8_t nonce[16],
			   const char *action, const char *sealed,
			   uint8_t out[32]);

/* Requests and answers (lib/enroll.c) */
int nf_en_peer_ipv4(const char *s, uint32_t *ip);
void nf_en_respond_err(json_t **resp, int *status, int code,
		       const char *reason, const char *msg);
/* Append a refusal to the refusal log (caller holds the lock), log it
 * loudly and make the response */
void nf_en_refuse(struct nf_enroll *e, const char *node,
		  const char *peer, int code, const char *reason,
		  json_t **resp, int *status, const char *fmt, ...)
	__attribute__((format(printf, 8, 9)));
/* Append one record to refusals.log (lib/enroll_state.c; caller holds
 * the lock), rotating it at NF_ENROLL_REFUSALS_ROTATE */
int nf_en_refusal_append(struct nf_enroll *e, json_t *rec);
/* The records of a refusal log's text (one JSON object a line; other
 * lines are skipped) appended to arr; how many */
size_t nf_en_refusals_parse(const char *buf, size_t len, json_t *arr);
/* Decode a base64 field that must hold exactly `want` bytes */
int nf_en_field_bytes(const json_t *req, const char *key, uint8_t *out,
		      size_t want);
/* prefix NUL name NUL nonce into aad (AAD_MAX for a prefix as long as
 * AAD_PREFIX); its length */
size_t nf_en_aad(uint8_t *aad, const char *prefix, const char *name,
		 const uint8_t nonce[16]);

/* Wipe the string jansson holds for `key` before the tree goes
 * (lib/enroll_client.c) */
void nf_en_json_wipe_str(json_t *o, const char *key);

/* The node's resolved profile, ROOT/etc/nodeforge/profile.json; *out is
 * NULL when the root has none (lib/enroll_client.c) */
int nf_en_node_profile(struct nf_ctx *ctx, const char *root, json_t **out);
/* Where the node's munge key goes: where the munge facet checks it (its
 * munge.key_path, owner and mode; the defaults without a profile) */
struct nf_en_key_place {
	char rel[PATH_MAX];     /* key_path relative to the root */
	char owner[64];
	unsigned mode;
};
int nf_en_key_place(struct nf_ctx *ctx, const json_t *prof,
		    struct nf_en_key_place *k);

#endif
