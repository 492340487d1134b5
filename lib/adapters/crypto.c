/* SPDX-License-Identifier: MIT */
/* OpenSSL adapter: hashing (signatures and key generation live here too). */
#include "internal.h"

#include <openssl/evp.h>

void nf_sha256_hex(const void *data, size_t len, char out[NF_SHA256_HEX])
{
	unsigned char md[32];
	unsigned int mdlen = 0;
	static const char hex[] = "0123456789abcdef";

	EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL);
	for (unsigned i = 0; i < 32; i++) {
		out[2 * i] = hex[md[i] >> 4];
		out[2 * i + 1] = hex[md[i] & 15];
	}
	out[64] = '\0';
}

/* -------------------------------------------------------- streaming sha256 */

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/pem.h>

struct nf_sha256 {
	EVP_MD_CTX *md;
};

int nf_sha256_new(struct nf_sha256 **out)
{
	struct nf_sha256 *h = calloc(1, sizeof(*h));

	if (!h)
		return -ENOMEM;
	h->md = EVP_MD_CTX_new();
	if (!h->md || EVP_DigestInit_ex(h->md, EVP_sha256(), NULL) != 1) {
		nf_sha256_free(h);
		return -ENOMEM;
	}
	*out = h;
	return 0;
}

void nf_sha256_update(struct nf_sha256 *h, const void *buf, size_t len)
{
	EVP_DigestUpdate(h->md, buf, len);
}

static void hexify(const unsigned char *in, size_t n, char *out)
{
	static const char hex[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = hex[in[i] >> 4];
		out[2 * i + 1] = hex[in[i] & 15];
	}
	out[2 * n] = '\0';
}

/* Finishes the digest and starts a new one */
void nf_sha256_final_hex(struct nf_sha256 *h, char out[NF_SHA256_HEX])
{
	unsigned char md[32];
	unsigned int n = 0;

	EVP_DigestFinal_ex(h->md, md, &n);
	hexify(md, 32, out);
	EVP_DigestInit_ex(h->md, EVP_sha256(), NULL);
}

void nf_sha256_free(struct nf_sha256 *h)
{
	if (!h)
		return;
	EVP_MD_CTX_free(h->md);
	free(h);
}

int nf_sha256_fd(struct nf_ctx *ctx, int fd, const char *name,
		 char out[NF_SHA256_HEX], unsigned long long *size)
{
	struct nf_sha256 *h;
	unsigned long long total = 0;
	size_t bufsz = 1 << 20;
	char *buf = malloc(bufsz);
	int r;

	if (!buf)
		return -ENOMEM;
	if ((r = nf_sha256_new(&h))) {
		free(buf);
		return r;
	}
	for (;;) {
		ssize_t n = read(fd, buf, bufsz);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			r = nf_fail(ctx, -errno, "cannot read '%s': %s", name,
				    strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		nf_sha256_update(h, buf, (size_t)n);
		total += (unsigned long long)n;
	}
	nf_sha256_final_hex(h, out);
	if (size)
		*size = total;
out:
	nf_sha256_free(h);
	free(buf);
	return r;
}

/* ------------------------------------------------------ Ed25519 signatures */

#define NF_KEY_MAX (16 * 1024)
#define NF_SIG_MAX 1024

static int write_pem(struct nf_ctx *ctx, const char *path, EVP_PKEY *pk,
		     int priv)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *data;
	long len;
	int r;

	if (!b)
		return -ENOMEM;
	if ((priv ? PEM_write_bio_PrivateKey(b, pk, NULL, NULL, 0, NULL, NULL)
		  : PEM_write_bio_PUBKEY(b, pk)) != 1) {
		BIO_free(b);
		return nf_fail(ctx, NF_E_EXTERNAL, "cannot encode key '%s'",
			       path);
	}
	len = BIO_get_mem_data(b, &data);
	r = nf_write_atomic(ctx, path, data, (size_t)len, priv ? 0600 : 0644);
	OPENSSL_cleanse(data, (size_t)len);
	BIO_free(b);
	return r;
}

