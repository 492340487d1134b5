/* SPDX-License-Identifier: MIT */
/*
 * The end of a build: the kernel copied out, archives named by their
 * content, and everything renamed into OUT/ROLE with ROLE.current
 * replaced last, so a reader sees the old image or the new one whole.
 */
#include "build_int.h"

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---------------------------------------------------------------- pack */

int nf_bld_copy_file(struct nf_ctx *ctx, const char *from, const char *to)
{
	char buf[1 << 16];
	int in, out, r = 0;
	ssize_t n;

	in = open(from, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (in < 0)
		return nf_fail(ctx, -errno, "cannot read '%s': %s", from,
			       strerror(errno));
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (out < 0) {
		r = -errno;
		close(in);
		return nf_fail(ctx, r, "cannot write '%s': %s", to, strerror(-r));
	}
	while ((n = read(in, buf, sizeof(buf))) > 0) {
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(out, buf + off, (size_t)(n - off));

			if (w < 0) {
				r = -errno;
				goto done;
			}
			off += w;
		}
	}
	if (n < 0)
		r = -errno;
	else if (fsync(out) < 0)
		r = -errno;
done:
	close(in);
	if (close(out) < 0 && !r)
		r = -errno;
	if (r)
		return nf_fail(ctx, r, "cannot copy '%s' to '%s': %s", from, to,
			       strerror(-r));
	return 0;
}

/* Rename a packed archive to its content-addressed name and rewrite its
 * manifest's archive.name to match; returns the manifest */
int nf_bld_name_archive(struct build *b, const char *tmpname,
			const char *final, const char *manifest_final,
			char sha[NF_SHA256_HEX])
{
	char from[PATH_MAX * 2], to[PATH_MAX * 2], mfrom[PATH_MAX * 2];
	json_t *m = NULL, *arch;
	char *doc;
	int r;

	snprintf(from, sizeof(from), "%s/%s", b->stage, tmpname);
	snprintf(mfrom, sizeof(mfrom), "%s.manifest.json", from);
	if ((r = nf_manifest_load(b->ctx, mfrom, &m)))
		return r;
	arch = json_object_get(m, "archive");
	if (sha)
		snprintf(sha, NF_SHA256_HEX, "%s",
			 json_string_value(json_object_get(arch, "sha256")) ?: "");
	json_object_set_new(arch, "name", json_string(final));
	json_object_set_new(m, "role", json_string(b->role));
	doc = json_dumps(m, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
	json_decref(m);
	if (!doc)
		return -ENOMEM;
	snprintf(to, sizeof(to), "%s/%s", b->stage, manifest_final);
	r = nf_write_atomic(b->ctx, to, doc, strlen(doc), 0644);
	free(doc);
	if (r)
		return r;
	unlink(mfrom);
	snprintf(to, sizeof(to), "%s/%s", b->stage, final);
	if (rename(from, to) < 0)
		return nf_fail(b->ctx, -errno, "cannot rename '%s': %s", from,
			       strerror(errno));
	return 0;
}

/* -------------------------------------------------------------- publish */

static int fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	fsync(fd);
	close(fd);
	return 0;
}

int nf_bld_publish(struct build *b, const char *const *names, size_t n,
		   struct nf_build_result *res, const char *ikey)
{
	char from[PATH_MAX * 2], to[PATH_MAX * 2], ptr[PATH_MAX + 64];
	json_t *j;
	char *doc;
	int r;

	for (size_t i = 0; i < n; i++) {
		snprintf(from, sizeof(from), "%s/%s", b->stage, names[i]);
		snprintf(to, sizeof(to), "%s/%s", b->out, names[i]);
		if (rename(from, to) < 0)
			return nf_fail(b->ctx, -errno, "cannot publish '%s': %s",
				       to, strerror(errno));
	}
	fsync_dir(b->out);
	j = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s}",
		      "role", b->role,
		      "kernel", res->kernel, "initramfs", res->initramfs,
		      "rootfs", res->rootfs, "rootfs_sha256", res->rootfs_sha256,
		      "manifest", res->manifest, "inputs_sha256", ikey);
	if (!j)
		return -ENOMEM;
	if (*b->liveimg &&
	    (json_object_set_new(j, "liveimg", json_string(b->liveimg)) ||
	     json_object_set_new(j, "liveimg_sha256",
				 json_string(b->liveimg_sha256)))) {
		json_decref(j);
		return -ENOMEM;
	}
	doc = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(j);
	if (!doc)
		return -ENOMEM;
	snprintf(ptr, sizeof(ptr), "%s/%s.current", b->out, b->role);
	size_t len = strlen(doc);
	char *full = nf_asprintf("%s\n", doc);

	free(doc);
	if (!full)
		return -ENOMEM;
	r = nf_write_atomic(b->ctx, ptr, full, len + 1, 0644);
	free(full);
	return r;
}

