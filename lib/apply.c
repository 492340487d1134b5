/* SPDX-License-Identifier: MIT */
/*
 * Facet apply: the helpers every facet uses to write into an image root,
 * and the driver that runs them.  Every path is resolved one component at
 * a time with openat(O_NOFOLLOW) from the root's dirfd, so neither ".."
 * nor a symlink planted in the tree can make a write land outside it.
 */
#include "internal.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define NF_PASSWD_MAX (1u << 20)

void nf_apply_header(struct nf_buf *b, const char *c, const char *facet)
{
	nf_buf_printf(b, "%s Written by nodeforge build (facet '%s') from the "
		      "resolved profile.\n%s Edit the profile, not this file: "
		      "the verifier checks it.\n", c, facet, c);
}

static int need_absolute(struct nf_apply *a, const char *path)
{
	if (!path || path[0] != '/')
		return nf_fail(a->ctx, NF_E_UNSAFE, "path '%s' in the image must "
			       "be absolute", path ? path : "(null)");
	return 0;
}

/* The directory holding the absolute PATH in the image, and its leaf;
 * creates parents when `create` */
static int walk_parent(struct nf_apply *a, const char *path, int create,
		       int *dirfd, char *leaf, size_t leafsz)
{
	int fd;

	if ((fd = need_absolute(a, path)))
		return fd;
	fd = nf_root_parent(a->ctx, a->rootfd, path, create ? NF_ROOT_CREATE : 0,
			    leaf, leafsz);
	if (fd < 0)
		return fd;
	*dirfd = fd;
	return 0;
}

int nf_apply_mkdir(struct nf_apply *a, const char *path, unsigned mode,
		   uid_t uid, gid_t gid)
{
	int fd;

	if ((fd = need_absolute(a, path)))
		return fd;
	fd = nf_root_opendir(a->ctx, a->rootfd, path, NF_ROOT_CREATE);
	if (fd < 0)
		return fd;
	if (fchmod(fd, mode) < 0 || fchown(fd, uid, gid) < 0) {
		int e = errno;

		close(fd);
		return nf_fail(a->ctx, -e, "cannot set mode/owner of '%s': %s",
			       path, strerror(e));
	}
	close(fd);
	return 0;
}

int nf_apply_write(struct nf_apply *a, const char *path, const void *data,
		   size_t len, unsigned mode, uid_t uid, gid_t gid)
{
	char leaf[256];
	int dfd, r;

	if ((r = walk_parent(a, path, 1, &dfd, leaf, sizeof(leaf))))
		return r;
	r = nf_root_write_in(a->ctx, dfd, leaf, path, data, len, mode,
			     (long)uid, (long)gid, 0);
	close(dfd);
	return r;
}

int nf_apply_write_buf(struct nf_apply *a, const char *path,
		       struct nf_buf *b, unsigned mode, uid_t uid, gid_t gid)
{
	int r;

	if (b->err)
		r = nf_fail(a->ctx, b->err, "cannot render '%s': %s", path,
			    nf_strerror(b->err));
	else
		r = nf_apply_write(a, path, b->s ? b->s : "", b->len, mode, uid,
				   gid);
	nf_buf_free(b);
	return r;
}

int nf_apply_symlink(struct nf_apply *a, const char *path, const char *target)
{
	char leaf[256];
	int dfd, r;

	if ((r = walk_parent(a, path, 1, &dfd, leaf, sizeof(leaf))))
		return r;
	if (unlinkat(dfd, leaf, 0) < 0 && errno != ENOENT) {
		r = -errno;
	} else if (symlinkat(target, dfd, leaf) < 0) {
		r = -errno;
	}
	close(dfd);
	if (r)
		return nf_fail(a->ctx, r, "cannot link '%s' in the image: %s",
			       path, strerror(-r));
	return 0;
}

int nf_apply_remove(struct nf_apply *a, const char *path)
{
	char leaf[256];
	char saved[sizeof(a->ctx->errmsg)];
	int dfd, r;

	memcpy(saved, a->ctx->errmsg, sizeof(saved));
	r = walk_parent(a, path, 0, &dfd, leaf, sizeof(leaf));
	if (r == -ENOENT) {
		memcpy(a->ctx->errmsg, saved, sizeof(saved));
		return 0;
	}
	if (r)
		return r;
	r = unlinkat(dfd, leaf, 0) < 0 && errno != ENOENT ? -errno : 0;
	close(dfd);
	if (r)
		return nf_fail(a->ctx, r, "cannot remove '%s' from the image: %s",
			       path, strerror(-r));
	return 0;
}

