/* SPDX-License-Identifier: MIT */
/*
 * Kernel modules the image builds (kernel.built_modules: directories under
 * /lib/modules/KVER/), signed with the site's key or left unsigned, as the
 * site file says (module_signing: sign: true with cert:, and the key in
 * secrets.module_signing_key; or sign: false).  Signing happens here, on
 * the build host, after the artifacts stage: the private key is read from
 * the boot server's secrets side into wiped memory and never enters the
 * image root or the cached artifacts tarball.
 *
 * The signature is the kernel's appended one, as its scripts/sign-file
 * writes it: a detached CMS (PKCS#7) SignedData over the module, DER, no
 * certificates and no signed attributes (so no signing time: the same
 * module and key give the same bytes), then struct module_signature with
 * id_type PKEY_ID_PKCS7 and the signature's length (big-endian), then
 * "~Module signature appended~\n".
 */
#include "build_int.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>


#define MODSIG_MAGIC "~Module signature appended~\n"
#define MODSIG_MAX (256ULL << 20)

/* include/linux/module_signature.h */
struct modsig {
	uint8_t algo, hash, id_type, signer_len, key_id_len, pad[3];
	uint8_t sig_len[4];   /* big-endian */
};

static const json_t *signing(const struct build *b)
{
	return json_object_get(json_object_get(b->prof, "site"), "module_signing");
}

int nf_bld_check_module_signing(struct build *b)
{
	const json_t *dirs = nf_profile_get(b->prof, "kernel.built_modules");
	const json_t *ms = signing(b);

	if (!json_array_size(dirs))
		return 0;
	if (!ms)
		return nf_fail(b->ctx, NF_E_INVALID, "role '%s' builds kernel "
			       "modules (kernel.built_modules) and the site file "
			       "does not say how they are signed: 'module_signing: "
			       "{sign: true, cert: CERT.pem}' with the key in "
			       "secrets.module_signing_key.path, or "
			       "'module_signing: {sign: false}' (unsigned: a "
			       "kernel that enforces signatures will not load them)",
			       b->role);
	if (!json_is_true(json_object_get(ms, "sign")))
		return 0;
	if (!json_object_get(ms, "cert") || !*b->modkey)
		return nf_fail(b->ctx, NF_E_INVALID, "module_signing: sign: true "
			       "needs 'cert' (the X.509 certificate, PEM) and "
			       "secrets.module_signing_key.path (its private key, "
			       "PEM, mode 0600) in the site file");
	{
		const char *cert = json_string_value(json_object_get(ms, "cert"));
		int fd = open(cert, O_RDONLY | O_CLOEXEC), r;

		if (fd < 0)
			return nf_fail(b->ctx, -errno, "module signing: cannot "
				       "read the certificate '%s': %s", cert,
				       strerror(errno));
		r = nf_sha256_fd(b->ctx, fd, cert, b->modcert, NULL);
		close(fd);
		return r;
	}
}

/* The site's key (from its secrets, into wiped memory) and certificate */
static int load_signer(struct build *b, struct nf_cms_signer **s)
{
	const char *cert = json_string_value(json_object_get(signing(b), "cert"));
	uint8_t *kb = NULL;
	size_t klen = 0;
	int r;

	if ((r = nf_secret_read(b->ctx, b->modkey, 64 * 1024, &kb, &klen)))
		return r;
	r = nf_cms_signer_load(b->ctx, "module signing", kb, klen,
			       "secrets.module_signing_key", cert,
			       "module_signing.cert", s);
	nf_wipe_free(kb, klen + 1);
	return r;
}

/* The module's bytes with the signature appended, into *out */
static int sign_buf(struct build *b, const struct nf_cms_signer *s,
		    const char *name, const char *mod, size_t len, char **out,
		    size_t *outlen)
{
	struct modsig ms = { .id_type = 2 /* PKEY_ID_PKCS7 */ };
	uint8_t *sig = NULL;
	size_t slen = 0;
	char *o;
	int r;

	if ((r = nf_cms_sign_detached(b->ctx, s, name, mod, len, &sig, &slen)))
		return r;
	if (slen > 0xffffffffUL) {
		free(sig);
		return nf_fail(b->ctx, NF_E_LIMIT, "module signing: %s: the "
			       "signature is too large", name);
	}
	ms.sig_len[0] = (uint8_t)(slen >> 24);
	ms.sig_len[1] = (uint8_t)(slen >> 16);
	ms.sig_len[2] = (uint8_t)(slen >> 8);
	ms.sig_len[3] = (uint8_t)slen;
	*outlen = len + slen + sizeof(ms) + strlen(MODSIG_MAGIC);
	if (!(o = malloc(*outlen))) {
		free(sig);
		return -ENOMEM;
	}
	memcpy(o, mod, len);
	memcpy(o + len, sig, slen);
	memcpy(o + len + slen, &ms, sizeof(ms));
	memcpy(o + len + slen + sizeof(ms), MODSIG_MAGIC, strlen(MODSIG_MAGIC));
	free(sig);
	*out = o;
	return 0;
}

