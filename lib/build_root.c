/* SPDX-License-Identifier: MIT */
/*
 * What goes into the work root after the bootstrap: overlays with their
 * templates rendered, artifact trees and commands run inside the root
 * (the artifacts themselves: build_artifacts.c), the purge of the build
 * packages, nodeforge itself, and the build host's identity removed.
 * Every write goes through the root's dirfd.
 */
#include "build_int.h"

#include <dirent.h>
#include <fcntl.h>
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

/* ------------------------------------------------------------ overlays */

struct ov_walk {
	struct build *b;
	struct nf_apply *a;
	const char *name;
	const char *dest;   /* where the tree goes in the image ("" = /) */
	int raw;            /* artifact: modes kept, no templates */
};

/* Value of a dotted path ("site.cluster", "profile.slurm.conf.X", "role") */
static int tmpl_lookup(const json_t *prof, const char *role, const char *var,
		       char *out, size_t outsz)
{
	const json_t *v;
	char buf[256], *p, *save = NULL;

	if (!strcmp(var, "role")) {
		snprintf(out, outsz, "%s", role);
		return 0;
	}
	snprintf(buf, sizeof(buf), "%s", var);
	p = strtok_r(buf, ".", &save);
	if (!p)
		return -1;
	if (!strcmp(p, "site"))
		v = json_object_get(prof, "site");
	else if (!strcmp(p, "profile"))
		v = prof;
	else
		return -1;
	while ((p = strtok_r(NULL, ".", &save))) {
		char *end;

		if (json_is_array(v)) {
			unsigned long i = strtoul(p, &end, 10);

			if (*end)
				return -1;
			v = json_array_get(v, i);
		} else {
			v = json_object_get(v, p);
		}
		if (!v)
			return -1;
	}
	if (json_is_string(v))
		snprintf(out, outsz, "%s", json_string_value(v));
	else if (json_is_integer(v))
		snprintf(out, outsz, "%lld", (long long)json_integer_value(v));
	else if (json_is_real(v))
		snprintf(out, outsz, "%g", json_real_value(v));
	else if (json_is_boolean(v))
		snprintf(out, outsz, "%s", json_is_true(v) ? "true" : "false");
	else
		return -1;
	return 0;
}

struct ov_vars {
	const json_t *prof;
	const char *role;
};

static int ov_lookup(void *data, const char *name, char *out, size_t outsz)
{
	const struct ov_vars *v = data;

	return tmpl_lookup(v->prof, v->role, name, out, outsz);
}

int nf_overlay_render(struct nf_ctx *ctx, const json_t *prof, const char *role,
		      const char *file, const char *in, struct nf_buf *out)
{
	struct ov_vars v = { prof, role };
	static const char *const old[] = { "${site.", "${profile." };

	/* the syntax overlay templates had before {{...}}: no shell variable
	 * has a dot in its name, so these can only be meant for nodeforge */
	for (size_t i = 0; i < NF_ARRAY_SIZE(old); i++) {
		const char *at = strstr(in, old[i]), *end;
		unsigned line = 1;

		if (!at)
			continue;
		for (const char *c = in; c < at; c++)
			line += *c == '\n';
		end = strchr(at, '}');
		if (end && end - at > 128)
			end = NULL;
		return nf_fail(ctx, NF_E_INVALID, "%s:%u: '%.*s' is the old "
			       "template syntax: write '{{%.*s}}'", file, line,
			       end ? (int)(end - at + 1) : 24, at,
			       end ? (int)(end - at - 2) : 0, at + 2);
	}
	return nf_template_render(ctx, file, in, ov_lookup, &v,
				  "{{role}}, {{site.KEY...}}, {{profile.KEY...}}",
				  out);
}