int nf_apply_read(struct nf_apply *a, const char *path, size_t max,
		  char **buf, size_t *len)
{
	char leaf[256];
	int dfd, fd, r;

	if ((r = walk_parent(a, path, 0, &dfd, leaf, sizeof(leaf))))
		return r == -ENOENT ? (nf_clear_error(a->ctx), -ENOENT) : r;
	fd = openat(dfd, leaf, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	close(dfd);
	if (fd < 0)
		return errno == ENOENT ? -ENOENT
			: nf_fail(a->ctx, -errno, "cannot read '%s' in the "
				  "image: %s", path, strerror(errno));
	r = nf_read_fd(fd, max, buf, len);
	close(fd);
	if (r == NF_E_LIMIT)
		return nf_fail(a->ctx, NF_E_LIMIT, "'%s' in the image is larger "
			       "than %zu bytes", path, max);
	if (r && r != -ENOMEM)
		return nf_fail(a->ctx, r, "cannot read '%s' in the image: %s",
			       path, strerror(-r));
	return r;
}

int nf_apply_exists(struct nf_apply *a, const char *path)
{
	char leaf[256];
	struct stat st;
	int dfd, r;
	char saved[sizeof(a->ctx->errmsg)];

	memcpy(saved, a->ctx->errmsg, sizeof(saved));
	r = walk_parent(a, path, 0, &dfd, leaf, sizeof(leaf));
	memcpy(a->ctx->errmsg, saved, sizeof(saved));
	if (r)
		return 0;
	r = fstatat(dfd, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0;
	close(dfd);
	return r;
}

/* Look `name` up in a colon-separated database of the image (field 3:
 * uid or gid, field 4: primary gid) */
static int lookup_db(struct nf_apply *a, const char *file, const char *name,
		     unsigned long *id, unsigned long *gid)
{
	char *buf, *line, *save = NULL;
	size_t nlen = strlen(name);
	int r, found = -ENOENT;

	r = nf_apply_read(a, file, NF_PASSWD_MAX, &buf, NULL);
	if (r)
		return r;
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *f[5] = { 0 };
		char *p = line;

		if (strncmp(line, name, nlen) || line[nlen] != ':')
			continue;
		for (int i = 0; i < 5 && p; i++) {
			f[i] = p;
			p = strchr(p, ':');
			if (p)
				*p++ = '\0';
		}
		if (!f[2])
			break;
		*id = strtoul(f[2], NULL, 10);
		if (gid && f[3])
			*gid = strtoul(f[3], NULL, 10);
		found = 0;
		break;
	}
	free(buf);
	return found;
}

int nf_apply_user(struct nf_apply *a, const char *name, uid_t *uid, gid_t *gid)
{
	unsigned long u = 0, g = 0;
	int r;

	if (!strcmp(name, "root")) {
		*uid = 0;
		*gid = 0;
		return 0;
	}
	r = lookup_db(a, "/etc/passwd", name, &u, &g);
	if (r)
		return r;
	*uid = (uid_t)u;
	*gid = (gid_t)g;
	return 0;
}

int nf_apply_enable(struct nf_apply *a, const char *unit)
{
	static const char *const dirs[] = { "/etc/systemd/system",
					    "/usr/lib/systemd/system",
					    "/lib/systemd/system" };
	char name[128], link[256], target[256];
	const char *found = NULL;

	if (strchr(unit, '/') || !strcmp(unit, "..") || strlen(unit) > 100)
		return nf_fail(a->ctx, NF_E_INVALID, "unit name '%s' is not valid",
			       unit);
	snprintf(name, sizeof(name), "%s%s", unit,
		 strchr(unit, '.') ? "" : ".service");
	for (size_t i = 0; i < NF_ARRAY_SIZE(dirs); i++) {
		snprintf(target, sizeof(target), "%s/%s", dirs[i], name);
		if (nf_apply_exists(a, target)) {
			found = dirs[i];
			break;
		}
	}
	/* A unit that is not installed yet (a package that comes later or
	 * from an artifact) still gets its link: systemd ignores a dangling
	 * one, and the verifier reports the missing unit by name */
	if (!found)
		nf_log(a->ctx, NF_LOG_INFO, "unit '%s' is not in the image yet; "
		       "enabling it anyway", name);
	snprintf(target, sizeof(target), "%s/%s",
		 found ? found : a->el ? "/usr/lib/systemd/system"
				       : "/lib/systemd/system", name);
	snprintf(link, sizeof(link),
		 "/etc/systemd/system/multi-user.target.wants/%s", name);
	return nf_apply_symlink(a, link, target);
}

int nf_apply_has_daemon(const struct nf_apply *a, const char *daemon)
{
	return nf_profile_runs(a->prof, daemon);
}

int nf_apply_open_root(struct nf_ctx *ctx, const char *path, int *rootfd)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return nf_fail(ctx, -errno, "cannot open image root '%s': %s",
			       path, strerror(errno));
	*rootfd = fd;
	return 0;
}

