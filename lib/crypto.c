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
	struct stat st;
	int r;

	if (!priv || !pub) {
		r = -ENOMEM;
		goto out;
	}
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		r = nf_fail(ctx, -errno, "cannot create '%s': %s", dir,
			    strerror(errno));
		goto out;
	}
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

/* The signature file: "ed25519 <128 hex digits>\n" */
int nf_sign_file(struct nf_ctx *ctx, const char *path, const char *key)
{
	EVP_PKEY *pk = NULL;
	EVP_MD_CTX *md = NULL;
	unsigned char sig[64];
	size_t siglen = sizeof(sig), len;
	char *buf = NULL, *sigpath = NULL, line[160];
	int r;

	if ((r = load_key(ctx, key, 1, &pk)))
		return r;
	if ((r = nf_read_file(ctx, path, NF_MANIFEST_MAX, &buf, &len)))
		goto out;
	md = EVP_MD_CTX_new();
	if (!md || EVP_DigestSignInit(md, NULL, NULL, NULL, pk) != 1 ||
	    EVP_DigestSign(md, sig, &siglen, (unsigned char *)buf, len) != 1 ||
	    siglen != 64) {
		r = nf_fail(ctx, NF_E_EXTERNAL, "cannot sign '%s'", path);
		goto out;
	}
	memcpy(line, "ed25519 ", 8);
	hexify(sig, 64, line + 8);
	strcat(line, "\n");
	sigpath = nf_asprintf("%s.sig", path);
	r = sigpath ? nf_write_atomic(ctx, sigpath, line, strlen(line), 0644)
		    : -ENOMEM;
out:
	EVP_MD_CTX_free(md);
	EVP_PKEY_free(pk);
	free(buf);
	free(sigpath);
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

int nf_verify_buf(struct nf_ctx *ctx, const char *name, const void *buf,
		  size_t len, const char *sigpath, const char *pubkey)
{
	EVP_PKEY *pk = NULL;
	EVP_MD_CTX *md = NULL;
	unsigned char sig[64];
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
	while (slen && (sbuf[slen - 1] == '\n' || sbuf[slen - 1] == '\r'))
		sbuf[--slen] = '\0';
	if (slen != 8 + 128 || strncmp(sbuf, "ed25519 ", 8) ||
	    unhex(sbuf + 8, sig, 64)) {
		r = nf_fail(ctx, NF_E_SIGNATURE,
			    "'%s' is not an ed25519 signature", sigpath);
		goto out;
	}
	if ((r = load_key(ctx, pubkey, 0, &pk)))
		goto out;
	md = EVP_MD_CTX_new();
	if (!md || EVP_DigestVerifyInit(md, NULL, NULL, NULL, pk) != 1) {
		r = -ENOMEM;
		goto out;
	}
	if (EVP_DigestVerify(md, sig, 64, buf, len) != 1)
		r = nf_fail(ctx, NF_E_SIGNATURE,
			    "signature of '%s' does not verify with '%s'",
			    name, pubkey);
out:
	EVP_MD_CTX_free(md);
	EVP_PKEY_free(pk);
	free(sbuf);
	return r;
}

int nf_verify_file(struct nf_ctx *ctx, const char *path, const char *sigpath,
		   const char *pubkey)
{
	char *buf;
	size_t len;
	int r = nf_read_file(ctx, path, NF_MANIFEST_MAX, &buf, &len);

	if (r)
		return r;
	r = nf_verify_buf(ctx, path, buf, len, sigpath, pubkey);
	free(buf);
	return r;
}