static int ov_copy_cb(void *data, const struct nf_walk_entry *e)
{
	struct ov_walk *w = data;
	const char *p = e->path, *rel = e->rel;
	const struct stat *st = e->st;
	char dest[PATH_MAX];
	size_t n;
	int r;

	snprintf(dest, sizeof(dest), "%s/%s", w->dest ? w->dest : "", rel);
	if (S_ISDIR(st->st_mode))
		return nf_apply_mkdir(w->a, dest, w->raw ? st->st_mode & 0755
				      : 0755, 0, 0);
	if (S_ISLNK(st->st_mode)) {
		char target[PATH_MAX];
		ssize_t k = readlinkat(e->dfd, e->name, target,
				       sizeof(target) - 1);

		if (k < 0)
			return nf_fail(w->b->ctx, -errno, "cannot read link '%s'", p);
		target[k] = '\0';
		return nf_apply_symlink(w->a, dest, target);
	}
	if (!S_ISREG(st->st_mode))
		return nf_fail(w->b->ctx, NF_E_UNSUPPORTED, "overlay '%s': '%s' is "
			       "not a file, directory or symlink", w->name, rel);
	/* modes are declared: 0755 for executables, 0644 otherwise, root;
	 * artifacts keep theirs (setuid/setgid dropped) */
	unsigned mode = w->raw ? st->st_mode & 0777
			       : st->st_mode & 0111 ? 0755 : 0644;
	char *buf = NULL;
	size_t len = 0;

	if ((r = nf_read_file(w->b->ctx, p, w->raw ? NF_ARTIFACT_FILE_MAX
						   : NF_OVERLAY_FILE_MAX, &buf, &len)))
		return r;
	n = strlen(dest);
	if (!w->raw && n > 5 && !strcmp(dest + n - 5, ".tmpl")) {
		struct nf_buf o = { 0 };

		dest[n - 5] = '\0';
		r = nf_overlay_render(w->b->ctx, w->b->prof, w->b->role, p,
				      buf, &o);
		free(buf);
		if (r) {
			nf_buf_free(&o);
			return r;
		}
		return nf_apply_write_buf(w->a, dest, &o, mode, 0, 0);
	}
	r = nf_apply_write(w->a, dest, buf, len, mode, 0, 0);
	free(buf);
	return r;
}

static const struct nf_walk_ops ov_copy_ops = { .enter = ov_copy_cb };

int nf_bld_stage_overlays(struct build *b, int rootfd)
{
	struct nf_apply a = { .ctx = b->ctx, .rootfd = rootfd,
			      .profile = b->profile, .prof = b->prof,
			      .role = b->role };
	char dir[PATH_MAX * 2];
	size_t i;
	json_t *n;
	int r;

	json_array_foreach(b->overlay_names, i, n) {
		struct ov_walk w = { .b = b, .a = &a, .name = json_string_value(n) };

		snprintf(dir, sizeof(dir), "%s/%s", b->overlays, w.name);
		if ((r = nf_walk_tree(b->ctx, dir, &ov_copy_ops, &w)))
			return r;
	}
	return 0;
}

/* ------------------------------------------------------ host identity */