/* The slurm daemons the verifier gates, where the role runs them */
static const char *const gated_daemons[] = { "slurmd", "slurmctld", "slurmdbd" };

/* The directories a role's slurm daemons write must exist, with their
 * owners, on every boot (a network-booted root is the image again each
 * time, and a profile may move them off the packages' paths): a
 * tmpfiles.d file from slurm.conf's own values.  A directory the system
 * owns is never handed to SlurmUser (a LogFile directly in /var/log). */
static const char *const system_dirs[] = {
	"/", "/etc", "/home", "/opt", "/run", "/srv", "/tmp", "/usr", "/var",
	"/var/lib", "/var/log", "/var/run", "/var/spool", "/var/tmp",
};

/* An absolute path a unit file or a tmpfiles.d line holds as it is */
static int dir_ok(const char *p)
{
	return p && p[0] == '/' && strlen(p) < 512 && !strstr(p, "/../") &&
	       !strstr(p, "/./") && !strpbrk(p, " \t\n\"'\\%");
}

/* A user name tmpfiles.d and systemd take as it is */
static int user_ok(const char *u)
{
	return *u && strlen(u) < 32 && u[0] != '-' &&
	       strspn(u, "abcdefghijklmnopqrstuvwxyz"
		      "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") == strlen(u);
}

static int is_system_dir(const char *p)
{
	for (size_t i = 0; i < NF_ARRAY_SIZE(system_dirs); i++)
		if (!strcmp(p, system_dirs[i]))
			return 1;
	return 0;
}

/* One tmpfiles.d line: the first owner asked for a directory wins,
 * except that SlurmUser wins over root (root writes anywhere) */
static int slurm_dir(struct nf_apply *a, json_t *dirs, const char *key,
		     const char *path, int parent, const char *owner,
		     const char *mode)
{
	char buf[512];
	const char *p = path;
	json_t *have, *e;

	if (!path)
		return 0;
	if (!dir_ok(path))
		return nf_fail(a->ctx, NF_E_INVALID, "slurm %s '%s' is not an "
			       "absolute path a tmpfiles.d line can hold", key,
			       path);
	if (parent) {
		snprintf(buf, sizeof(buf), "%s", path);
		*strrchr(buf, '/') = '\0';
		p = *buf ? buf : "/";
	}
	if (is_system_dir(p)) {
		if (parent)
			return 0;
		return nf_fail(a->ctx, NF_E_INVALID, "slurm %s '%s' is a "
			       "system directory: give the daemon its own",
			       key, path);
	}
	have = json_object_get(dirs, p);
	if (have && (strcmp(json_string_value(json_object_get(have, "owner")),
			    "root") || !strcmp(owner, "root")))
		return 0;
	e = json_pack("{s:s,s:s,s:s}", "owner", owner, "mode", mode, "key", key);
	if (!e || json_object_set_new(dirs, p, e))
		return -ENOMEM;
	return 0;
}

