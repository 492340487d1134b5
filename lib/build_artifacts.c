/* SPDX-License-Identifier: MIT */
/*
 * The artifacts stage: pinned files (debs, tarballs, sources built inside
 * the image, with their pinned patches) fetched into the content-addressed
 * cache or taken from a package in the image, and the files the site
 * supplies (supplier: site), pinned in the site file, installed after the
 * cached part of the stage.
 */
#include "build_int.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static void fetch_progress(void *data, unsigned long long now,
			   unsigned long long total)
{
	struct build *b = data;

	(void)total;
	if (b->o->progress)
		b->o->progress(b->o->progress_data, NF_BUILD_BYTES, b->cur_stage,
			       nf_now_s() - b->stage_t0, now);
}

static void fetch_opts(struct build *b, struct nf_fetch_opts *fo)
{
	*fo = (struct nf_fetch_opts){
		.cache = b->cache,
		.mirror = b->o->artifact_mirror,
		.mirror_opt = "--artifact-mirror",
		.offline = b->o->offline,
		.progress = fetch_progress,
		.progress_data = b,
	};
}

/* A pinned file (an artifact, or a patch to one): a url with a scheme or
 * an absolute path is fetched through the artifact mirror and the cache;
 * a relative one is a file beside the profiles, shipped with them
 * (profiles/patches/NAME.patch, profiles/sources/NAME.tar.gz).  Either
 * way the sha256 pins its bytes.  `what` names it in messages. */
static int fetch_pinned(struct build *b, const char *id, const char *what,
			const char *url, const char *sha, char **file)
{
	struct nf_fetch_opts fo;
	char dir[PATH_MAX], path[PATH_MAX + 256];
	const char *slash;
	struct stat st;

	fetch_opts(b, &fo);
	if (url && !strstr(url, "://") && url[0] != '/') {
		const char *pd = nf_ctx_profiles_dir(b->ctx);
		char abs[PATH_MAX];

		if (!realpath(pd ? pd : ".", abs))
			return nf_fail(b->ctx, -errno, "cannot resolve the profiles "
				       "directory '%s': %s", pd ? pd : ".",
				       strerror(errno));
		pd = abs;
		if (strstr(url, ".."))
			return nf_fail(b->ctx, NF_E_INVALID, "%s: url '%s' leaves "
				       "the profiles directory", what, url);
		slash = strrchr(url, '/');
		snprintf(dir, sizeof(dir), "%s%s%.*s", pd, slash ? "/" : "",
			 slash ? (int)(slash - url) : 0, url);
		snprintf(path, sizeof(path), "%s/%s", dir, slash ? slash + 1 : url);
		if (stat(path, &st) < 0)
			return nf_fail(b->ctx, NF_E_NOTFOUND, "%s not found: no "
				       "file '%s'", what, path);
		fo.mirror = dir;
	}
	return nf_fetch(b->ctx, id, url, sha, &fo, file);
}

static int fetch_patch(struct build *b, const char *art, const json_t *p,
		       char **file)
{
	const char *pname = json_string_value(json_object_get(p, "name"));
	char id[256], what[300];

	snprintf(id, sizeof(id), "%s: patch %s", art, pname ? pname : "?");
	snprintf(what, sizeof(what), "artifact '%s': patch '%s'", art,
		 pname ? pname : "?");
	return fetch_pinned(b, id, what, json_string_value(json_object_get(p, "url")),
			    json_string_value(json_object_get(p, "sha256")), file);
}

/* Each of a source artifact's patches, in order, with the host's patch(1)
 * on the unpacked tree: one that does not apply cleanly stops the build,
 * naming it and its first failed hunk */