int nf_keys_signing(struct nf_ctx *ctx, const char *dir)
{
	EVP_PKEY *pk = NULL;
	EVP_PKEY_CTX *kc;
	char *priv = nf_asprintf("%s/signing.key", dir);
	char *pub = nf_asprintf("%s/signing.pub", dir);
	char lock[PATH_MAX + 8];
	struct stat st;
	int r, lockfd = -1;

	if (!priv || !pub) {
		r = -ENOMEM;
		goto out;
	}
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		r = nf_fail(ctx, -errno, "cannot create '%s': %s", dir,
			    strerror(errno));
		goto out;
	}
	/* an existing directory others may write to (or a symlink to
	 * one) would let them swap the key under us */
	if (lstat(dir, &st) < 0) {
		r = nf_fail(ctx, -errno, "cannot stat '%s': %s", dir,
			    strerror(errno));
		goto out;
	}
	if (!S_ISDIR(st.st_mode) || (st.st_mode & 022)) {
		r = nf_fail(ctx, NF_E_UNSAFE, "'%s' is %s: a signing key needs "
			    "a directory only its owner can write to (chmod "
			    "0700 it, or give a new one)", dir,
			    S_ISLNK(st.st_mode) ? "a symlink"
			    : !S_ISDIR(st.st_mode) ? "not a directory"
			    : "group- or world-writable");
		goto out;
	}
	/* two builds on a new cache: one makes the key, the other finds it */
	snprintf(lock, sizeof(lock), "%s/.lock", dir);
	if ((r = nf_lock_path(ctx, lock, 1, &lockfd)))
		goto out;
	if (lstat(priv, &st) == 0) {
		r = nf_fail(ctx, -EEXIST,
			    "'%s' already exists: refusing to replace a key",
			    priv);
		goto out;
	}
	kc = EVP_PKEY_CTX_new_id(EVP_PKEY_ED25519, NULL);
	if (!kc || EVP_PKEY_keygen_init(kc) != 1 ||
	    EVP_PKEY_keygen(kc, &pk) != 1) {
		EVP_PKEY_CTX_free(kc);
		r = nf_fail(ctx, NF_E_EXTERNAL, "cannot generate an Ed25519 key");
		goto out;
	}
	EVP_PKEY_CTX_free(kc);
	r = write_pem(ctx, pub, pk, 0);
	if (!r)
		r = write_pem(ctx, priv, pk, 1);
out:
	if (lockfd >= 0)
		close(lockfd);
	EVP_PKEY_free(pk);
	free(priv);
	free(pub);
	return r;
}

static int load_key(struct nf_ctx *ctx, const char *path, int priv,
		    EVP_PKEY **out)
{
	char *buf;
	size_t len;
	BIO *b;
	EVP_PKEY *pk;
	int r = nf_read_file(ctx, path, NF_KEY_MAX, &buf, &len);

	if (r)
		return r;
	b = BIO_new_mem_buf(buf, (int)len);
	if (!b) {
		OPENSSL_cleanse(buf, len);
		free(buf);
		return -ENOMEM;
	}
	pk = priv ? PEM_read_bio_PrivateKey(b, NULL, NULL, NULL)
		  : PEM_read_bio_PUBKEY(b, NULL, NULL, NULL);
	BIO_free(b);
	OPENSSL_cleanse(buf, len);
	free(buf);
	if (!pk)
		return nf_fail(ctx, NF_E_PARSE, "cannot read %s key '%s'",
			       priv ? "a private" : "a public", path);
	if (EVP_PKEY_id(pk) != EVP_PKEY_ED25519) {
		EVP_PKEY_free(pk);
		return nf_fail(ctx, NF_E_INVALID, "'%s' is not an Ed25519 key",
			       path);
	}
	*out = pk;
	return 0;
}

/* The signature of buf: "ed25519 <128 hex digits>\n" into line */
int nf_sign_buf(struct nf_ctx *ctx, const char *name, const void *buf,
		size_t len, const char *key, char line[NF_SIG_LINE])
{
	EVP_PKEY *pk = NULL;
	EVP_MD_CTX *md = NULL;
	unsigned char sig[64];
	size_t siglen = sizeof(sig);
	int r;

	if ((r = load_key(ctx, key, 1, &pk)))
		return r;
	md = EVP_MD_CTX_new();
	if (!md || EVP_DigestSignInit(md, NULL, NULL, NULL, pk) != 1 ||
	    EVP_DigestSign(md, sig, &siglen, buf, len) != 1 || siglen != 64) {
		r = nf_fail(ctx, NF_E_EXTERNAL, "cannot sign '%s'", name);
	} else {
		memcpy(line, "ed25519 ", 8);
		hexify(sig, 64, line + 8);
		strcpy(line + 8 + 128, "\n");
	}
	EVP_MD_CTX_free(md);
	EVP_PKEY_free(pk);
	return r;
}