static int apply_slurm_dirs(struct nf_apply *a)
{
	const json_t *slurm = json_object_get(a->prof, "slurm");
	const json_t *conf = json_object_get(slurm, "conf");
	const json_t *dbd = json_object_get(slurm, "dbd");
	const char *user = json_string_value(json_object_get(conf, "SlurmUser"));
	const char *dbd_user = json_string_value(json_object_get(dbd, "SlurmUser"));
	json_t *dirs = json_object();
	struct nf_buf b = { 0 };
	const char *k;
	json_t *v;
	int r = 0;

	if (!dirs)
		return -ENOMEM;
	/* Slurm's own default SlurmUser is root */
	user = user ? user : "root";
	dbd_user = dbd_user ? dbd_user : user;
	if (!user_ok(user) || !user_ok(dbd_user)) {
		r = nf_fail(a->ctx, NF_E_INVALID, "SlurmUser '%s' is not a user "
			    "name", user_ok(user) ? dbd_user : user);
		goto out;
	}
#define STR(o, key) json_string_value(json_object_get((o), (key)))
	if (nf_apply_has_daemon(a, "slurmctld") &&
	    ((r = slurm_dir(a, dirs, "StateSaveLocation",
			    STR(conf, "StateSaveLocation"), 0, user, "0700")) ||
	     (r = slurm_dir(a, dirs, "SlurmctldLogFile",
			    STR(conf, "SlurmctldLogFile"), 1, user, "0755"))))
		goto out;
	if (nf_apply_has_daemon(a, "slurmd") &&
	    ((r = slurm_dir(a, dirs, "SlurmdSpoolDir",
			    STR(conf, "SlurmdSpoolDir"), 0, "root", "0755")) ||
	     (r = slurm_dir(a, dirs, "SlurmdLogFile",
			    STR(conf, "SlurmdLogFile"), 1, "root", "0755"))))
		goto out;
	if (nf_apply_has_daemon(a, "slurmdbd") &&
	    (r = slurm_dir(a, dirs, "LogFile", STR(dbd, "LogFile"), 1,
			   dbd_user, "0755")))
		goto out;
#undef STR
	if (!json_object_size(dirs))
		goto out;
	nf_apply_header(&b, "#", "slurm");
	nf_buf_printf(&b, "# The directories this role's slurm daemons write, "
		      "from slurm.conf\n");
	json_object_foreach(dirs, k, v) {
		const char *owner = json_string_value(json_object_get(v, "owner"));

		nf_buf_printf(&b, "# %s\nd %s %s %s %s -\n",
			      json_string_value(json_object_get(v, "key")), k,
			      json_string_value(json_object_get(v, "mode")),
			      owner, owner);
	}
	r = nf_apply_write_buf(a, "/etc/tmpfiles.d/nodeforge-slurm.conf", &b,
			       0644, 0, 0);
out:
	json_decref(dirs);
	return r;
}

/* A network-booted node's root is RAM (tmpfs, ramfs or the kernel's
 * rootfs): a controller there loses its accounting database and
 * slurmctld's state at every reboot.  That is allowed (a lab, a cluster in
 * a box) but must be said where an operator looks: the journal at warning
 * priority and the login banner. */
static const char volatile_script[] =
	"#!/bin/sh\n"
	"# Written by nodeforge build: warn when a directory whose contents\n"
	"# must outlive a reboot lives in RAM (a network-booted root).\n"
	"# usage: volatile-state MOTD_FILE DIR...\n"
	"set -u\n"
	"motd=$1\n"
	"shift\n"
	"lost=\n"
	"for d in \"$@\"; do\n"
	"\tp=$d\n"
	"\twhile [ ! -e \"$p\" ] && [ \"$p\" != / ]; do p=$(dirname \"$p\"); done\n"
	"\tfs=$(findmnt -n -o FSTYPE --target \"$p\" 2>/dev/null) || fs=\n"
	"\t[ -n \"$fs\" ] || fs=$(stat -f -c %T \"$p\" 2>/dev/null) || fs=\n"
	"\tcase $fs in\n"
	"\ttmpfs|ramfs|rootfs)\n"
	"\t\techo \"<4>nodeforge: $d is on $fs (RAM): its contents are lost\"\\\n"
	"\t\t\"at every reboot\" >&2\n"
	"\t\tlost=\"$lost $d\" ;;\n"
	"\tesac\n"
	"done\n"
	"if [ -z \"$lost\" ]; then\n"
	"\trm -f \"$motd\"\n"
	"\texit 0\n"
	"fi\n"
	"mkdir -p \"$(dirname \"$motd\")\"\n"
	"printf 'nodeforge: WARNING: lost at every reboot (in RAM):%s\\n' \"$lost\" \\\n"
	"\t> \"$motd\"\n";

/* The role's own accounting database: slurmdbd storing into the MariaDB
 * of this node (the mariadb facet sets it up) */
static int local_accounting_db(const struct nf_apply *a)
{
	const json_t *dbd = json_object_get(json_object_get(a->prof, "slurm"), "dbd");
	const char *t = json_string_value(json_object_get(dbd, "StorageType"));
	const char *h = json_string_value(json_object_get(dbd, "StorageHost"));

	return nf_apply_has_daemon(a, "slurmdbd") && t &&
	       !strcmp(t, "accounting_storage/mysql") &&
	       (!h || !strcmp(h, "localhost"));
}