int nf_bld_stage_identity(struct build *b, int rootfd)
{
	static const char *const gone[] = {
		"var/lib/dbus/machine-id", "var/lib/systemd/random-seed",
		"var/log/dpkg.log", "var/log/alternatives.log",
		"var/log/apt/history.log", "var/log/apt/term.log",
		"var/log/apt/eipp.log.xz", "var/log/bootstrap.log",
		"var/cache/apt/pkgcache.bin", "var/cache/apt/srcpkgcache.bin",
		"var/cache/debconf/templates.dat-old",
		"var/cache/debconf/config.dat-old",
		"etc/ssh/sshd_config.ucf-old",
		"var/log/dnf.log", "var/log/dnf.rpm.log",
		"var/log/dnf.librepo.log", "var/log/hawkey.log",
		/* ldconfig's record of the inodes and times it saw: differs
		 * from build to build, and ldconfig makes it again */
		"var/cache/ldconfig/aux-cache",
	};
	struct nf_apply a = { .ctx = b->ctx, .rootfd = rootfd,
			      .profile = b->profile, .prof = b->prof,
			      .role = b->role };
	struct nf_buf u = { 0 };
	int r, fd;
	DIR *d;

	for (size_t i = 0; i < NF_ARRAY_SIZE(gone); i++)
		if (unlinkat(rootfd, gone[i], 0) < 0 && errno != ENOENT &&
		    errno != ENOTDIR)
			return nf_fail(b->ctx, -errno, "cannot remove '/%s' from "
				       "the image: %s", gone[i], strerror(errno));
	{
		char p[PATH_MAX + 32];

		snprintf(p, sizeof(p), "%s/var/cache/dnf", b->root);
		nf_rm_tree_at(AT_FDCWD, p);
	}
	/* apt lists: large, dated, and refreshed by any later apt update */
	fd = openat(rootfd, "var/lib/apt/lists", O_RDONLY | O_DIRECTORY |
		    O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0 && (d = fdopendir(fd))) {
		struct dirent *de;

		while ((de = readdir(d)))
			if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
			    strcmp(de->d_name, "partial") &&
			    strcmp(de->d_name, "lock"))
				unlinkat(dirfd(d), de->d_name, 0);
		closedir(d);
	} else if (fd >= 0) {
		close(fd);
	}
	/* boot-time initrds are rebuilt on a stateful install; the diskless
	 * initramfs is the whole image */
	fd = openat(rootfd, "boot", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0 && (d = fdopendir(fd))) {
		struct dirent *de;

		while ((de = readdir(d)))
			if (!strncmp(de->d_name, "initrd.img", 10))
				unlinkat(dirfd(d), de->d_name, 0);
		closedir(d);
	} else if (fd >= 0) {
		close(fd);
	}
	/* ssh host keys: every node makes its own at first start */
	fd = openat(rootfd, "etc/ssh", O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
	if (fd >= 0 && (d = fdopendir(fd))) {
		struct dirent *de;

		while ((de = readdir(d)))
			if (!strncmp(de->d_name, "ssh_host_", 9))
				unlinkat(dirfd(d), de->d_name, 0);
		closedir(d);
		nf_apply_header(&u, "#", "build");
		/* before the unit's own 'sshd -t', which fails without keys */
		nf_buf_printf(&u, "# host keys are removed from the image: each "
			      "node generates its own before sshd checks its "
			      "config\n[Service]\nExecStartPre=\n"
			      "ExecStartPre=/usr/bin/ssh-keygen -A\n"
			      "ExecStartPre=/usr/sbin/sshd -t\n");
		if ((r = nf_apply_write_buf(&a, "/etc/systemd/system/ssh.service.d/"
					    "nodeforge-hostkeys.conf", &u, 0644,
					    0, 0)))
			return r;
	} else if (fd >= 0) {
		close(fd);
	}
	/* empty machine-id: systemd generates one on each node's first boot */
	if ((r = nf_apply_write(&a, "/etc/machine-id", "", 0, 0444, 0, 0)))
		return r;
	if ((r = nf_apply_write(&a, "/etc/hostname", "localhost\n", 10, 0644,
				0, 0)))
		return r;
	/* the node's resolver comes from DHCP, not from the build host */
	struct stat st;

	if (fstatat(rootfd, "etc/resolv.conf", &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISREG(st.st_mode) &&
	    (r = nf_apply_write(&a, "/etc/resolv.conf", "", 0, 0644, 0, 0)))
		return r;
	/* the kernel starts systemd from the initramfs: it is the root */
	if (!nf_apply_exists(&a, "/init") &&
	    (r = nf_apply_symlink(&a, "/init", "/sbin/init")))
		return r;
	return 0;
}

/* ------------------------------------------- artifact trees and commands */

/* Copy an unpacked tree into the image under `dest` through the root's
 * dirfd: an artifact can no more escape the root than an overlay */
int nf_bld_copy_tree_in(struct build *b, int rootfd, const char *tree,
			const char *dest, const char *name)
{
	struct nf_apply a = { .ctx = b->ctx, .rootfd = rootfd,
			      .profile = b->profile, .prof = b->prof,
			      .role = b->role };
	struct ov_walk w = { .b = b, .a = &a, .name = name, .raw = 1 };
	char d[PATH_MAX];
	int r;

	snprintf(d, sizeof(d), "%s", dest && strcmp(dest, "/") ? dest : "");
	if (*d && d[strlen(d) - 1] == '/')
		d[strlen(d) - 1] = '\0';
	w.dest = d;
	if (*d && (r = nf_apply_mkdir(&a, d, 0755, 0, 0)))
		return r;
	return nf_walk_tree(b->ctx, tree, &ov_copy_ops, &w);
}

/* Run `cmd` inside the image root */
int nf_bld_in_root(struct build *b, const char *name, const char *cmd)
{
	char log[PATH_MAX + 64], reason[1024];
	char *argv[] = { "chroot", b->root, "/bin/sh", "-ec", (char *)cmd, NULL };
	/* the image's own temporary directory: the build host's TMPDIR is
	 * no path inside the root (dpkg-deb, compilers fail there) */
	char *env[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin",
			"DEBIAN_FRONTEND=noninteractive", "LC_ALL=C",
			"TMPDIR=/tmp", NULL };
	int r;

	snprintf(log, sizeof(log), "%s/artifact-%s.log", b->logs, name);
	r = nf_bld_run_tool(b->ctx, argv, log, env);
	if (r > 0) {
		nf_bld_log_reason(log, reason, sizeof(reason));
		return nf_fail(b->ctx, NF_E_EXTERNAL, "artifact '%s': '%s' failed "
			       "in the image (exit %d): %s", name, cmd, r, reason);
	}
	return r;
}

/* ------------------------------------------------------ build packages */

/* system.packages.build and .remove leave the image once the artifacts
 * are built: purged by the image's apt, with what only they pulled in (a
 * package the profile also installs is refused before the bootstrap, by
 * nf_bld_package_list) */
int nf_bld_stage_purge(struct build *b)
{
	const json_t *pk = json_object_get(json_object_get(b->prof, "system"),
					   "packages");
	const json_t *lists[] = { json_object_get(pk, "build"),
				  json_object_get(pk, "remove") };
	static const char *const lname[] = { "build", "remove" };
	struct nf_buf cmd = { 0 };
	size_t i, n = 0;
	json_t *p;
	int r;

	nf_buf_printf(&cmd, "apt-get purge -y -q --autoremove");
	for (size_t l = 0; l < 2; l++)
	json_array_foreach(lists[l], i, p) {
		const char *s = json_string_value(p);
		size_t len = nf_bld_package_name(s, b->el);

		/* the build list was checked by the package list (no
		 * quoting needed); .remove's are checked here.  A pinned
		 * version (pkg=1.2) is purged by its name. */
		if (!len) {
			nf_buf_free(&cmd);
			return nf_fail(b->ctx, NF_E_INVALID, "package name '%s' "
				       "in system.packages.%s is not a package "
				       "name", s ? s : "", lname[l]);
		}
		nf_buf_printf(&cmd, " %.*s", (int)len, s);
		n++;
	}
	if (!n) {
		nf_buf_free(&cmd);
		return 0;
	}
	if (b->el) {
		nf_buf_free(&cmd);
		return nf_fail(b->ctx, NF_E_UNSUPPORTED, "system.packages.build "
			       "and .remove are purged with apt: Debian images "
			       "only");
	}
	if (cmd.err || !cmd.s) {
		nf_buf_free(&cmd);
		return -ENOMEM;
	}
	r = nf_bld_in_root(b, "purge", cmd.s);
	nf_buf_free(&cmd);
	return r;
}

/* ------------------------------------------------------ nodeforge itself */

/* Which nodeforge the image carries (--self-package): the package built
 * for the image's distribution, found as DIR/<suite>/nodeforge_V_amd64.deb
 * (Debian) or DIR/el<release>/nodeforge-V-1.x86_64.rpm (EL) when a
 * directory is named, or that file; "host" copies the running binary, for
 * stand-in roots that have no package manager.  Resolved before the
 * inputs' hash: the package's bytes are one of the image's inputs. */
int nf_bld_self_resolve(struct build *b)
{
	const char *o = b->o->self_package;
	const char *ext = b->el ? ".rpm" : ".deb";
	struct stat st;
	size_t n;

	b->self_host = 0;
	b->self_pkg[0] = '\0';
	if (!o || !*o)
		return nf_fail(b->ctx, NF_E_INVALID, "which nodeforge goes into "
			       "the image? --self-package DIR|FILE names the "
			       "package built for %s%s (make image-pkgs)",
			       b->el ? "el" : "", b->suite);
	if (!strcmp(o, "host")) {
		b->self_host = 1;
		return 0;
	}
	if (stat(o, &st) < 0)
		return nf_fail(b->ctx, -errno, "--self-package '%s': %s", o,
			       strerror(errno));
	if (S_ISDIR(st.st_mode)) {
		if (b->el)
			snprintf(b->self_pkg, sizeof(b->self_pkg),
				 "%s/el%s/nodeforge-%s-1.x86_64.rpm", o,
				 b->suite, NF_VERSION);
		else
			snprintf(b->self_pkg, sizeof(b->self_pkg),
				 "%s/%s/nodeforge_%s_amd64.deb", o, b->suite,
				 NF_VERSION);
		if (stat(b->self_pkg, &st) < 0 || !S_ISREG(st.st_mode))
			return nf_fail(b->ctx, NF_E_NOTFOUND, "no nodeforge %s "
				       "package for %s%s: '%s' does not exist "
				       "(make image-pkgs builds it; "
				       "--self-package FILE names another)",
				       NF_VERSION, b->el ? "el" : "", b->suite,
				       b->self_pkg);
		return 0;
	}
	n = strlen(o);
	if (!S_ISREG(st.st_mode) || n < 4 || strcmp(o + n - 4, ext))
		return nf_fail(b->ctx, NF_E_INVALID, "--self-package '%s' is not "
			       "a %s file nor a directory of packages (this "
			       "image is %s)", o, ext, b->el ? "EL" : "Debian");
	snprintf(b->self_pkg, sizeof(b->self_pkg), "%s", o);
	return 0;
}

/* What the image's hash takes from nodeforge itself: the package's (or
 * the running binary's) sha256 */
int nf_bld_self_sha256(struct build *b, char out[NF_SHA256_HEX])
{
	const char *p = b->self_host ? "/proc/self/exe" : b->self_pkg;
	unsigned long long sz;
	int fd = open(p, O_RDONLY | O_CLOEXEC), r;

	if (fd < 0)
		return nf_fail(b->ctx, -errno, "cannot open '%s': %s", p,
			       strerror(errno));
	r = nf_sha256_fd(b->ctx, fd, p, out, &sz);
	close(fd);
	return r;
}

/* The image's /usr/bin/nodeforge (the verifier units run it at first
 * boot): the package installed by the image's own package manager, then
 * asked for its version, which must be this build's version and commit */
int nf_bld_install_self(struct build *b, int rootfd)
{
	struct nf_apply a = { .ctx = b->ctx, .rootfd = rootfd };
	char want[160], cmd[PATH_MAX + 128], log[PATH_MAX + 64];
	char *buf = NULL, *got;
	size_t len = 0;
	int r;

	if (b->self_host) {
		if ((r = nf_read_file(b->ctx, "/proc/self/exe", 256u << 20,
				      &buf, &len)))
			return r;
		r = nf_apply_write(&a, "/usr/bin/nodeforge", buf, len, 0755, 0, 0);
		free(buf);
		return r;
	}
	if (b->el) {
		char *argv[] = { "rpm", "--root", b->root, "-i", "--nodigest",
				 b->self_pkg, NULL };

		snprintf(log, sizeof(log), "%s/nodeforge-rpm.log", b->logs);
		r = nf_bld_run_tool(b->ctx, argv, log, NULL);
		if (r > 0) {
			char reason[1024];

			nf_bld_log_reason(log, reason, sizeof(reason));
			return nf_fail(b->ctx, NF_E_EXTERNAL, "rpm --root cannot "
				       "install '%s' (exit %d): %s", b->self_pkg,
				       r, reason);
		}
		if (r)
			return r;
		snprintf(cmd, sizeof(cmd), "/usr/bin/nodeforge version");
	} else {
		if ((r = nf_read_file(b->ctx, b->self_pkg, 256u << 20, &buf, &len)))
			return r;
		r = nf_apply_write(&a, "/var/cache/nodeforge/nodeforge.deb", buf,
				   len, 0644, 0, 0);
		free(buf);
		buf = NULL;
		if (r)
			return r;
		/* its dependencies are in every image's package set */
		snprintf(cmd, sizeof(cmd), "dpkg -i /var/cache/nodeforge/nodeforge.deb"
			 " && rm -f /var/cache/nodeforge/nodeforge.deb"
			 " && rmdir /var/cache/nodeforge 2>/dev/null || :;"
			 " /usr/bin/nodeforge version");
	}
	if ((r = nf_bld_in_root(b, "nodeforge", cmd)))
		return r;
	/* the last line the image's nodeforge printed */
	snprintf(log, sizeof(log), "%s/artifact-nodeforge.log", b->logs);
	if ((r = nf_read_file(b->ctx, log, 1u << 20, &buf, &len)))
		return r;
	while (len && buf[len - 1] == '\n')
		buf[--len] = '\0';
	got = strrchr(buf, '\n');
	got = got ? got + 1 : buf;
	snprintf(want, sizeof(want), "nodeforge %s (commit %s)", NF_VERSION,
		 nf_commit);
	if (strcmp(got, want))
		r = nf_fail(b->ctx, NF_E_INVALID, "the image's nodeforge from "
			    "'%s' says '%.100s', not '%s': build its package "
			    "from this tree (make image-pkgs)", b->self_pkg,
			    got, want);
	free(buf);
	return r;
}

/* The public half of the key this image is signed with, as the key the
 * node trusts: `nodeforge pxe --key` signs the boot tree's cluster files
 * with it and `cluster fetch` refuses files it did not sign */
int nf_bld_install_trust(struct build *b, int rootfd)
{
	struct nf_apply a = { .ctx = b->ctx, .rootfd = rootfd };
	char *pem = NULL;
	size_t len = 0;
	int r = nf_public_pem(b->ctx, b->key, &pem, &len);

	if (!r)
		r = nf_apply_write(&a, NF_TRUST_PUB, pem, len, 0644, 0, 0);
	free(pem);
	return r;
}
