/* SPDX-License-Identifier: MIT */
/*
 * Secrets on disk: munge keys, their fingerprints, and writing a secret
 * into a target root with the right owner and mode.  Every buffer that held
 * a secret is wiped before it is freed.
 */
#include "internal.h"

#include <ctype.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define PASSWD_MAX (4 << 20)
#define CONF_MAX (1 << 20)

int nf_secret_write_at(struct nf_ctx *ctx, int rootfd, const char *rel,
		       const void *buf, size_t len, unsigned mode, long uid,
		       long gid)
{
	return nf_root_write(ctx, rootfd, rel, buf, len, mode, uid, gid,
			     NF_ROOT_CREATE | NF_ROOT_FSYNC);
}

int nf_root_user(struct nf_ctx *ctx, const char *root, const char *user,
		 long *uid, long *gid)
{
	char *path, *buf = NULL, *line, *save = NULL;
	size_t ulen = strlen(user);
	int r;

	if (!ulen || strchr(user, ':') || strchr(user, '\n'))
		return nf_fail(ctx, NF_E_INVALID, "'%s' is not a user name",
			       user);
	path = nf_asprintf("%s/etc/passwd",
			   root && strcmp(root, "/") ? root : "");
	if (!path)
		return -ENOMEM;
	r = nf_read_file(ctx, path, PASSWD_MAX, &buf, NULL);
	if (r) {
		free(path);
		return r;
	}
	r = NF_E_NOTFOUND;
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *f[4] = { 0 }, *end;
		char *q = line;

		if (strncmp(line, user, ulen) || line[ulen] != ':')
			continue;
		for (int i = 0; i < 4 && q; i++) {
			f[i] = q;
			q = strchr(q, ':');
			if (q)
				*q++ = '\0';
		}
		if (!f[2] || !f[3] || !*f[2] || !*f[3]) {
			r = nf_fail(ctx, NF_E_PARSE, "bad entry for '%s' in '%s'",
				    user, path);
			break;
		}
		errno = 0;
		*uid = strtol(f[2], &end, 10);
		if (errno || *end || *uid < 0) {
			r = nf_fail(ctx, NF_E_PARSE, "bad uid of '%s' in '%s'",
				    user, path);
			break;
		}
		*gid = strtol(f[3], &end, 10);
		if (errno || *end || *gid < 0) {
			r = nf_fail(ctx, NF_E_PARSE, "bad gid of '%s' in '%s'",
				    user, path);
			break;
		}
		r = 0;
		break;
	}
	if (r == NF_E_NOTFOUND)
		nf_fail(ctx, r, "no user '%s' in '%s'", user, path);
	free(buf);
	free(path);
	return r;
}

int nf_secret_read(struct nf_ctx *ctx, const char *path, size_t max,
		   uint8_t **buf, size_t *len)
{
	struct stat st;
	uint8_t *b;
	size_t n = 0;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return nf_fail(ctx, -errno, "cannot read '%s': %s", path,
			       errno == ELOOP ? "is a symlink" : strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return nf_fail(ctx, NF_E_INVALID, "'%s' is not a regular file",
			       path);
	}
	if (st.st_mode & 077) {
		close(fd);
		return nf_fail(ctx, NF_E_UNSAFE,
			       "secret '%s' is readable by others (mode %04o): "
			       "chmod 0400 it", path,
			       (unsigned)(st.st_mode & 07777));
	}
	if ((unsigned long long)st.st_size > max) {
		close(fd);
		return nf_fail(ctx, NF_E_LIMIT, "'%s' is larger than %zu bytes",
			       path, max);
	}
	if (!(b = malloc((size_t)st.st_size + 1))) {
		close(fd);
		return -ENOMEM;
	}
	while (n < (size_t)st.st_size) {
		ssize_t got = read(fd, b + n, (size_t)st.st_size - n);

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			int e = got < 0 ? errno : EIO;

			close(fd);
			nf_wipe_free(b, (size_t)st.st_size + 1);
			return nf_fail(ctx, -e, "cannot read '%s': %s", path,
				       strerror(e));
		}
		n += (size_t)got;
	}
	close(fd);
	b[n] = 0;
	*buf = b;
	*len = n;
	return 0;
}

/* ------------------------------------------------------------ munge keys */

void nf_fingerprint(const void *buf, size_t len, char out[NF_FINGERPRINT_LEN])
{
	memcpy(out, "sha256:", 7);
	nf_sha256_hex(buf, len, out + 7);
}