static int apply_volatile_warning(struct nf_apply *a)
{
	const char *state = json_string_value(json_object_get(json_object_get(
		json_object_get(a->prof, "slurm"), "conf"), "StateSaveLocation"));
	struct nf_buf b = { 0 };
	int ctld = nf_apply_has_daemon(a, "slurmctld") && state && dir_ok(state);
	int db = local_accounting_db(a);
	int r;

	if (!ctld && !db)
		return 0;
	nf_buf_printf(&b, "%s", volatile_script);
	if ((r = nf_apply_write_buf(a, "/usr/lib/nodeforge/volatile-state", &b,
				    0755, 0, 0)))
		return r;
	nf_apply_header(&b, "#", "verify");
	nf_buf_printf(&b,
		"[Unit]\n"
		"Description=nodeforge: warn when this node's durable state is in RAM\n"
		"After=local-fs.target systemd-tmpfiles-setup.service\n"
		"Before=mariadb.service slurmdbd.service slurmctld.service "
		"nodeforge-verify.service\n"
		"\n"
		"[Service]\n"
		"Type=oneshot\n"
		"RemainAfterExit=yes\n"
		"ExecStart=/usr/lib/nodeforge/volatile-state "
		"/run/motd.d/nodeforge-volatile%s%s%s\n"
		"\n"
		"[Install]\n"
		"WantedBy=multi-user.target\n",
		db ? " /var/lib/mysql" : "", ctld ? " " : "", ctld ? state : "");
	if ((r = nf_apply_write_buf(a, "/etc/systemd/system/"
				    "nodeforge-volatile-state.service", &b,
				    0644, 0, 0)))
		return r;
	return nf_apply_symlink(a, "/etc/systemd/system/multi-user.target.wants/"
				"nodeforge-volatile-state.service",
				"/etc/systemd/system/nodeforge-volatile-state.service");
}

/* The verifier gates the role's slurm daemons: a oneshot unit each of
 * them requires.  It has no Condition*: a skipped unit satisfies
 * Requires=, so a node without its profile.json would start its daemons
 * unverified; the verifier fails on a missing profile instead. */
static int apply_verifier(struct nf_apply *a)
{
	struct nf_buf b = { 0 };
	char path[128];
	int r;

	nf_apply_header(&b, "#", "verify");
	nf_buf_printf(&b,
		"[Unit]\n"
		"Description=nodeforge first-boot verification of this node\n"
		"Documentation=man:nodeforge-verify(1)\n"
		"Wants=network-online.target time-sync.target\n"
		"After=network-online.target time-sync.target remote-fs.target "
		"munge.service\n");
	/* time.sync reads the clock once: after chrony's first sync (or
	 * its bounded wait giving up), not right after chronyd started */
	if (json_object_get(a->prof, "time"))
		nf_buf_printf(&b, "Wants=chrony-wait.service\n"
			      "After=chrony-wait.service\n");
	/* mariadb.accounting reads how the accounting database's set-up
	 * went: a password enrollment never delivered is a root cause */
	if (local_accounting_db(a))
		nf_buf_printf(&b, "After=nodeforge-dbinit.service\n");
	/* the services the profile enables have started (or failed) before
	 * their checks run: a unit still 'activating' is no verdict */
	{
		const json_t *en = json_object_get(json_object_get(
			json_object_get(a->prof, "system"), "services"), "enable");
		size_t i;
		json_t *v;

		json_array_foreach(en, i, v) {
			const char *u = json_string_value(v);

			if (!u || !strncmp(u, "slurm", 5) || strchr(u, '/') ||
			    strpbrk(u, " \t\n"))
				continue;
			nf_buf_printf(&b, "After=%s%s\n", u,
				      strchr(u, '.') ? "" : ".service");
		}
		/* the GPU services their facets enable (not the list) */
		const char *fu[] = { nf_gpu_persistence_unit(a->prof),
				     nf_fabric_manager_unit(a->prof) };

		for (i = 0; i < NF_ARRAY_SIZE(fu); i++)
			if (fu[i])
				nf_buf_printf(&b, "After=%s.service\n", fu[i]);
	}
	for (size_t i = 0; i < NF_ARRAY_SIZE(gated_daemons); i++)
		if (nf_apply_has_daemon(a, gated_daemons[i]))
			nf_buf_printf(&b, "Before=%s.service\n", gated_daemons[i]);
	nf_buf_printf(&b,
		"\n"
		"[Service]\n"
		"Type=oneshot\n"
		"RemainAfterExit=yes\n"
		"# a missing profile.json fails here, and the daemons stay down\n"
		"ExecStart=/usr/bin/nodeforge verify --gate "
		"--profile /etc/nodeforge/profile.json\n"
		"# the report on the serial console too (a BMC's serial-over-LAN)\n"
		"StandardOutput=journal+console\n"
		"StandardError=journal+console\n"
		"TimeoutStartSec=300\n"
		"\n"
		"[Install]\n"
		"WantedBy=multi-user.target\n");
	if ((r = nf_apply_write_buf(a, "/etc/systemd/system/nodeforge-verify.service",
				    &b, 0644, 0, 0)))
		return r;
	if ((r = nf_apply_symlink(a, "/etc/systemd/system/multi-user.target.wants/"
				  "nodeforge-verify.service",
				  "/etc/systemd/system/nodeforge-verify.service")))
		return r;
	for (size_t i = 0; i < NF_ARRAY_SIZE(gated_daemons); i++) {
		const char *d = gated_daemons[i];

		if (!nf_apply_has_daemon(a, d))
			continue;
		nf_apply_header(&b, "#", "verify");
		nf_buf_printf(&b,
			"# %s starts only after the verifier passed on this boot\n"
			"[Unit]\n"
			"Requires=nodeforge-verify.service\n"
			"After=nodeforge-verify.service\n", d);
		snprintf(path, sizeof(path), "/etc/systemd/system/%s.service.d/"
			 "nodeforge-verify.conf", d);
		if ((r = nf_apply_write_buf(a, path, &b, 0644, 0, 0)))
			return r;
	}
	if ((r = apply_slurm_dirs(a)))
		return r;
	return apply_volatile_warning(a);
}