/* The signature file: nf_sign_buf's line in path.sig */
int nf_sign_file(struct nf_ctx *ctx, const char *path, const char *key)
{
	char *buf = NULL, *sigpath = NULL, line[NF_SIG_LINE];
	size_t len;
	int r;

	if ((r = nf_read_file(ctx, path, NF_MANIFEST_MAX, &buf, &len)) ||
	    (r = nf_sign_buf(ctx, path, buf, len, key, line)))
		goto out;
	sigpath = nf_asprintf("%s.sig", path);
	r = sigpath ? nf_write_atomic(ctx, sigpath, line, strlen(line), 0644)
		    : -ENOMEM;
out:
	free(buf);
	free(sigpath);
	return r;
}

/* The public half of the private key at `key`, PEM (*pem malloc'd) */
int nf_public_pem(struct nf_ctx *ctx, const char *key, char **pem, size_t *len)
{
	EVP_PKEY *pk = NULL;
	BIO *b;
	char *data;
	long n;
	int r;

	if ((r = load_key(ctx, key, 1, &pk)))
		return r;
	b = BIO_new(BIO_s_mem());
	if (!b || PEM_write_bio_PUBKEY(b, pk) != 1 ||
	    (n = BIO_get_mem_data(b, &data)) <= 0 ||
	    !(*pem = malloc((size_t)n + 1))) {
		r = -ENOMEM;
	} else {
		memcpy(*pem, data, (size_t)n);
		(*pem)[n] = '\0';
		*len = (size_t)n;
	}
	BIO_free(b);
	EVP_PKEY_free(pk);
	return r;
}

static int unhex(const char *s, unsigned char *out, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int v = 0;

		for (int k = 0; k < 2; k++) {
			char c = s[2 * i + k];

			v <<= 4;
			if (c >= '0' && c <= '9')
				v |= c - '0';
			else if (c >= 'a' && c <= 'f')
				v |= c - 'a' + 10;
			else
				return -1;
		}
		out[i] = (unsigned char)v;
	}
	return 0;
}

/* Before reading what it signs: a missing signature is refused without
 * reading a large file first */
int nf_sig_present(struct nf_ctx *ctx, const char *name, const char *sigpath)
{
	struct stat st;

	if (stat(sigpath, &st) == 0)
		return 0;
	if (errno == ENOENT)
		return nf_fail(ctx, NF_E_SIGNATURE, "'%s' is not signed: no '%s'",
			       name, sigpath);
	return nf_fail(ctx, -errno, "cannot read '%s': %s", sigpath,
		       strerror(errno));
}

/* The signature text `sig` (SLEN bytes, from `signame`: untrusted) over
 * buf, checked with the public key at `pubkey` */
int nf_sig_check(struct nf_ctx *ctx, const char *name, const void *buf,
		 size_t len, const char *signame, const char *sig, size_t slen,
		 const char *pubkey)
{
	EVP_PKEY *pk = NULL;
	EVP_MD_CTX *md = NULL;
	unsigned char raw[64];
	int r;

	while (slen && (sig[slen - 1] == '\n' || sig[slen - 1] == '\r'))
		slen--;
	if (slen != 8 + 128 || strncmp(sig, "ed25519 ", 8) ||
	    unhex(sig + 8, raw, 64))
		return nf_fail(ctx, NF_E_SIGNATURE,
			       "'%s' is not an ed25519 signature", signame);
	if ((r = load_key(ctx, pubkey, 0, &pk)))
		return r;
	md = EVP_MD_CTX_new();
	if (!md || EVP_DigestVerifyInit(md, NULL, NULL, NULL, pk) != 1)
		r = -ENOMEM;
	else if (EVP_DigestVerify(md, raw, 64, buf, len) != 1)
		r = nf_fail(ctx, NF_E_SIGNATURE,
			    "signature of '%s' does not verify with '%s'",
			    name, pubkey);
	EVP_MD_CTX_free(md);
	EVP_PKEY_free(pk);
	return r;
}

int nf_verify_buf(struct nf_ctx *ctx, const char *name, const void *buf,
		  size_t len, const char *sigpath, const char *pubkey)
{
	char *sbuf = NULL;
	size_t slen;
	int r;

	if ((r = nf_read_file(ctx, sigpath, NF_SIG_MAX, &sbuf, &slen))) {
		if (r == -ENOENT)
			r = nf_fail(ctx, NF_E_SIGNATURE,
				    "'%s' is not signed: no '%s'", name,
				    sigpath);
		return r;
	}
	r = nf_sig_check(ctx, name, buf, len, sigpath, sbuf, slen, pubkey);
	free(sbuf);
	return r;
}