/* Sign every *.ko of ROOT/lib/modules/KVER/DIR */
static int sign_dir(struct build *b, int rootfd,
		    const struct nf_cms_signer *s,
		    const char *rel, int *n)
{
	int dfd = nf_openat_root(rootfd, rel, O_RDONLY | O_DIRECTORY);
	struct dirent *de;
	DIR *d;
	int r = 0;

	if (dfd < 0)
		return dfd == -ENOENT ? 0 : nf_fail(b->ctx, dfd, "cannot open "
						    "'%s' in the image: %s", rel,
						    strerror(-dfd));
	if (!(d = fdopendir(dfd))) {
		int e = errno;

		close(dfd);
		return nf_fail(b->ctx, -e, "cannot list '%s' in the image: %s",
			       rel, strerror(e));
	}
	while (!r && (de = readdir(d))) {
		size_t nl = strlen(de->d_name), len = 0, slen = 0;
		char path[PATH_MAX], proc[64], *mod = NULL, *signed_mod = NULL;
		struct stat st;
		int fd;

		if (nl < 4 || strcmp(de->d_name + nl - 3, ".ko"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", rel, de->d_name);
		fd = openat(dirfd(d), de->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
			r = nf_fail(b->ctx, NF_E_UNSAFE, "module '%s' is not a "
				    "regular file", path);
			if (fd >= 0)
				close(fd);
			break;
		}
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
		r = nf_read_file(b->ctx, proc, MODSIG_MAX, &mod, &len);
		close(fd);
		if (r)
			break;
		if (len >= strlen(MODSIG_MAGIC) &&
		    !memcmp(mod + len - strlen(MODSIG_MAGIC), MODSIG_MAGIC,
			    strlen(MODSIG_MAGIC))) {
			free(mod);
			r = nf_fail(b->ctx, NF_E_CONFLICT, "module '%s' is "
				    "signed already: the artifact that builds it "
				    "must leave it unsigned", path);
			break;
		}
		if (!(r = sign_buf(b, s, path, mod, len, &signed_mod, &slen)))
			r = nf_root_write_in(b->ctx, dirfd(d), de->d_name, path,
					     signed_mod, slen, st.st_mode & 07777,
					     (long)st.st_uid, (long)st.st_gid, 0);
		free(mod);
		free(signed_mod);
		if (!r)
			(*n)++;
	}
	closedir(d);
	return r;
}

int nf_bld_sign_modules(struct build *b, int rootfd)
{
	const json_t *dirs = nf_profile_get(b->prof, "kernel.built_modules");
	struct nf_cms_signer *s = NULL;
	int kfd, r = 0, n = 0;
	struct dirent *de;
	char msg[160];
	size_t i;
	json_t *v;
	DIR *d;

	/* the site's choice was checked before anything was fetched
	 * (nf_bld_check_module_signing) */
	if (!json_array_size(dirs))
		return 0;
	if (!json_is_true(json_object_get(signing(b), "sign"))) {
		nf_bld_note(b, "kernel modules left unsigned (module_signing: "
			    "sign: false)");
		return 0;
	}
	if ((r = load_signer(b, &s)))
		goto out;
	if ((kfd = nf_openat_root(rootfd, "/lib/modules", O_RDONLY | O_DIRECTORY)) < 0) {
		r = nf_fail(b->ctx, kfd, "kernel.built_modules: the image has no "
			    "/lib/modules: %s", strerror(-kfd));
		goto out;
	}
	if (!(d = fdopendir(kfd))) {
		int e = errno;

		close(kfd);
		r = nf_fail(b->ctx, -e, "cannot list /lib/modules of the image: "
			    "%s", strerror(e));
		goto out;
	}
	while (!r && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		json_array_foreach(dirs, i, v) {
			char rel[PATH_MAX];
			const char *dir = json_string_value(v);

			if (!dir || strstr(dir, "..") || *dir == '/')
				continue;
			snprintf(rel, sizeof(rel), "/lib/modules/%s/%s", de->d_name, dir);
			if ((r = sign_dir(b, rootfd, s, rel, &n)))
				break;
		}
	}
	closedir(d);
	if (!r && !n)
		r = nf_fail(b->ctx, NF_E_NOTFOUND, "kernel.built_modules: no *.ko "
			    "in /lib/modules/*/ of those directories: nothing to "
			    "sign (did the artifact that builds them run?)");
	if (!r) {
		snprintf(msg, sizeof(msg), "%d kernel module%s signed with the "
			 "site's key", n, n == 1 ? "" : "s");
		nf_bld_note(b, msg);
	}
out:
	nf_cms_signer_free(s);
	return r;
}