static int apply_patches(struct build *b, const json_t *art, const char *tree)
{
	const char *name = json_string_value(json_object_get(art, "name"));
	char log[PATH_MAX + 128], reason[1024];
	size_t i;
	json_t *p;
	int r;

	json_array_foreach(json_object_get(art, "patches"), i, p) {
		const char *pname = json_string_value(json_object_get(p, "name"));
		char *file = NULL;

		if ((r = fetch_patch(b, name, p, &file)))
			return r;
		{
			char *argv[] = { "patch", "-d", (char *)tree, "-p1",
					 "--batch", "--forward", "--fuzz=0", "--no-backup-if-mismatch",
					 "--reject-file=-", "-i", file, NULL };

			snprintf(log, sizeof(log), "%s/patch-%s-%s.log", b->logs,
				 name, pname);
			r = nf_bld_run_tool(b->ctx, argv, log, NULL);
		}
		free(file);
		if (r > 0) {
			nf_bld_log_reason(log, reason, sizeof(reason));
			return nf_fail(b->ctx, NF_E_EXTERNAL, "artifact '%s': patch "
				       "'%s' does not apply (exit %d): %s", name,
				       pname, r, reason);
		}
		if (r)
			return r;
		nf_bld_note(b, "patched");
	}
	return 0;
}

/* A deb into the root as /var/cache/nodeforge/NAME.deb, and its install
 * with the image's dpkg (its dependencies come from
 * system.packages.install), the copy removed */
static int deb_to_root(struct build *b, int rootfd, const char *file,
		       const char *name)
{
	struct nf_apply a = { .ctx = b->ctx, .rootfd = rootfd };
	char path[160], *buf = NULL;
	size_t len = 0;
	int r;

	snprintf(path, sizeof(path), "/var/cache/nodeforge/%s.deb", name);
	if ((r = nf_read_file(b->ctx, file, 2ULL << 30, &buf, &len)))
		return r;
	r = nf_apply_write(&a, path, buf, len, 0644, 0, 0);
	free(buf);
	return r;
}

static int dpkg_install(struct build *b, const char *name)
{
	char cmd[400];

	snprintf(cmd, sizeof(cmd), "dpkg -i --force-confold "
		 "/var/cache/nodeforge/%s.deb && rm -f /var/cache/nodeforge/%s.deb",
		 name, name);
	return nf_bld_in_root(b, name, cmd);
}

static int install_artifact(struct build *b, int rootfd, const json_t *art,
			    const char *file)
{
	const char *name = json_string_value(json_object_get(art, "name"));
	const char *kind = json_string_value(json_object_get(art, "kind"));
	const char *dest = json_string_value(json_object_get(art, "dest"));
	const char *bld = json_string_value(json_object_get(art, "build"));
	char tree[PATH_MAX + 64], cmd[PATH_MAX + 256], src[PATH_MAX + 64];
	int r;

	if (!strcmp(kind, "deb"))
		return (r = deb_to_root(b, rootfd, file, name)) ? r
		       : dpkg_install(b, name);
	if (!strcmp(kind, "rpm"))
		return nf_fail(b->ctx, NF_E_UNSUPPORTED, "artifact '%s': kind "
			       "'rpm' needs an EL distro; this image is Debian "
			       "(set distro: on the artifact to skip it here)", name);
	/* tarball and source: unpacked safely, then copied in */
	snprintf(tree, sizeof(tree), "%s/artifact-%s", b->work, name);
	nf_rm_tree_at(AT_FDCWD, tree);
	{
		struct nf_unpack_opts uo = { 0 };

		if ((r = nf_unpack(b->ctx, file, tree, &uo)))
			return r;
	}
	if (!strcmp(kind, "tarball"))
		return nf_bld_copy_tree_in(b, rootfd, tree, dest ? dest : "/", name);
	/* source: patched (in the profile's order), built inside the image
	 * against its own headers (pyxis against the image's Slurm), then
	 * the sources are removed */
	if (!bld)
		return nf_fail(b->ctx, NF_E_INVALID, "artifact '%s' of kind "
			       "'source' has no 'build' command", name);
	if ((r = apply_patches(b, art, tree)))
		return r;
	snprintf(src, sizeof(src), "/usr/src/nodeforge/%s", name);
	if ((r = nf_bld_copy_tree_in(b, rootfd, tree, src, name)))
		return r;
	snprintf(cmd, sizeof(cmd), "cd '%s' && { %s\n}", src, bld);
	if ((r = nf_bld_in_root(b, name, cmd)))
		return r;
	snprintf(src, sizeof(src), "%s/usr/src/nodeforge", b->root);
	nf_rm_tree_at(AT_FDCWD, src);
	return 0;
}