int nf_verify_file(struct nf_ctx *ctx, const char *path, const char *sigpath,
		   const char *pubkey)
{
	char *buf;
	size_t len;
	int r = nf_sig_present(ctx, path, sigpath);

	if (!r)
		r = nf_read_file(ctx, path, NF_MANIFEST_MAX, &buf, &len);
	if (r)
		return r;
	r = nf_verify_buf(ctx, path, buf, len, sigpath, pubkey);
	free(buf);
	return r;
}

/* ===================================================== secrets: sealing
 * Random bytes, X25519 key pairs, sealed boxes and base64 for the
 * enrollment channel (lib/enroll.c) and munge keys (lib/secrets.c).
 *
 * A sealed box, "NFS1" | ephemeral X25519 public key (32) | ciphertext |
 * Poly1305 tag (16): the sender makes a fresh X25519 key pair, derives
 * key and nonce with HKDF-SHA256 from the shared secret (salt: both public
 * keys), and encrypts with ChaCha20-Poly1305 under the caller's AAD (the
 * enrollment binds the node name and the claim nonce there).  A fresh
 * ephemeral key per box makes the derived nonce unique. */

#include <limits.h>

#include <openssl/core_names.h>
#include <openssl/hmac.h>
#include <openssl/kdf.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#define SEAL_MAGIC "NFS1"
#define SEAL_TAG 16
#define SEAL_INFO "nodeforge seal v1"

int nf_random_bytes(struct nf_ctx *ctx, void *buf, size_t len)
{
	if (len > INT_MAX || RAND_bytes(buf, (int)len) != 1)
		return nf_fail(ctx, NF_E_EXTERNAL,
			       "cannot read %zu random bytes from OpenSSL", len);
	return 0;
}

void nf_wipe(void *buf, size_t len)
{
	if (buf && len)
		OPENSSL_cleanse(buf, len);
}

void nf_wipe_free(void *buf, size_t len)
{
	nf_wipe(buf, len);
	free(buf);
}

static int x25519_public(const uint8_t priv[NF_X25519_LEN],
			 uint8_t pub[NF_X25519_LEN])
{
	EVP_PKEY *pk = EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, NULL,
						    priv, NF_X25519_LEN);
	size_t n = NF_X25519_LEN;
	int ok;

	if (!pk)
		return -1;
	ok = EVP_PKEY_get_raw_public_key(pk, pub, &n) == 1 &&
	     n == NF_X25519_LEN;
	EVP_PKEY_free(pk);
	return ok ? 0 : -1;
}

int nf_x25519_keypair(struct nf_ctx *ctx, uint8_t priv[NF_X25519_LEN],
		      uint8_t pub[NF_X25519_LEN])
{
	int r = nf_random_bytes(ctx, priv, NF_X25519_LEN);

	if (r)
		return r;
	if (x25519_public(priv, pub)) {
		nf_wipe(priv, NF_X25519_LEN);
		return nf_fail(ctx, NF_E_EXTERNAL, "cannot make an X25519 key");
	}
	return 0;
}

