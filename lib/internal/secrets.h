/* SPDX-License-Identifier: MIT */
/* libnodeforge's private declarations: secrets: sealing, munge keys, enrollment.
 * Included by internal.h; not meant to be included alone. */
#ifndef NF_INTERNAL_SECRETS_H
#define NF_INTERNAL_SECRETS_H

/* ---- secrets: sealing, munge keys, enrollment (lib/secrets.c,
 * enroll.c; lib/adapters/crypto.c, curl.c) ---- */

#define NF_X25519_LEN 32
/* Largest plaintext a sealed box carries */
#define NF_SEAL_MAX (64 * 1024)
/* Overhead of a sealed box: magic, ephemeral public key, tag */
#define NF_SEAL_OVERHEAD (4 + NF_X25519_LEN + 16)

int nf_random_bytes(struct nf_ctx *ctx, void *buf, size_t len);
/* Wipe memory the compiler may not optimise away (OPENSSL_cleanse) */
void nf_wipe(void *buf, size_t len);
void nf_wipe_free(void *buf, size_t len);
int nf_x25519_keypair(struct nf_ctx *ctx, uint8_t priv[NF_X25519_LEN],
		      uint8_t pub[NF_X25519_LEN]);
/* Seal `pt` to `pub` under `aad` (X25519 + HKDF-SHA256 +
 * ChaCha20-Poly1305); *blob is malloc'd */
int nf_seal(struct nf_ctx *ctx, const uint8_t pub[NF_X25519_LEN],
	    const void *aad, size_t aadlen, const void *pt, size_t len,
	    uint8_t **blob, size_t *bloblen);
/* Open a sealed box; NF_E_SIGNATURE when it was tampered with or sealed
 * for another key or AAD.  *pt is NUL-terminated (not counted in *len);
 * free it with nf_wipe_free(*pt, *len + 1) */
int nf_seal_open(struct nf_ctx *ctx, const uint8_t priv[NF_X25519_LEN],
		 const void *aad, size_t aadlen, const void *blob,
		 size_t bloblen, uint8_t **pt, size_t *len);
/* Standard base64 with padding; NULL on ENOMEM */
char *nf_b64_encode(const void *buf, size_t len);
/* Strict decoding, at most `max` bytes out: NF_E_PARSE, NF_E_LIMIT */
int nf_b64_decode(const char *s, size_t max, uint8_t **out, size_t *len);
int nf_hmac_sha256(const void *key, size_t keylen, const void *data,
		   size_t len, uint8_t out[32]);
/* Constant-time equality */
int nf_memeq_ct(const void *a, const void *b, size_t len);

/* Write a secret below an open root: nf_root_write with parents created
 * and the file on disk before it returns (the file is never readable by
 * others, not even as the temporary file) */
int nf_secret_write_at(struct nf_ctx *ctx, int rootfd, const char *rel,
		       const void *buf, size_t len, unsigned mode, long uid,
		       long gid);
/* Replace the secret file at host path PATH atomically (same directory,
 * fsync, rename), keeping the owner and mode of the file it replaces; a
 * new file gets MODE and the caller's owner */
int nf_secret_replace(struct nf_ctx *ctx, const char *path, const void *buf,
		      size_t len, unsigned mode);
/* A user's uid/gid from ROOT/etc/passwd (root "/" or NULL: the host's) */
int nf_root_user(struct nf_ctx *ctx, const char *root, const char *user,
		 long *uid, long *gid);
/* Read a secret file (at most max bytes) into a buffer that is wiped on
 * every path; the file must not be readable by group or others */
int nf_secret_read(struct nf_ctx *ctx, const char *path, size_t max,
		   uint8_t **buf, size_t *len);
/* Where the munge facet wants the node's key (lib/facets/munge.c): the
 * profile's munge.key_path, owner and mode, or /etc/munge/munge.key,
 * munge, 0400.  `sec`: a resolved profile's munge section, or NULL */
const char *nf_munge_key_path(const json_t *sec);
const char *nf_munge_key_owner(const json_t *sec);
unsigned nf_munge_key_mode(const json_t *sec);
/* The fabric manager's unit when the role runs one
 * (lib/facets/fabric_manager.c: enabled on NVSwitch GPUs), else NULL */
const char *nf_fabric_manager_unit(const json_t *prof);
/* nvidia-persistenced when the role's GPUs want persistence mode
 * (lib/facets/gpu.c enables it), else NULL */
const char *nf_gpu_persistence_unit(const json_t *prof);
/* The directory that the users of an enroot path setting share
 * (lib/facets/containers.c): the components before the first one enroot
 * expands per user ($(id -u), ${HOME}, ...), into out.  Returns 1 when it
 * is the parent of per-user directories, 2 when it is the path itself
 * (nothing expanded), 0 when there is none (the path starts with an
 * expansion), -ENAMETOOLONG */
#define NF_ENROOT_DIR_MAX 256
int nf_enroot_shared_dir(const char *v, char *out, size_t sz);
/* The value enroot takes for `key` from one configuration file's text
 * (enroot's loader: `read -r key value` split on space, tab and '=',
 * comments skipped as keys that are no setting): the first line setting
 * it to something not empty, into out (cut at sz - 1).  1 when found,
 * else 0 */
int nf_enroot_conf_get(const char *conf, const char *key, char *out, size_t sz);
/* The arguments of the plugstack.conf line that loads the SPANK plugin
 * `plugin` (the path, or its file name: "required /usr/lib/.../
 * spank_pyxis.so ARGS"), into out (cut at sz - 1).  1 when a line loads
 * it, else 0 */
int nf_plugstack_args(const char *conf, const char *plugin, char *out, size_t sz);

/* HTTP POST of a JSON body (libcurl); `bind`: local address or NULL.
 * The response body is capped at `max` bytes */
int nf_http_post(struct nf_ctx *ctx, const char *url, const char *bind,
		 const char *body, size_t len, size_t max, long timeout_s,
		 char **resp, size_t *resplen, long *status);

/* ---- end of secrets ---- */

#endif
