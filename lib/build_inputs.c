/* SPDX-License-Identifier: MIT */
/*
 * What a build's image depends on, as one hash: the bootstrap's key, the
 * resolved profile, the cluster's nodes, the module signing certificate,
 * the nodeforge that goes into the image, the signing key and every
 * overlay's tree.  A build whose hash ROLE.current already names, with
 * its files there, has nothing to do.
 */
#include "build_int.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* An overlay's tree into the inputs' hash: each entry's path, mode and
 * content (a symlink's target), in the walk's bytewise order */
struct ov_hash {
	struct nf_ctx *ctx;
	struct nf_sha256 *h;
};

static int ov_hash_cb(void *data, const struct nf_walk_entry *e)
{
	struct ov_hash *oh = data;
	struct nf_sha256 *h = oh->h;
	char link[PATH_MAX];
	char hex[NF_SHA256_HEX];
	char line[PATH_MAX + 128];
	unsigned long long sz;

	snprintf(line, sizeof(line), "/%s\n%o\n", e->rel, e->st->st_mode);
	nf_sha256_update(h, line, strlen(line));
	if (S_ISLNK(e->st->st_mode)) {
		ssize_t n = readlinkat(e->dfd, e->name, link, sizeof(link) - 1);

		if (n >= 0)
			nf_sha256_update(h, link, (size_t)n);
	} else if (S_ISREG(e->st->st_mode)) {
		int fd = openat(e->dfd, e->name, O_RDONLY | O_NOFOLLOW |
				O_CLOEXEC);
		int r;

		if (fd < 0)
			return nf_fail(oh->ctx, -errno, "cannot read overlay "
				       "'%s': %s", e->path, strerror(errno));
		r = nf_sha256_fd(oh->ctx, fd, e->path, hex, &sz);
		close(fd);
		if (r)
			return r;
		nf_sha256_update(h, hex, strlen(hex));
	}
	return 0;
}

static const struct nf_walk_ops ov_hash_ops = { .enter = ov_hash_cb };

/* Overlays applied, in order: common, the role's own, system.overlays */
int nf_bld_overlay_list(struct build *b)
{
	const json_t *names = json_object_get(json_object_get(b->prof, "system"),
					      "overlays");
	char p[PATH_MAX * 2];
	size_t i;
	json_t *n;

	b->overlay_names = json_array();
	if (!b->overlay_names)
		return -ENOMEM;
	snprintf(p, sizeof(p), "%s/common", b->overlays);
	if (nf_bld_file_exists(p))
		json_array_append_new(b->overlay_names, json_string("common"));
	snprintf(p, sizeof(p), "%s/%s", b->overlays, b->role);
	if (nf_bld_file_exists(p))
		json_array_append_new(b->overlay_names, json_string(b->role));
	json_array_foreach(names, i, n) {
		const char *s = json_string_value(n);

		if (!s || !*s || strchr(s, '/') || !strcmp(s, ".") ||
		    !strcmp(s, ".."))
			return nf_fail(b->ctx, NF_E_UNSAFE, "overlay name '%s' "
				       "must be a plain directory name", s ? s : "");
		snprintf(p, sizeof(p), "%s/%s", b->overlays, s);
		if (!nf_bld_file_exists(p))
			return nf_fail(b->ctx, NF_E_NOTFOUND, "overlay '%s' "
				       "(system.overlays) not found: no directory "
				       "'%s'", s, p);
		json_array_append_new(b->overlay_names, json_string(s));
	}
	return 0;
}

int nf_bld_inputs_key(struct build *b, const char *bkey, char out[NF_SHA256_HEX])
{
	char *doc = json_dumps(b->prof, JSON_SORT_KEYS | JSON_COMPACT);
	char line[PATH_MAX * 2 + 64];
	size_t i;
	json_t *n;
	int r = 0;
	struct nf_sha256 *ov_hash = NULL;

	if (!doc || nf_sha256_new(&ov_hash)) {
		free(doc);
		return -ENOMEM;
	}
	snprintf(line, sizeof(line), "nodeforge-image-v1\n%s\n%s\nepoch=%lld\n",
		 NF_VERSION, bkey, b->epoch);
	nf_sha256_update(ov_hash, line, strlen(line));
	nf_sha256_update(ov_hash, doc, strlen(doc));
	free(doc);
	if (b->nodes) {
		if (!(doc = json_dumps(b->nodes, JSON_SORT_KEYS | JSON_COMPACT)))
			return -ENOMEM;
		nf_sha256_update(ov_hash, "nodes=", 6);
		nf_sha256_update(ov_hash, doc, strlen(doc));
		free(doc);
	}
	/* the certificate the modules are signed with (its key with it) */
	if (*b->modcert) {
		nf_sha256_update(ov_hash, "modcert=", 8);
		nf_sha256_update(ov_hash, b->modcert, strlen(b->modcert));
	}
	/* nodeforge itself goes into the image */
	{
		char hex[NF_SHA256_HEX];
		int r2 = nf_bld_self_sha256(b, hex);

		if (r2) {
			nf_sha256_free(ov_hash);
			return r2;
		}
		const char *tag = b->self_host ? "self=host:" : "self=pkg:";

		nf_sha256_update(ov_hash, tag, strlen(tag));
		nf_sha256_update(ov_hash, hex, strlen(hex));
	}
	/* the signing key's public half: another key, another image */
	if (!nf_read_file(b->ctx, b->pub, 64 << 10, &doc, NULL)) {
		nf_sha256_update(ov_hash, doc, strlen(doc));
		free(doc);
	}
	json_array_foreach(b->overlay_names, i, n) {
		struct ov_hash oh = { b->ctx, ov_hash };

		snprintf(line, sizeof(line), "%s/%s", b->overlays,
			 json_string_value(n));
		nf_sha256_update(ov_hash, json_string_value(n),
				 strlen(json_string_value(n)) + 1);
		if ((r = nf_walk_tree(b->ctx, line, &ov_hash_ops, &oh)))
			break;
	}
	nf_sha256_final_hex(ov_hash, out);
	nf_sha256_free(ov_hash);
	return r;
}

/* ROLE.current names the same inputs and its files are there */
int nf_bld_published_matches(struct build *b, const char *ikey,
			     struct nf_build_result *res)
{
	char path[PATH_MAX + 64], f[PATH_MAX * 2];
	static const char *const keys[] = { "kernel", "initramfs", "rootfs",
					    "manifest" };
	char *buf = NULL;
	json_t *j;
	int ok = 0;

	snprintf(path, sizeof(path), "%s/%s.current", b->out, b->role);
	if (nf_read_file(NULL, path, NF_POINTER_MAX, &buf, NULL))
		return 0;
	j = json_loads(buf, 0, NULL);
	free(buf);
	if (!j)
		return 0;
	if (!strcmp(json_string_value(json_object_get(j, "inputs_sha256")) ?: "",
		    ikey)) {
		ok = 1;
		for (size_t i = 0; i < NF_ARRAY_SIZE(keys); i++) {
			const char *v = json_string_value(json_object_get(j, keys[i]));

			snprintf(f, sizeof(f), "%s/%s", b->out, v ? v : "");
			if (!v || strchr(v, '/') || !nf_bld_file_exists(f))
				ok = 0;
		}
		if (b->el) {
			const char *v = json_string_value(json_object_get(j,
								"liveimg"));

			snprintf(f, sizeof(f), "%s/%s", b->out, v ? v : "");
			if (!v || strchr(v, '/') || !nf_bld_file_exists(f))
				ok = 0;
		}
	}
	if (ok) {
		const char *sha = json_string_value(json_object_get(j, "rootfs_sha256"));

		res->kernel = nf_strdup(json_string_value(json_object_get(j, "kernel")));
		res->initramfs = nf_strdup(json_string_value(json_object_get(j, "initramfs")));
		res->rootfs = nf_strdup(json_string_value(json_object_get(j, "rootfs")));
		res->manifest = nf_strdup(json_string_value(json_object_get(j, "manifest")));
		snprintf(res->rootfs_sha256, sizeof(res->rootfs_sha256), "%s",
			 sha ? sha : "");
	}
	json_decref(j);
	return ok;
}