/* X25519(priv, peer) then HKDF-SHA256 -> 32 key bytes + 12 nonce bytes */
static int seal_derive(const uint8_t priv[NF_X25519_LEN],
		       const uint8_t peer[NF_X25519_LEN],
		       const uint8_t eph_pub[NF_X25519_LEN],
		       const uint8_t node_pub[NF_X25519_LEN], uint8_t okm[44])
{
	EVP_PKEY *me = NULL, *them = NULL;
	EVP_PKEY_CTX *dc = NULL, *kc = NULL;
	uint8_t shared[NF_X25519_LEN], salt[2 * NF_X25519_LEN], zero = 0;
	size_t slen = sizeof(shared);
	int r = -1;

	me = EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, NULL, priv,
					  NF_X25519_LEN);
	them = EVP_PKEY_new_raw_public_key(EVP_PKEY_X25519, NULL, peer,
					   NF_X25519_LEN);
	if (!me || !them)
		goto out;
	dc = EVP_PKEY_CTX_new(me, NULL);
	if (!dc || EVP_PKEY_derive_init(dc) != 1 ||
	    EVP_PKEY_derive_set_peer(dc, them) != 1 ||
	    EVP_PKEY_derive(dc, shared, &slen) != 1 || slen != sizeof(shared))
		goto out;
	/* An all-zero shared secret means a low-order peer key */
	for (size_t i = 0; i < sizeof(shared); i++)
		zero |= shared[i];
	if (!zero)
		goto out;
	memcpy(salt, eph_pub, NF_X25519_LEN);
	memcpy(salt + NF_X25519_LEN, node_pub, NF_X25519_LEN);
	kc = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, NULL);
	if (!kc || EVP_PKEY_derive_init(kc) != 1 ||
	    EVP_PKEY_CTX_set_hkdf_md(kc, EVP_sha256()) != 1 ||
	    EVP_PKEY_CTX_set1_hkdf_salt(kc, salt, sizeof(salt)) != 1 ||
	    EVP_PKEY_CTX_set1_hkdf_key(kc, shared, sizeof(shared)) != 1 ||
	    EVP_PKEY_CTX_add1_hkdf_info(kc, (const unsigned char *)SEAL_INFO,
					sizeof(SEAL_INFO) - 1) != 1)
		goto out;
	slen = 44;
	if (EVP_PKEY_derive(kc, okm, &slen) != 1 || slen != 44)
		goto out;
	r = 0;
out:
	OPENSSL_cleanse(shared, sizeof(shared));
	EVP_PKEY_CTX_free(kc);
	EVP_PKEY_CTX_free(dc);
	EVP_PKEY_free(me);
	EVP_PKEY_free(them);
	return r;
}

/* ChaCha20-Poly1305, one shot; enc: 1 seal (writes the tag after out),
 * 0 open (reads the tag after in) */
static int aead(int enc, const uint8_t okm[44], const void *aad, size_t aadlen,
		const uint8_t *in, size_t len, uint8_t *out, uint8_t tag[16])
{
	EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
	int n = 0, ok = 0;

	if (!c || len > INT_MAX || aadlen > INT_MAX)
		goto out;
	if (EVP_CipherInit_ex(c, EVP_chacha20_poly1305(), NULL, NULL, NULL,
			      enc) != 1 ||
	    EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_SET_IVLEN, 12, NULL) != 1 ||
	    EVP_CipherInit_ex(c, NULL, NULL, okm, okm + 32, enc) != 1)
		goto out;
	if (!enc && EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_SET_TAG, SEAL_TAG,
					tag) != 1)
		goto out;
	if (aadlen && EVP_CipherUpdate(c, NULL, &n, aad, (int)aadlen) != 1)
		goto out;
	if (len && EVP_CipherUpdate(c, out, &n, in, (int)len) != 1)
		goto out;
	if (EVP_CipherFinal_ex(c, out + n, &n) != 1)
		goto out;
	if (enc && EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_GET_TAG, SEAL_TAG,
				       tag) != 1)
		goto out;
	ok = 1;
out:
	EVP_CIPHER_CTX_free(c);
	return ok ? 0 : -1;
}

int nf_seal(struct nf_ctx *ctx, const uint8_t pub[NF_X25519_LEN],
	    const void *aad, size_t aadlen, const void *pt, size_t len,
	    uint8_t **blob, size_t *bloblen)
{
	uint8_t eph[NF_X25519_LEN], eph_pub[NF_X25519_LEN], okm[44];
	size_t total;
	uint8_t *b;
	int r;

	if (len > NF_SEAL_MAX)
		return nf_fail(ctx, NF_E_LIMIT,
			       "cannot seal %zu bytes: more than %d", len,
			       NF_SEAL_MAX);
	if ((r = nf_x25519_keypair(ctx, eph, eph_pub)))
		return r;
	if (seal_derive(eph, pub, eph_pub, pub, okm)) {
		nf_wipe(eph, sizeof(eph));
		return nf_fail(ctx, NF_E_INVALID,
			       "cannot seal to this public key: not a usable "
			       "X25519 key");
	}
	nf_wipe(eph, sizeof(eph));
	total = 4 + NF_X25519_LEN + len + SEAL_TAG;
	if (!(b = malloc(total))) {
		nf_wipe(okm, sizeof(okm));
		return -ENOMEM;
	}
	memcpy(b, SEAL_MAGIC, 4);
	memcpy(b + 4, eph_pub, NF_X25519_LEN);
	r = aead(1, okm, aad, aadlen, pt, len, b + 4 + NF_X25519_LEN,
		 b + 4 + NF_X25519_LEN + len);
	nf_wipe(okm, sizeof(okm));
	if (r) {
		nf_wipe_free(b, total);
		return nf_fail(ctx, NF_E_EXTERNAL, "cannot seal: cipher failed");
	}
	*blob = b;
	*bloblen = total;
	return 0;
}

