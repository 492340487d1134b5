/* SPDX-License-Identifier: MIT */
/* libnodeforge's private declarations: pack, manifests, signatures, the zstd stream.
 * Included by internal.h; not meant to be included alone. */
#ifndef NF_INTERNAL_PACK_H
#define NF_INTERNAL_PACK_H

/* ---- pack, manifests, signatures (lib/pack.c, manifest.c, unpack.c;
 * lib/adapters/archive.c, crypto.c) ---- */

/* Streaming SHA-256 (OpenSSL EVP) */
struct nf_sha256;
int nf_sha256_new(struct nf_sha256 **out);
void nf_sha256_update(struct nf_sha256 *h, const void *buf, size_t len);
void nf_sha256_final_hex(struct nf_sha256 *h, char out[NF_SHA256_HEX]);
void nf_sha256_free(struct nf_sha256 *h);
/* sha256 of an open file's remaining content, capped at `max` bytes */
int nf_sha256_fd(struct nf_ctx *ctx, int fd, const char *name,
		 char out[NF_SHA256_HEX], unsigned long long *size);

/* One archive entry, independent of libarchive */
struct nf_aentry {
	const char *path;
	mode_t mode;                  /* type and permission bits */
	unsigned long uid, gid;
	long long size;
	long long mtime;
	unsigned long long ino;
	unsigned nlink;
	unsigned long rdev_major, rdev_minor;
	const char *symlink;          /* symlink target */
	const char *hardlink;         /* hard link to an earlier entry */
	size_t nxattr;
	const char *const *xattr_names;
	const void *const *xattr_values;
	const size_t *xattr_sizes;
};

/* Writer: the (compressed) stream goes to write_fn */
struct nf_awriter;
typedef int (*nf_awrite_fn)(void *data, const void *buf, size_t len);
int nf_awriter_new(struct nf_ctx *ctx, int format, int compressor, int level,
		   int threads, nf_awrite_fn fn, void *data,
		   struct nf_awriter **out);
int nf_awriter_header(struct nf_awriter *w, const struct nf_aentry *e);
int nf_awriter_data(struct nf_awriter *w, const void *buf, size_t len);
/* Flushes and ends the archive; frees w */
int nf_awriter_close(struct nf_awriter *w);
void nf_awriter_free(struct nf_awriter *w);

/* Reader (tar or cpio, zstd/gzip/none, detected); entry strings borrow
 * until the next call */
struct nf_areader;
int nf_areader_open_fd(struct nf_ctx *ctx, int fd, struct nf_areader **out);
int nf_areader_open_mem(struct nf_ctx *ctx, const void *buf, size_t len,
			struct nf_areader **out);
/* 1: an entry, 0: end, < 0: error */
int nf_areader_next(struct nf_areader *r, struct nf_aentry *e);
/* Bytes of the current entry's content: > 0, 0 at its end, < 0 error */
ssize_t nf_areader_data(struct nf_areader *r, void *buf, size_t len);
void nf_areader_free(struct nf_areader *r);

#define NF_MANIFEST_MAX (512ULL << 20)
/* nf_manifest_parse's checks without keeping the entries: the top-level
 * members other than "entries" as an object (lib/manifest.c) */
int nf_manifest_scan(struct nf_ctx *ctx, const char *buf, size_t len,
		     json_t **out);
#define NF_XATTR_VALUE_MAX 65536
#define NF_XATTR_MAX 64

/* A detached CMS (PKCS#7) signer: a PEM private key (KEY, KLEN bytes)
 * and the PEM certificate at CERT, which must match; WHAT prefixes the
 * messages, KEYNAME and CERTNAME say where each came from */
struct nf_cms_signer;
int nf_cms_signer_load(struct nf_ctx *ctx, const char *what, const void *key,
		       size_t klen, const char *keyname, const char *cert,
		       const char *certname, struct nf_cms_signer **out);
void nf_cms_signer_free(struct nf_cms_signer *s);
/* DER SignedData over DATA: SHA-256, issuer and serial, no certificates
 * and no signed attributes (reproducible); *sig is malloc'd */
int nf_cms_sign_detached(struct nf_ctx *ctx, const struct nf_cms_signer *s,
			 const char *name, const void *data, size_t len,
			 uint8_t **sig, size_t *siglen);
/* Ed25519 signature in `sigpath` over buf (lib/adapters/crypto.c) */
int nf_sig_present(struct nf_ctx *ctx, const char *name, const char *sigpath);
int nf_verify_buf(struct nf_ctx *ctx, const char *name, const void *buf,
		  size_t len, const char *sigpath, const char *pubkey);
/* The same with the signature's text in memory (SLEN bytes, capped by
 * the caller; `signame` says where it came from): NF_E_SIGNATURE when it
 * is no signature or not one by `pubkey` */
int nf_sig_check(struct nf_ctx *ctx, const char *name, const void *buf,
		 size_t len, const char *signame, const char *sig, size_t slen,
		 const char *pubkey);
/* A signature file's line, "ed25519 <128 hex digits>\n", NUL-terminated */
#define NF_SIG_LINE (8 + 128 + 2)
int nf_sign_buf(struct nf_ctx *ctx, const char *name, const void *buf,
		size_t len, const char *key, char line[NF_SIG_LINE]);
/* The public half (PEM, malloc'd) of the Ed25519 private key at `key` */
int nf_public_pem(struct nf_ctx *ctx, const char *key, char **pem, size_t *len);

/* Remove a tree below dirfd without following symlinks */
int nf_rm_tree_at(int dirfd, const char *name);

/* ---- end of pack, manifests, signatures ---- */

/* ---- zstd stream (lib/adapters/zstd.c) ---- */
/* Multi-threaded zstd (threads <= 0: one per CPU; the bytes do not depend
 * on it); compressed output goes to fn */
struct nf_zstd;
int nf_zstd_new(struct nf_ctx *ctx, int level, int threads, nf_awrite_fn fn,
		void *data, struct nf_zstd **out);
int nf_zstd_write(struct nf_zstd *z, const void *buf, size_t len);
/* Room for the next bytes of the stream (never empty): content read into
 * it and then passed to nf_zstd_write() is not copied again */
void *nf_zstd_buffer(struct nf_zstd *z, size_t *len);
/* Ends the frame and flushes it; frees z */
int nf_zstd_close(struct nf_zstd *z);
void nf_zstd_free(struct nf_zstd *z);
/* The writer's nf_zstd_buffer(), or NULL when it has none (not zstd): for
 * content passed to nf_awriter_data() unchanged */
void *nf_awriter_buffer(struct nf_awriter *w, size_t *len);
/* ---- end of zstd stream ---- */

#endif
