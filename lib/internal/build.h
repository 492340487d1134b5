/* SPDX-License-Identifier: MIT */
/* libnodeforge's private declarations: the image build: facet apply, overlays, pinned artifacts.
 * Included by internal.h; not meant to be included alone. */
#ifndef NF_INTERNAL_BUILD_H
#define NF_INTERNAL_BUILD_H

/* ---- image build: facet apply and build pipeline (lib/apply.c, lib/build.c) ---- */

/* What a facet's apply gets: everything is written relative to `rootfd`
 * through the nf_apply_* helpers (openat, O_NOFOLLOW, no "..") */
struct nf_apply {
	struct nf_ctx *ctx;
	int rootfd;                       /* the image root, O_DIRECTORY */
	const struct nf_profile *profile;
	const json_t *prof;               /* nf_profile_json(profile) */
	const json_t *site;               /* prof.site (public site) */
	const char *role;
	const char *distro;               /* "debian12", "rocky9", ... */
	int el;                           /* EL family (paths differ) */
	const json_t *cluster;            /* nf_cluster_load() or NULL */
	/* renders the cluster part of slurm.conf from `cluster` (the
	 * driver passes lib/cluster.c's: facets call no code above them) */
	int (*cluster_slurm_conf)(struct nf_ctx *ctx, const json_t *cluster,
				  struct nf_buf *b);
};

/* Write a systemd unit /etc/systemd/system/NAME from `b` (freed) and
 * enable it in multi-user.target.wants */
struct nf_apply;
int nf_apply_unit(struct nf_apply *a, const char *name, struct nf_buf *b);
/* Header line every generated file starts with (comment char `c`) */
void nf_apply_header(struct nf_buf *b, const char *c, const char *facet);
/* mkdir -p of an absolute path inside the root */
int nf_apply_mkdir(struct nf_apply *a, const char *path, unsigned mode,
		   uid_t uid, gid_t gid);
/* Replace `path` in the root with `len` bytes, mode and owner explicit;
 * parents are created 0755 root:root */
int nf_apply_write(struct nf_apply *a, const char *path, const void *data,
		   size_t len, unsigned mode, uid_t uid, gid_t gid);
int nf_apply_write_buf(struct nf_apply *a, const char *path,
		       struct nf_buf *b, unsigned mode, uid_t uid, gid_t gid);
/* Replace `path` with a symlink to `target` (target is not followed) */
int nf_apply_symlink(struct nf_apply *a, const char *path, const char *target);
/* Remove a file (or symlink) of the root; absent is fine */
int nf_apply_remove(struct nf_apply *a, const char *path);
/* Read a file of the root; -ENOENT when absent */
int nf_apply_read(struct nf_apply *a, const char *path, size_t max,
		  char **buf, size_t *len);
/* Does a regular file or symlink exist at `path` in the root? */
int nf_apply_exists(struct nf_apply *a, const char *path);
/* Numeric ids of a user/group of the image (its /etc/passwd, /etc/group);
 * -ENOENT when the image has no such user */
int nf_apply_user(struct nf_apply *a, const char *name, uid_t *uid, gid_t *gid);
/* Enable a systemd unit: symlink in multi-user.target.wants */
int nf_apply_enable(struct nf_apply *a, const char *unit);
/* Is `daemon` in the profile's slurm.daemons? */
int nf_apply_has_daemon(const struct nf_apply *a, const char *daemon);
/* 1 when P is an absolute path a unit file or a tmpfiles.d line holds as
 * it is (no blank, quote, backslash, '%', "/./" or "/../") */
int nf_apply_path_ok(const char *p);
/* Open `path` (relative to cwd) as a root for apply */
int nf_apply_open_root(struct nf_ctx *ctx, const char *path, int *rootfd);
/* Run every facet's apply, then write the resolved profile and the
 * verifier's units */
int nf_apply_all(struct nf_ctx *ctx, int rootfd, const struct nf_profile *p);

/* An overlay's *.tmpl (lib/build_root.c): {{role}}, {{site.A.B}},
 * {{profile.A.B}} (list items by index) */
int nf_overlay_render(struct nf_ctx *ctx, const json_t *prof, const char *role,
		      const char *file, const char *in, struct nf_buf *out);

/* ---- end of image build ---- */

#endif