int nf_seal_open(struct nf_ctx *ctx, const uint8_t priv[NF_X25519_LEN],
		 const void *aad, size_t aadlen, const void *blob,
		 size_t bloblen, uint8_t **pt, size_t *len)
{
	const uint8_t *b = blob;
	uint8_t pub[NF_X25519_LEN], okm[44], tag[SEAL_TAG];
	size_t n;
	uint8_t *out;
	int r;

	if (bloblen < 4 + NF_X25519_LEN + SEAL_TAG ||
	    memcmp(b, SEAL_MAGIC, 4))
		return nf_fail(ctx, NF_E_PARSE,
			       "sealed box is malformed: %zu bytes", bloblen);
	n = bloblen - 4 - NF_X25519_LEN - SEAL_TAG;
	if (n > NF_SEAL_MAX)
		return nf_fail(ctx, NF_E_LIMIT,
			       "sealed box holds %zu bytes: more than %d", n,
			       NF_SEAL_MAX);
	if (x25519_public(priv, pub))
		return nf_fail(ctx, NF_E_INVALID, "cannot use the private key");
	if (seal_derive(priv, b + 4, b + 4, pub, okm))
		return nf_fail(ctx, NF_E_SIGNATURE,
			       "sealed box does not open: bad ephemeral key");
	/* +1: a zero-length payload still gets a buffer */
	if (!(out = malloc(n + 1))) {
		nf_wipe(okm, sizeof(okm));
		return -ENOMEM;
	}
	memcpy(tag, b + 4 + NF_X25519_LEN + n, SEAL_TAG);
	r = aead(0, okm, aad, aadlen, b + 4 + NF_X25519_LEN, n, out, tag);
	nf_wipe(okm, sizeof(okm));
	if (r) {
		nf_wipe_free(out, n + 1);
		return nf_fail(ctx, NF_E_SIGNATURE,
			       "sealed box does not open: tampered, or sealed "
			       "for another key, node or claim");
	}
	out[n] = 0;
	*pt = out;
	*len = n;
	return 0;
}

char *nf_b64_encode(const void *buf, size_t len)
{
	size_t n = 4 * ((len + 2) / 3) + 1;
	char *s;

	if (len > INT_MAX / 2 || !(s = malloc(n)))
		return NULL;
	EVP_EncodeBlock((unsigned char *)s, buf, (int)len);
	return s;
}

int nf_b64_decode(const char *s, size_t max, uint8_t **out, size_t *len)
{
	size_t n = strlen(s), pad = 0;
	uint8_t *b;
	int got;

	if (n % 4)
		return NF_E_PARSE;
	if (n / 4 * 3 > max + 2)
		return NF_E_LIMIT;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (c == '=') {
			if (i < n - 2)
				return NF_E_PARSE;
			pad++;
		} else if (pad || !((c >= 'A' && c <= 'Z') ||
				    (c >= 'a' && c <= 'z') ||
				    (c >= '0' && c <= '9') || c == '+' ||
				    c == '/')) {
			return NF_E_PARSE;
		}
	}
	if (!(b = malloc(n / 4 * 3 + 1)))
		return -ENOMEM;
	got = n ? EVP_DecodeBlock(b, (const unsigned char *)s, (int)n) : 0;
	if (got < 0 || (size_t)got < pad) {
		free(b);
		return NF_E_PARSE;
	}
	got -= (int)pad;
	if ((size_t)got > max) {
		nf_wipe_free(b, n / 4 * 3 + 1);
		return NF_E_LIMIT;
	}
	*out = b;
	*len = (size_t)got;
	return 0;
}

int nf_hmac_sha256(const void *key, size_t keylen, const void *data,
		   size_t len, uint8_t out[32])
{
	unsigned int n = 32;

	if (keylen > INT_MAX ||
	    !HMAC(EVP_sha256(), key, (int)keylen, data, len, out, &n) || n != 32)
		return NF_E_EXTERNAL;
	return 0;
}