/* The directory of a host path (which must exist) and the last component */
static int open_dir_of(struct nf_ctx *ctx, const char *path, int *dfd,
		       const char **base)
{
	const char *slash = strrchr(path, '/');
	char *dir;

	if (!*path || (slash && !slash[1]))
		return nf_fail(ctx, NF_E_INVALID, "'%s' names no file", path);
	dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path))
		    : strdup(".");
	if (!dir)
		return -ENOMEM;
	*dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (*dfd < 0) {
		int e = errno;

		nf_fail(ctx, -e, "cannot open directory '%s': %s", dir,
			strerror(e));
		free(dir);
		return -e;
	}
	free(dir);
	*base = slash ? slash + 1 : path;
	return 0;
}

int nf_munge_key_new(struct nf_ctx *ctx, const char *path, const char *owner,
		     char fp[NF_FINGERPRINT_LEN])
{
	uint8_t key[NF_MUNGE_KEY_LEN];
	long uid = -1, gid = -1;
	const char *base = NULL;
	struct stat st;
	int dfd = -1, r;

	if (owner && (r = nf_root_user(ctx, NULL, owner, &uid, &gid)))
		return r;
	if (lstat(path, &st) == 0)
		return nf_fail(ctx, -EEXIST,
			       "'%s' already exists: refusing to replace a key",
			       path);
	if ((r = open_dir_of(ctx, path, &dfd, &base)))
		return r;
	if ((r = nf_random_bytes(ctx, key, sizeof(key)))) {
		close(dfd);
		return r;
	}
	r = nf_secret_write_at(ctx, dfd, base, key, sizeof(key), 0400, uid,
			       gid);
	close(dfd);
	if (!r)
		nf_fingerprint(key, sizeof(key), fp);
	nf_wipe(key, sizeof(key));
	return r;
}

int nf_secret_replace(struct nf_ctx *ctx, const char *path, const void *buf,
		      size_t len, unsigned mode)
{
	long uid = -1, gid = -1;
	const char *base = NULL;
	struct stat st;
	int dfd = -1, r;

	if ((r = open_dir_of(ctx, path, &dfd, &base)))
		return r;
	if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (!S_ISREG(st.st_mode)) {
			close(dfd);
			return nf_fail(ctx, NF_E_INVALID,
				       "'%s' is not a regular file: not replaced",
				       path);
		}
		uid = (long)st.st_uid;
		gid = (long)st.st_gid;
		mode = st.st_mode & 07777;
	} else if (errno != ENOENT) {
		r = -errno;
		close(dfd);
		return nf_fail(ctx, r, "cannot stat '%s': %s", path,
			       strerror(-r));
	}
	r = nf_secret_write_at(ctx, dfd, base, buf, len, mode, uid, gid);
	close(dfd);
	return r;
}

int nf_munge_fingerprint_file(struct nf_ctx *ctx, const char *path,
			      char fp[NF_FINGERPRINT_LEN])
{
	uint8_t *key;
	size_t len;
	int r = nf_secret_read(ctx, path, NF_MUNGE_KEY_MAX, &key, &len);

	if (r)
		return r;
	nf_fingerprint(key, len, fp);
	nf_wipe_free(key, len + 1);
	return 0;
}

static int fp_same(const char *a, const char *b)
{
	if (!strncmp(a, "sha256:", 7))
		a += 7;
	if (!strncmp(b, "sha256:", 7))
		b += 7;
	return !strcmp(a, b);
}

const char *nf_munge_fingerprint_remedy(int verdict)
{
	switch (verdict) {
	case NF_MUNGE_FP_PREVIOUS:
		return "the node missed the last munge key rotation: on the "
		       "node run 'nodeforge enroll rotate' (or 'systemctl start "
		       "nodeforge-rotate.service'); 'nodeforge keys rotate munge "
		       "--status' on the boot server lists who switched";
	case NF_MUNGE_FP_OTHER:
		return "the node holds a munge key the site does not know: on "
		       "the boot server run 'nodeforge enroll open NODE --for "
		       "15m --reenroll', then on the node 'systemctl restart "
		       "nodeforge-enroll.service munge.service'";
	case NF_MUNGE_FP_MISSING:
		return "the node never enrolled: on the boot server run "
		       "'nodeforge enroll open NODE --for 15m', then on the "
		       "node 'systemctl restart nodeforge-enroll.service "
		       "munge.service'";
	default:
		return "";
	}
}