/* An artifact one of the image's packages brings (from: a path in the
 * root, every symlink resolved inside it), checked against its sha256
 * like a download, then installed by kind */
static int from_image(struct build *b, int rootfd, const json_t *a)
{
	const char *name = json_string_value(json_object_get(a, "name"));
	const char *from = json_string_value(json_object_get(a, "from"));
	const char *sha = json_string_value(json_object_get(a, "sha256"));
	char hex[NF_SHA256_HEX], path[64];
	unsigned long long sz = 0;
	int fd, r;

	fd = nf_openat_root(rootfd, from, O_RDONLY);
	if (fd < 0)
		return nf_fail(b->ctx, NF_E_NOTFOUND, "artifact '%s': '%s' is not "
			       "in the image: %s (which of system.packages "
			       "brings it?)", name, from, strerror(-fd));
	if ((r = nf_sha256_fd(b->ctx, fd, from, hex, &sz))) {
		close(fd);
		return r;
	}
	if (!sha || strcmp(hex, sha)) {
		close(fd);
		return nf_fail(b->ctx, NF_E_CHECKSUM, "artifact '%s': the image's "
			       "'%s' has sha256 %s, not the pinned %s (another "
			       "version of the package that brings it?)", name,
			       from, hex, sha ? sha : "(none)");
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	r = install_artifact(b, rootfd, a, path);
	close(fd);
	return r;
}

/* Pinned artifacts (system.artifacts): fetched into the content-addressed
 * cache (lib/adapters/fetch.c) and installed by kind.  One that cannot be
 * fetched stops the build unless the profile marks it optional. */
int nf_bld_stage_artifacts(struct build *b, int rootfd)
{
	const json_t *arts = json_object_get(json_object_get(b->prof, "system"),
					     "artifacts");
	const char *distro = json_string_value(json_object_get(
		json_object_get(b->prof, "site"), "distro"));
	size_t i;
	json_t *a;
	int r;

	json_array_foreach(arts, i, a) {
		const char *name = json_string_value(json_object_get(a, "name"));
		const char *only = json_string_value(json_object_get(a, "distro"));
		char *file = NULL, msg[1200], what[300];
		unsigned m;

		if (only && distro && strncmp(distro, only, strlen(only)))
			continue;
		/* the site's files are installed after this stage (its
		 * result is cached without them), and only where needed */
		if (json_object_get(a, "supplier") ||
		    !nf_profile_runs_when(b->prof, a))
			continue;
		if (json_object_get(a, "from")) {
			if ((r = from_image(b, rootfd, a)))
				return r;
			continue;
		}
		snprintf(what, sizeof(what), "artifact '%s'", name);
		m = nf_err_mark(b->ctx);
		r = fetch_pinned(b, name, what,
				 json_string_value(json_object_get(a, "url")),
				 json_string_value(json_object_get(a, "sha256")),
				 &file);
		if (r && json_is_true(json_object_get(a, "optional"))) {
			snprintf(msg, sizeof(msg), "optional artifact skipped: %s",
				 nf_errmsg(b->ctx));
			nf_bld_note(b, msg);
			nf_err_drop(b->ctx, m);
			continue;
		}
		if (r)
			return r;
		r = install_artifact(b, rootfd, a, file);
		free(file);
		if (r)
			return r;
	}
	return 0;
}


/* ---------------------------------------------- site-supplied artifacts */

/* The site file's pin of artifact `name` (artifacts: name, sha256, url) */
static const json_t *site_pin(const struct build *b, const char *name)
{
	const json_t *pins = json_object_get(json_object_get(b->prof, "site"),
					     "artifacts");
	size_t i;
	json_t *p;

	json_array_foreach(pins, i, p)
		if (name && json_is_string(json_object_get(p, "name")) &&
		    !strcmp(json_string_value(json_object_get(p, "name")), name))
			return p;
	return NULL;
}

/* Each artifact the role needs from the site (supplier: site) is pinned
 * in the site file; checked before anything is fetched, with what to do
 * when it is not */
int nf_bld_check_site_artifacts(struct build *b)
{
	const json_t *arts = json_object_get(json_object_get(b->prof, "system"),
					     "artifacts");
	size_t i;
	json_t *a;

	json_array_foreach(arts, i, a) {
		const char *name = json_string_value(json_object_get(a, "name"));
		const char *url = json_string_value(json_object_get(a, "url"));
		const char *when = json_string_value(json_object_get(a, "when"));
		const char *bn = url && strrchr(url, '/') ? strrchr(url, '/') + 1 : url;

		if (!json_object_get(a, "supplier") ||
		    !nf_profile_runs_when(b->prof, a) || site_pin(b, name))
			continue;
		return nf_fail(b->ctx, NF_E_NOTFOUND, "role '%s' needs %s %s "
			       "(artifact '%s'), which the site supplies and "
			       "the site file does not pin: download %s (%s), "
			       "put it in the artifact mirror (--artifact-mirror), "
			       "and pin it in the site file: 'artifacts: [{name: "
			       "%s, sha256: <sha256sum of the file>}]'%s%s%s",
			       b->role,
			       json_string_value(json_object_get(a, "package")),
			       json_string_value(json_object_get(a, "version")),
			       name, bn ? bn : "?", url ? url : "no url",
			       name, when ? "; a role without it sets '" : "",
			       when ? when : "", when ? ": false' in its profile" : "");
	}
	return 0;
}

/* A deb the site supplies: fetched by the site's pin, its package and
 * version checked against the profile's, then installed */
static int site_deb(struct build *b, int rootfd, const json_t *a,
		    const json_t *pin)
{
	const char *name = json_string_value(json_object_get(a, "name"));
	const char *pkg = json_string_value(json_object_get(a, "package"));
	const char *ver = json_string_value(json_object_get(a, "version"));
	const char *url = json_string_value(json_object_get(pin, "url"));
	struct nf_fetch_opts fo;
	char cmd[512], want[256], ctl[128], *file = NULL, *got = NULL;
	size_t len = 0;
	int r;

	fetch_opts(b, &fo);
	if ((r = nf_fetch(b->ctx, name, url ? url
			  : json_string_value(json_object_get(a, "url")),
			  json_string_value(json_object_get(pin, "sha256")),
			  &fo, &file)))
		return r;
	r = deb_to_root(b, rootfd, file, name);
	free(file);
	if (r)
		return r;
	snprintf(cmd, sizeof(cmd), "dpkg-deb --showformat='${Package} "
		 "${Version}' -W /var/cache/nodeforge/%s.deb > "
		 "/var/cache/nodeforge/%s.control", name, name);
	if ((r = nf_bld_in_root(b, name, cmd)))
		return r;
	snprintf(ctl, sizeof(ctl), "%s/var/cache/nodeforge/%s.control", b->root,
		 name);
	if ((r = nf_read_file(b->ctx, ctl, 4096, &got, &len)))
		return r;
	unlink(ctl);
	snprintf(want, sizeof(want), "%s %s", pkg, ver);
	if (strcmp(got, want)) {
		nf_fail(b->ctx, NF_E_CHECKSUM, "artifact '%s': the site's file "
			"(its pinned sha256 matches) holds %s, and the profile "
			"wants %s: pin the file of %s %s in the site file", name,
			got, want, pkg, ver);
		free(got);
		return NF_E_CHECKSUM;
	}
	free(got);
	if ((r = dpkg_install(b, name)))
		return r;
	snprintf(want, sizeof(want), "%s %s (the site's)", pkg, ver);
	nf_bld_note(b, want);
	return 0;
}

/* After the (cached) artifacts stage: the files the site supplies */
int nf_bld_stage_site_artifacts(struct build *b, int rootfd)
{
	const json_t *arts = json_object_get(json_object_get(b->prof, "system"),
					     "artifacts");
	size_t i;
	json_t *a;
	int r;

	/* each is pinned: checked before anything was fetched
	 * (nf_bld_check_site_artifacts) */
	json_array_foreach(arts, i, a)
		if (json_object_get(a, "supplier") && nf_profile_runs_when(b->prof, a) &&
		    (r = site_deb(b, rootfd, a,
				  site_pin(b, json_string_value(json_object_get(a, "name"))))))
			return r;
	return 0;
}