int nf_memeq_ct(const void *a, const void *b, size_t len)
{
	return CRYPTO_memcmp(a, b, len) == 0;
}

/* ============================================== end of secrets: sealing */

/* ---- CMS (PKCS#7) detached signatures: the kernel's module signature */
#include <stdarg.h>

#include <openssl/cms.h>
#include <openssl/err.h>
#include <openssl/x509.h>

struct nf_cms_signer {
	EVP_PKEY *key;
	X509 *cert;
	char *what;
};

/* WHAT: DETAIL (printf): OpenSSL's reason */
__attribute__((format(printf, 3, 4)))
static int ssl_fail(struct nf_ctx *ctx, const char *what, const char *fmt, ...)
{
	char e[256] = "", d[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(d, sizeof(d), fmt, ap);
	va_end(ap);
	ERR_error_string_n(ERR_get_error(), e, sizeof(e));
	ERR_clear_error();
	return nf_fail(ctx, NF_E_INVALID, "%s: %s: %s", what, d,
		       *e ? e : "unknown error");
}

void nf_cms_signer_free(struct nf_cms_signer *s)
{
	if (!s)
		return;
	EVP_PKEY_free(s->key);
	X509_free(s->cert);
	free(s->what);
	free(s);
}

int nf_cms_signer_load(struct nf_ctx *ctx, const char *what, const void *key,
		       size_t klen, const char *keyname, const char *cert,
		       const char *certname, struct nf_cms_signer **out)
{
	struct nf_cms_signer *s = calloc(1, sizeof(*s));
	BIO *bio;
	FILE *f;
	int r = 0;

	*out = NULL;
	if (!s || !(s->what = strdup(what))) {
		free(s);
		return -ENOMEM;
	}
	bio = klen <= INT_MAX ? BIO_new_mem_buf(key, (int)klen) : NULL;
	s->key = bio ? PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL) : NULL;
	BIO_free(bio);
	if (!s->key) {
		r = ssl_fail(ctx, what, "%s is not a PEM private key", keyname);
		goto out;
	}
	if (!(f = fopen(cert, "re"))) {
		r = nf_fail(ctx, -errno, "%s: cannot read the certificate '%s': "
			    "%s", what, cert, strerror(errno));
		goto out;
	}
	s->cert = PEM_read_X509(f, NULL, NULL, NULL);
	fclose(f);
	if (!s->cert) {
		r = ssl_fail(ctx, what, "%s is not a PEM certificate", certname);
		goto out;
	}
	if (X509_check_private_key(s->cert, s->key) != 1) {
		r = ssl_fail(ctx, what, "the certificate does not match %s",
			     keyname);
		goto out;
	}
out:
	if (r)
		nf_cms_signer_free(s);
	else
		*out = s;
	return r;
}

int nf_cms_sign_detached(struct nf_ctx *ctx, const struct nf_cms_signer *s,
			 const char *name, const void *data, size_t len,
			 uint8_t **sig, size_t *siglen)
{
	unsigned flags = CMS_NOCERTS | CMS_BINARY | CMS_DETACHED | CMS_NOSMIMECAP;
	CMS_ContentInfo *cms = NULL;
	BIO *in = len <= INT_MAX ? BIO_new_mem_buf(data, (int)len) : NULL;
	BIO *der = BIO_new(BIO_s_mem());
	char *p = NULL;
	long n;
	int r = 0;

	*sig = NULL;
	if (!in || !der) {
		r = -ENOMEM;
		goto out;
	}
	/* no signed attributes: no signing time, so the same data and key
	 * give the same bytes */
	cms = CMS_sign(NULL, NULL, NULL, NULL, flags | CMS_PARTIAL | CMS_STREAM);
	if (!cms || !CMS_add1_signer(cms, s->cert, s->key, EVP_sha256(),
				     flags | CMS_NOATTR) ||
	    CMS_final(cms, in, NULL, flags) != 1 || i2d_CMS_bio(der, cms) != 1 ||
	    (n = BIO_get_mem_data(der, &p)) <= 0) {
		r = ssl_fail(ctx, s->what, "%s", name);
		goto out;
	}
	if (!(*sig = malloc((size_t)n))) {
		r = -ENOMEM;
		goto out;
	}
	memcpy(*sig, p, (size_t)n);
	*siglen = (size_t)n;
out:
	CMS_ContentInfo_free(cms);
	BIO_free(in);
	BIO_free(der);
	return r;
}