int nf_munge_fingerprint_verdict(struct nf_ctx *ctx, const char *path,
				 const char *expected, const char *previous,
				 char seen[NF_FINGERPRINT_LEN])
{
	int r = nf_munge_fingerprint_file(ctx, path, seen);

	if (r == -ENOENT) {
		seen[0] = '\0';
		nf_fail(ctx, NF_E_NOTFOUND, "no munge key at '%s'", path);
		return NF_MUNGE_FP_MISSING;
	}
	if (r)
		return r;
	if (fp_same(seen, expected))
		return NF_MUNGE_FP_OK;
	if (previous && *previous && fp_same(seen, previous)) {
		nf_fail(ctx, NF_E_CHECKSUM,
			"munge key '%s' is the previous key %s, not %s", path,
			seen, expected);
		return NF_MUNGE_FP_PREVIOUS;
	}
	nf_fail(ctx, NF_E_CHECKSUM, "munge key '%s' is %s, not %s", path, seen,
		expected);
	return NF_MUNGE_FP_OTHER;
}

/* ------------------------------------------------------ slurmdbd.conf */

int nf_password_ok(const char *pw, size_t len)
{
	if (!len || len > NF_PASSWORD_MAX || strlen(pw) != len)
		return 0;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)pw[i];

		/* slurm's parser: '#' starts a comment, no line breaks */
		if (c < 0x20 || c == 0x7f || c == '#')
			return 0;
	}
	return pw[0] != ' ' && pw[len - 1] != ' ';
}

int nf_slurmdbd_set_password(struct nf_ctx *ctx, int rootfd, const char *rel,
			     const char *pw, long uid, long gid)
{
	char base[NAME_MAX + 1];
	char *old = NULL, *out = NULL;
	size_t oldlen = 0, outcap, outlen = 0, pwlen = strlen(pw);
	int dfd, fd, r, done = 0;

	if (!nf_password_ok(pw, pwlen))
		return nf_fail(ctx, NF_E_INVALID,
			       "slurmdbd password has a character slurmdbd.conf "
			       "cannot hold (control, '#', edge space) or is "
			       "empty or too long");
	dfd = nf_root_parent(ctx, rootfd, rel, NF_ROOT_CREATE, base,
			     sizeof(base));
	if (dfd < 0)
		return dfd;
	fd = openat(dfd, base, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0) {
		struct stat st;

		if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
		    st.st_size > CONF_MAX) {
			close(fd);
			close(dfd);
			return nf_fail(ctx, NF_E_INVALID,
				       "'%s' is not a regular file under %d bytes",
				       rel, CONF_MAX);
		}
		old = malloc((size_t)st.st_size + 1);
		if (!old) {
			close(fd);
			close(dfd);
			return -ENOMEM;
		}
		while (oldlen < (size_t)st.st_size) {
			ssize_t n = read(fd, old + oldlen,
					 (size_t)st.st_size - oldlen);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break;
			oldlen += (size_t)n;
		}
		old[oldlen] = '\0';
		close(fd);
	} else if (errno != ENOENT) {
		r = -errno;
		close(dfd);
		return nf_fail(ctx, r, "cannot read '%s': %s", rel,
			       strerror(-r));
	}
	close(dfd);
	outcap = oldlen + pwlen + 32;
	if (!(out = malloc(outcap))) {
		nf_wipe_free(old, oldlen + 1);
		return -ENOMEM;
	}
	/* Keep every line but StoragePass=; put ours where the first was */
	for (size_t i = 0; i < oldlen;) {
		size_t e = i;
		const char *l = old + i;

		while (e < oldlen && old[e] != '\n')
			e++;
		while (*l == ' ' || *l == '\t')
			l++;
		if (!strncasecmp(l, "StoragePass", 11) &&
		    (l[11] == '=' || l[11] == ' ' || l[11] == '\t')) {
			if (!done)
				outlen += (size_t)sprintf(out + outlen,
							  "StoragePass=%s\n", pw);
			done = 1;
		} else {
			memcpy(out + outlen, old + i, e - i);
			outlen += e - i;
			out[outlen++] = '\n';
		}
		i = e + 1;
	}
	if (!done)
		outlen += (size_t)sprintf(out + outlen, "StoragePass=%s\n", pw);
	r = nf_secret_write_at(ctx, rootfd, rel, out, outlen, 0600, uid, gid);
	nf_wipe_free(old, oldlen + 1);
	nf_wipe_free(out, outcap);
	return r;
}