int nf_apply_all(struct nf_ctx *ctx, int rootfd, const struct nf_profile *p)
{
	return nf_apply_all_cluster(ctx, rootfd, p, NULL);
}

int nf_apply_all_cluster(struct nf_ctx *ctx, int rootfd,
			 const struct nf_profile *p, const json_t *cluster)
{
	const json_t *prof = nf_profile_json(p);
	const json_t *site = json_object_get(prof, "site");
	const char *distro = json_string_value(json_object_get(site, "distro"));
	struct nf_apply a = {
		.ctx = ctx,
		.rootfd = rootfd,
		.profile = p,
		.prof = prof,
		.site = site,
		.role = json_string_value(json_object_get(prof, "role")),
		.distro = distro ? distro : "debian13",
		.cluster = cluster,
	};
	char *doc;
	int r;

	if (!a.role)
		a.role = nf_profile_name(p);
	a.el = nf_distro_is_el(a.distro);
	for (size_t i = 0; i < nf_nfacets; i++) {
		const struct nf_facet *f = nf_facets[i];
		const json_t *sec = json_object_get(prof, f->name);

		if (!f->apply || !sec)
			continue;
		nf_log(ctx, NF_LOG_DEBUG, "apply: facet '%s'", f->name);
		if ((r = f->apply(&a, sec)) < 0) {
			if (!ctx->errmsg[0])
				nf_fail(ctx, r, "facet '%s': %s", f->name,
					nf_strerror(r));
			return r;
		}
	}
	if ((r = apply_verifier(&a)))
		return r;
	doc = json_dumps(prof, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	if (!doc)
		return -ENOMEM;
	size_t n = strlen(doc);

	doc[n] = '\0';
	struct nf_buf b = { .s = doc, .len = n, .cap = n + 1 };

	nf_buf_printf(&b, "\n");
	return nf_apply_write_buf(&a, "/etc/nodeforge/profile.json", &b, 0644,
				  0, 0);
}

int nf_apply_unit(struct nf_apply *a, const char *name, struct nf_buf *b)
{
	char path[256], wants[320];
	int r;

	snprintf(path, sizeof(path), "/etc/systemd/system/%s", name);
	snprintf(wants, sizeof(wants),
		 "/etc/systemd/system/multi-user.target.wants/%s", name);
	if ((r = nf_apply_write_buf(a, path, b, 0644, 0, 0)))
		return r;
	return nf_apply_symlink(a, wants, path);
}
