/* SPDX-License-Identifier: MIT */
/*
 * Facet apply: every role of the embedded default is applied into an empty
 * root and the tree is compared with tests/fixtures/apply/<role>/ (files by
 * content and mode, symlinks by target).  NF_UPDATE_FIXTURES=1 rewrites the
 * expected trees instead.  The passing sysroot of the verify tests
 * (tests/fixtures/sysroot/pass) holds the compute role's files as apply
 * writes them.
 */
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "internal.h"

static const char *srcdir(void)
{
	const char *s = getenv("NF_SRCDIR");

	return s && *s ? s : ".";
}

static int rm_cb(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)flag;
	(void)f;
	return remove(p);
}

static void rm_rf(const char *dir)
{
	nftw(dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

static void apply_role(const char *role, char *root, size_t rootsz)
{
	struct nf_ctx *ctx;
	struct nf_site *site;
	struct nf_profile *p;
	struct nf_diags d;
	char dir[PATH_MAX], sitep[PATH_MAX + 16];
	int fd;

	snprintf(root, rootsz, "/tmp/nf-apply.XXXXXX");
	assert_non_null(mkdtemp(root));
	snprintf(dir, sizeof(dir), "%s/profiles", srcdir());
	snprintf(sitep, sizeof(sitep), "%s/site.yaml", dir);
	assert_int_equal(nf_ctx_new(&ctx), 0);
	nf_ctx_set_profiles_dir(ctx, dir);
	nf_diags_init(&d);
	assert_int_equal(nf_site_load(ctx, sitep, &site, &d), 0);
	assert_int_equal(nf_profile_resolve(ctx, role, site, &p, &d), 0);
	assert_int_equal(nf_apply_open_root(ctx, root, &fd), 0);
	if (nf_apply_all(ctx, fd, p))
		fail_msg("apply %s: %s", role, nf_errmsg(ctx));
	close(fd);
	nf_profile_free(p);
	nf_site_free(site);
	nf_diags_free(&d);
	nf_ctx_free(ctx);
}

/* Walk `a` and compare every entry with `b` */
static int tree_diff(const char *a, const char *b, const char *rel, int *n)
{
	char pa[PATH_MAX], pb[PATH_MAX];
	struct dirent *de;
	DIR *dir;

	snprintf(pa, sizeof(pa), "%s%s", a, rel);
	dir = opendir(pa);
	if (!dir)
		return -1;
	while ((de = readdir(dir))) {
		char r2[PATH_MAX];
		struct stat sa, sb;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(r2, sizeof(r2), "%s/%s", rel, de->d_name);
		snprintf(pa, sizeof(pa), "%s%s", a, r2);
		snprintf(pb, sizeof(pb), "%s%s", b, r2);
		(*n)++;
		if (lstat(pa, &sa) || lstat(pb, &sb)) {
			print_error("missing on one side: %s\n", r2);
			closedir(dir);
			return 1;
		}
		/* modes are compared through the .tree listing: git keeps
		 * only the executable bit */
		if ((sa.st_mode & S_IFMT) != (sb.st_mode & S_IFMT)) {
			print_error("type differs: %s (%o vs %o)\n", r2,
				    sa.st_mode, sb.st_mode);
			closedir(dir);
			return 1;
		}
		if (S_ISDIR(sa.st_mode)) {
			if (tree_diff(a, b, r2, n)) {
				closedir(dir);
				return 1;
			}
		} else if (S_ISLNK(sa.st_mode)) {
			char la[PATH_MAX] = "", lb[PATH_MAX] = "";

			if (readlink(pa, la, sizeof(la) - 1) < 0 ||
			    readlink(pb, lb, sizeof(lb) - 1) < 0 || strcmp(la, lb)) {
				print_error("link differs: %s: %s vs %s\n", r2, la, lb);
				closedir(dir);
				return 1;
			}
		} else {
			char cmd[3 * PATH_MAX];

			snprintf(cmd, sizeof(cmd), "cmp -s '%s' '%s'", pa, pb);
			if (system(cmd)) {
				snprintf(cmd, sizeof(cmd), "diff -u '%s' '%s' >&2",
					 pb, pa);
				if (system(cmd) < 0)
					print_error("diff failed\n");
				closedir(dir);
				return 1;
			}
		}
	}
	closedir(dir);
	return 0;
}

static void check_role(const char *role)
{
	char root[64], exp[PATH_MAX], cmd[3 * PATH_MAX];
	int n1 = 0, n2 = 0;

	apply_role(role, root, sizeof(root));
	snprintf(exp, sizeof(exp), "%s/tests/fixtures/apply/%s", srcdir(), role);
	if (getenv("NF_UPDATE_FIXTURES")) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s' && mkdir -p '%s' && "
			 "cp -a '%s/.' '%s/'", exp, exp, root, exp);
		assert_int_equal(system(cmd), 0);
	}
	/* every entry's mode, type and link target, dirs included */
	snprintf(cmd, sizeof(cmd), "cd '%s' && find . -mindepth 1 -printf "
		 "'%%m %%y %%p %%l\\n' | LC_ALL=C sort > '%s.tree'",
		 root, root);
	assert_int_equal(system(cmd), 0);
	if (getenv("NF_UPDATE_FIXTURES")) {
		snprintf(cmd, sizeof(cmd), "cp '%s.tree' '%s.tree'", root, exp);
		assert_int_equal(system(cmd), 0);
	} else {
		snprintf(cmd, sizeof(cmd), "diff -u '%s.tree' '%s.tree' >&2",
			 exp, root);
		assert_int_equal(system(cmd), 0);
	}
	/* both directions: nothing missing, nothing extra */
	(void)n1;
	(void)n2;
	assert_int_equal(tree_diff(exp, root, "", &n2), 0);
	assert_true(n2 > 5);
	rm_rf(root);
	snprintf(cmd, sizeof(cmd), "%s.tree", root);
	unlink(cmd);
}

static void test_apply_compute(void **s) { (void)s; check_role("compute"); }
static void test_apply_controller(void **s) { (void)s; check_role("controller"); }
static void test_apply_login(void **s) { (void)s; check_role("login"); }

static struct nf_apply *bare(struct nf_ctx *ctx, char *root, size_t n)
{
	static struct nf_apply a;

	snprintf(root, n, "/tmp/nf-apply.XXXXXX");
	assert_non_null(mkdtemp(root));
	memset(&a, 0, sizeof(a));
	a.ctx = ctx;
	assert_int_equal(nf_apply_open_root(ctx, root, &a.rootfd), 0);
	return &a;
}

/* Nothing may escape the root: "..", relative paths and symlinked
 * directories are refused */
static void test_apply_unsafe(void **state)
{
	struct nf_ctx *ctx;
	struct nf_apply *a;
	char root[64], p[128];
	struct stat st;

	(void)state;
	assert_int_equal(nf_ctx_new(&ctx), 0);
	a = bare(ctx, root, sizeof(root));
	assert_int_equal(nf_apply_write(a, "/etc/../../x", "x", 1, 0644, 0, 0),
			 NF_E_UNSAFE);
	assert_int_equal(nf_apply_write(a, "etc/x", "x", 1, 0644, 0, 0),
			 NF_E_UNSAFE);
	/* refused before anything was created */
	snprintf(p, sizeof(p), "%s/etc", root);
	assert_int_not_equal(lstat(p, &st), 0);
	assert_int_equal(nf_apply_write(a, "/etc//x", "x", 1, 0644, 0, 0),
			 NF_E_UNSAFE);
	/* a directory symlink pointing out of the root */
	snprintf(p, sizeof(p), "%s/var", root);
	assert_int_equal(symlink("/tmp", p), 0);
	assert_int_equal(nf_apply_write(a, "/var/nf-escape-test", "x", 1, 0644,
					0, 0), NF_E_UNSAFE);
	assert_int_not_equal(stat("/tmp/nf-escape-test", &st), 0);
	assert_non_null(strstr(nf_errmsg(ctx), "symlink"));
	/* a symlink as the last component is replaced, never written through */
	assert_int_equal(nf_apply_mkdir(a, "/srv", 0755, 0, 0), 0);
	snprintf(p, sizeof(p), "%s/srv/f", root);
	assert_int_equal(symlink("/tmp/nf-escape-test2", p), 0);
	assert_int_equal(nf_apply_write(a, "/srv/f", "x", 1, 0600, 0, 0), 0);
	assert_int_not_equal(stat("/tmp/nf-escape-test2", &st), 0);
	assert_int_equal(lstat(p, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0600);
	close(a->rootfd);
	rm_rf(root);
	nf_ctx_free(ctx);
}

/* pam_slurm_adopt goes after the distro's account stack, once */
static void test_apply_pam_edit(void **state)
{
	struct nf_ctx *ctx;
	struct nf_apply *a;
	char root[64];
	char *out;
	json_t *prof = json_pack("{s:{s:[s]}}", "slurm", "daemons", "slurmd");
	json_t *sec = json_pack("{s:b,s:b}", "slurm_adopt", 1, "use_pam", 1);
	static const char stock[] = "@include common-auth\n"
				    "account    required     pam_nologin.so\n"
				    "@include common-account\n"
				    "@include common-session\n";

	(void)state;
	assert_int_equal(nf_ctx_new(&ctx), 0);
	a = bare(ctx, root, sizeof(root));
	a->prof = prof;
	assert_int_equal(nf_apply_write(a, "/etc/pam.d/sshd", stock,
					strlen(stock), 0644, 0, 0), 0);
	assert_int_equal(nf_facet_find("pam")->apply(a, sec), 0);
	assert_int_equal(nf_facet_find("pam")->apply(a, sec), 0);
	assert_int_equal(nf_apply_read(a, "/etc/pam.d/sshd", 1 << 16, &out, NULL), 0);
	assert_string_equal(out,
		"@include common-auth\n"
		"account    required     pam_nologin.so\n"
		"@include common-account\n"
		"# nodeforge (facet 'pam'): SSH only into nodes where the user has a job\n"
		"account    required     pam_slurm_adopt.so\n"
		"@include common-session\n");
	free(out);
	json_decref(prof);
	json_decref(sec);
	close(a->rootfd);
	rm_rf(root);
	nf_ctx_free(ctx);
}

/* Apply a resolved profile given as JSON into a fresh root: its result,
 * the root in `root` */
static int apply_json(struct nf_ctx *ctx, const char *json, char *root,
		      size_t rootsz)
{
	struct nf_profile *p;
	char path[128];
	FILE *f;
	int fd, r;

	snprintf(root, rootsz, "/tmp/nf-apply.XXXXXX");
	assert_non_null(mkdtemp(root));
	snprintf(path, sizeof(path), "%s.json", root);
	assert_non_null(f = fopen(path, "w"));
	fputs(json, f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(nf_profile_load_json(ctx, path, &p), 0);
	unlink(path);
	assert_int_equal(nf_apply_open_root(ctx, root, &fd), 0);
	r = nf_apply_all(ctx, fd, p);
	close(fd);
	nf_profile_free(p);
	return r;
}

/* The contents of `rel` under `root`, or NULL when it is not there */
static char *slurp(const char *root, const char *rel)
{
	char path[PATH_MAX], *buf = calloc(1, 65536);
	FILE *f;

	assert_non_null(buf);
	snprintf(path, sizeof(path), "%s%s", root, rel);
	if (!(f = fopen(path, "r"))) {
		free(buf);
		return NULL;
	}
	if (fread(buf, 1, 65535, f) == 0)
		buf[0] = '\0';
	fclose(f);
	return buf;
}

static int exists(const char *root, const char *rel)
{
	char path[PATH_MAX];
	struct stat st;

	snprintf(path, sizeof(path), "%s%s", root, rel);
	return lstat(path, &st) == 0;
}

#define TMPFILES "/etc/tmpfiles.d/nodeforge-slurm.conf"
#define TMPFILES_HEAD \
	"# Written by nodeforge build (facet 'slurm') from the resolved profile.\n" \
	"# Edit the profile, not this file: the verifier checks it.\n" \
	"# The directories this role's slurm daemons write, from slurm.conf\n"

/* The state and spool directories come from the profile's slurm.conf,
 * with the owner the daemon writes them as; a log file straight in a
 * system directory never hands that directory to SlurmUser */
static void test_apply_slurm_dirs(void **state)
{
	struct nf_ctx *ctx;
	char root[64], *t;

	(void)state;
	assert_int_equal(nf_ctx_new(&ctx), 0);
	assert_int_equal(apply_json(ctx,
		"{\"role\":\"r\",\"boot_args\":[],\"slurm\":{"
		"\"daemons\":[\"slurmctld\",\"slurmd\",\"slurmdbd\"],"
		"\"conf\":{\"SlurmUser\":\"slurmx\","
		"\"StateSaveLocation\":\"/srv/slurm/ctld\","
		"\"SlurmdSpoolDir\":\"/srv/slurm/d\","
		"\"SlurmctldLogFile\":\"/var/log/slurm/ctld.log\","
		"\"SlurmdLogFile\":\"/var/log/slurmd.log\"},"
		"\"dbd\":{\"LogFile\":\"/var/log/slurm/dbd.log\"}}}",
		root, sizeof(root)), 0);
	assert_non_null(t = slurp(root, TMPFILES));
	assert_string_equal(t, TMPFILES_HEAD
		"# StateSaveLocation\nd /srv/slurm/ctld 0700 slurmx slurmx -\n"
		"# SlurmctldLogFile\nd /var/log/slurm 0755 slurmx slurmx -\n"
		"# SlurmdSpoolDir\nd /srv/slurm/d 0755 root root -\n");
	free(t);
	rm_rf(root);

	/* slurmd's root log directory, shared with slurmdbd: SlurmUser
	 * (root writes anywhere); no slurmctld, no state directory */
	assert_int_equal(apply_json(ctx,
		"{\"role\":\"r\",\"boot_args\":[],\"slurm\":{"
		"\"daemons\":[\"slurmd\",\"slurmdbd\"],"
		"\"conf\":{\"StateSaveLocation\":\"/srv/slurm/ctld\","
		"\"SlurmdLogFile\":\"/var/log/slurm/slurmd.log\"},"
		"\"dbd\":{\"SlurmUser\":\"slurm\",\"LogFile\":\"/var/log/slurm/dbd.log\"}}}",
		root, sizeof(root)), 0);
	assert_non_null(t = slurp(root, TMPFILES));
	assert_string_equal(t, TMPFILES_HEAD
		"# LogFile\nd /var/log/slurm 0755 slurm slurm -\n");
	free(t);
	rm_rf(root);

	/* a role whose daemons name no directory gets no file */
	assert_int_equal(apply_json(ctx, "{\"role\":\"r\",\"boot_args\":[],"
		"\"slurm\":{\"daemons\":[\"slurmd\"],\"conf\":{}}}",
		root, sizeof(root)), 0);
	assert_false(exists(root, TMPFILES));
	rm_rf(root);
	nf_ctx_free(ctx);
}

static void test_apply_slurm_dirs_refused(void **state)
{
	static const char *const bad[] = { "/var/lib", "/srv/a b", "srv/state",
					   "/srv/../etc" };
	struct nf_ctx *ctx;
	char root[64], json[512];

	(void)state;
	assert_int_equal(nf_ctx_new(&ctx), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(json, sizeof(json), "{\"role\":\"r\",\"boot_args\":[],"
			 "\"slurm\":{\"daemons\":[\"slurmctld\"],\"conf\":"
			 "{\"StateSaveLocation\":\"%s\"}}}", bad[i]);
		assert_int_equal(apply_json(ctx, json, root, sizeof(root)),
				 NF_E_INVALID);
		assert_non_null(strstr(nf_errmsg(ctx), "StateSaveLocation"));
		assert_non_null(strstr(nf_errmsg(ctx), bad[i]));
		rm_rf(root);
	}
	nf_ctx_free(ctx);
}

/* Every slurm daemon of the role is gated, none other; the verifier has
 * no condition that could skip it (a skipped unit satisfies Requires=) */
static void test_apply_gate_daemons(void **state)
{
	static const char *const d[] = { "slurmd", "slurmctld", "slurmdbd" };
	struct nf_ctx *ctx;
	char root[64], rel[128], want[64], *u;

	(void)state;
	assert_int_equal(nf_ctx_new(&ctx), 0);
	assert_int_equal(apply_json(ctx, "{\"role\":\"r\",\"boot_args\":[],"
		"\"slurm\":{\"daemons\":[\"slurmctld\",\"slurmdbd\"]}}",
		root, sizeof(root)), 0);
	assert_non_null(u = slurp(root, "/etc/systemd/system/nodeforge-verify.service"));
	assert_null(strstr(u, "Condition"));
	for (size_t i = 0; i < 3; i++) {
		snprintf(rel, sizeof(rel), "/etc/systemd/system/%s.service.d/"
			 "nodeforge-verify.conf", d[i]);
		snprintf(want, sizeof(want), "Before=%s.service\n", d[i]);
		assert_int_equal(exists(root, rel), i > 0);
		assert_int_equal(strstr(u, want) != NULL, i > 0);
	}
	/* no time facet, no wait for chrony */
	assert_null(strstr(u, "chrony-wait"));
	free(u);
	rm_rf(root);
	nf_ctx_free(ctx);
}

/* time.sync_wait_s is how long chrony-wait holds the verifier (and the
 * verifier's words when it gave up); without it, chrony-wait's 180 s */
static void test_apply_time_sync_wait(void **state)
{
	static const char *const prof[] = {
		"{\"role\":\"r\",\"boot_args\":[],\"time\":{\"servers\":[\"10.0.0.1\"],"
		"\"sync_wait_s\":15}}",
		"{\"role\":\"r\",\"boot_args\":[],\"time\":{\"servers\":[\"10.0.0.1\"]}}",
	};
	static const char *const want[] = {
		"TimeoutStartSec=15\n", "TimeoutStartSec=180\n",
	};
	struct nf_ctx *ctx;
	char root[64], *u;

	(void)state;
	for (size_t i = 0; i < 2; i++) {
		assert_int_equal(nf_ctx_new(&ctx), 0);
		assert_int_equal(apply_json(ctx, prof[i], root, sizeof(root)), 0);
		assert_non_null(u = slurp(root, "/etc/systemd/system/chrony-wait.service.d/"
					  "nodeforge.conf"));
		assert_non_null(strstr(u, want[i]));
		free(u);
		rm_rf(root);
		nf_ctx_free(ctx);
	}
}

/* The profile's sysctl in one file, in name order whatever the profile's
 * order, a vector on one line; a key that would name a file outside
 * /proc/sys fails the build and writes nothing */
static void test_apply_sysctl(void **state)
{
	static const char prof[] =
		"{\"role\":\"r\",\"boot_args\":[],\"sysctl\":{"
		"\"vm.max_map_count\":262144,\"net.ipv4.tcp_rmem\":\"4096\\t87380   6291456\","
		"\"net/ipv4/conf/eth0.100/forwarding\":1,"
		"\"net.ipv4.conf.eth0/100.rp_filter\":2,\"kernel.perf_event_paranoid\":-1}}";
	static const char bad[] =
		"{\"role\":\"r\",\"boot_args\":[],\"sysctl\":{\"net/../../etc/passwd\":1}}";
	struct nf_ctx *ctx;
	char root[64], path[PATH_MAX], *u;
	struct stat st;

	(void)state;
	assert_int_equal(nf_ctx_new(&ctx), 0);
	assert_int_equal(apply_json(ctx, prof, root, sizeof(root)), 0);
	assert_non_null(u = slurp(root, "/etc/sysctl.d/90-nodeforge.conf"));
	assert_string_equal(u,
		"# Written by nodeforge build (facet 'sysctl') from the resolved profile.\n"
		"# Edit the profile, not this file: the verifier checks it.\n"
		"kernel.perf_event_paranoid = -1\n"
		"net.ipv4.conf.eth0/100.rp_filter = 2\n"
		"net.ipv4.tcp_rmem = 4096 87380 6291456\n"
		"net/ipv4/conf/eth0.100/forwarding = 1\n"
		"vm.max_map_count = 262144\n");
	snprintf(path, sizeof(path), "%s/etc/sysctl.d/90-nodeforge.conf", root);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0644);
	free(u);
	rm_rf(root);
	assert_int_equal(apply_json(ctx, bad, root, sizeof(root)), NF_E_INVALID);
	assert_non_null(strstr(nf_errmsg(ctx), "net/../../etc/passwd"));
	assert_false(exists(root, "/etc/sysctl.d/90-nodeforge.conf"));
	rm_rf(root);
	nf_ctx_free(ctx);
}

/* A key moved by the profile (munge.key_path) moves munged's --key-file
 * and the conditions of the enrollment and rotation units with it; the
 * default place writes neither */
static void test_apply_munge_key_moved(void **state)
{
	static const char *const units[] = { "nodeforge-enroll", "nodeforge-rotate" };
	struct nf_ctx *ctx;
	struct nf_profile *p;
	char root[64], path[PATH_MAX], *u;
	FILE *f;
	int fd;

	(void)state;
	assert_int_equal(nf_ctx_new(&ctx), 0);
	for (int moved = 0; moved < 2; moved++) {
		snprintf(root, sizeof(root), "/tmp/nf-apply.XXXXXX");
		assert_non_null(mkdtemp(root));
		for (const char *d = "/etc\0/etc/systemd\0/etc/systemd/system\0"; *d;
		     d += strlen(d) + 1) {
			snprintf(path, sizeof(path), "%s%s", root, d);
			assert_int_equal(mkdir(path, 0755), 0);
		}
		for (size_t i = 0; i < 2; i++) {
			snprintf(path, sizeof(path), "%s/etc/systemd/system/%s.service",
				 root, units[i]);
			assert_non_null(f = fopen(path, "w"));
			fputs("[Unit]\nConditionPathExists=/etc/munge/munge.key\n", f);
			assert_int_equal(fclose(f), 0);
		}
		snprintf(path, sizeof(path), "%s.json", root);
		assert_non_null(f = fopen(path, "w"));
		fprintf(f, "{\"role\":\"r\",\"boot_args\":[],\"munge\":{\"key_path\":"
			"\"%s\",\"max_ttl\":300}}",
			moved ? "/etc/munge-site/cluster.key" : "/etc/munge/munge.key");
		assert_int_equal(fclose(f), 0);
		assert_int_equal(nf_profile_load_json(ctx, path, &p), 0);
		unlink(path);
		assert_int_equal(nf_apply_open_root(ctx, root, &fd), 0);
		assert_int_equal(nf_apply_all(ctx, fd, p), 0);
		close(fd);
		nf_profile_free(p);
		assert_non_null(u = slurp(root, "/etc/systemd/system/munge.service.d/nodeforge.conf"));
		assert_non_null(strstr(u, moved ?
			"ExecStart=/usr/sbin/munged $OPTIONS --max-ttl=300 --key-file=/etc/munge-site/cluster.key\n" :
			"ExecStart=/usr/sbin/munged $OPTIONS --max-ttl=300\n"));
		free(u);
		u = slurp(root, "/etc/systemd/system/nodeforge-enroll.service.d/nodeforge-key.conf");
		assert_int_equal(u != NULL, moved);
		if (u)
			assert_non_null(strstr(u, "[Unit]\nConditionPathExists=\n"
				"ConditionPathExists=!/etc/munge-site/cluster.key\n"));
		free(u);
		u = slurp(root, "/etc/systemd/system/nodeforge-rotate.service.d/nodeforge-key.conf");
		assert_int_equal(u != NULL, moved);
		if (u)
			assert_non_null(strstr(u, "[Unit]\nConditionPathExists=\n"
				"ConditionPathExists=/etc/munge-site/cluster.key\n"));
		free(u);
		rm_rf(root);
	}
	nf_ctx_free(ctx);
}

/* The accounting database is set up where slurmdbd stores into this
 * node's MariaDB, the cluster registered where slurmctld runs too */
static void test_apply_accounting(void **state)
{
	struct nf_ctx *ctx;
	char root[64], *u;

	(void)state;
	assert_int_equal(nf_ctx_new(&ctx), 0);
	/* slurmdbd alone: the database, no registration */
	assert_int_equal(apply_json(ctx, "{\"role\":\"r\",\"boot_args\":[],"
		"\"mariadb\":{},\"slurm\":{\"daemons\":[\"slurmdbd\"],\"dbd\":"
		"{\"StorageType\":\"accounting_storage/mysql\"}}}",
		root, sizeof(root)), 0);
	assert_true(exists(root, "/usr/lib/nodeforge/slurm-dbinit"));
	assert_true(exists(root, "/etc/systemd/system/nodeforge-dbinit.service"));
	assert_true(exists(root, "/etc/systemd/system/slurmdbd.service.d/nodeforge-dbinit.conf"));
	assert_false(exists(root, "/etc/systemd/system/nodeforge-slurm-register.service"));
	assert_false(exists(root, "/etc/systemd/system/slurmctld.service.d"));
	assert_non_null(u = slurp(root, "/etc/systemd/system/nodeforge-volatile-state.service"));
	assert_non_null(strstr(u, "nodeforge-volatile /var/lib/mysql\n"));
	free(u);
	rm_rf(root);

	/* a database elsewhere is not this node's to set up */
	assert_int_equal(apply_json(ctx, "{\"role\":\"r\",\"boot_args\":[],"
		"\"mariadb\":{},\"slurm\":{\"daemons\":[\"slurmctld\",\"slurmdbd\"],"
		"\"dbd\":{\"StorageType\":\"accounting_storage/mysql\","
		"\"StorageHost\":\"db-01\"}}}", root, sizeof(root)), 0);
	assert_false(exists(root, "/etc/systemd/system/nodeforge-dbinit.service"));
	assert_false(exists(root, "/etc/systemd/system/nodeforge-slurm-register.service"));
	assert_false(exists(root, "/etc/systemd/system/nodeforge-volatile-state.service"));
	rm_rf(root);

	/* names the SQL could not hold plainly stop the build */
	assert_int_equal(apply_json(ctx, "{\"role\":\"r\",\"boot_args\":[],"
		"\"mariadb\":{},\"slurm\":{\"daemons\":[\"slurmdbd\"],\"dbd\":"
		"{\"StorageType\":\"accounting_storage/mysql\","
		"\"StorageUser\":\"slurm'@'%\"}}}", root, sizeof(root)),
		NF_E_INVALID);
	assert_non_null(strstr(nf_errmsg(ctx), "StorageUser 'slurm'@'%'"));
	rm_rf(root);
	nf_ctx_free(ctx);
}

/* enroot's shared directories: the part of each path before what enroot
 * expands per user; a path in a home directory has none */
static void test_apply_enroot_dirs(void **state)
{
	static const struct {
		const char *in, *dir;
		int r;
	} t[] = {
		{ "/run/enroot/user-$(id -u)", "/run/enroot", 1 },
		{ "/mnt/nvme/enroot/cache/user-$(id -u)", "/mnt/nvme/enroot/cache", 1 },
		{ "/raid/enroot/group-$(id -g)/x", "/raid/enroot", 1 },
		{ "/run/enroot/tmp/", "/run/enroot/tmp", 2 },
		{ "/srv/`id -u`", "/srv", 1 },
		{ "${HOME}/.cache/enroot", "", 0 },
		{ "~/enroot", "", 0 },
		{ "/$(id -u)", "", 0 },
	};
	struct nf_ctx *ctx;
	char d[NF_ENROOT_DIR_MAX], root[64], *buf;

	(void)state;
	for (size_t i = 0; i < NF_ARRAY_SIZE(t); i++) {
		d[0] = '\0';
		assert_int_equal(nf_enroot_shared_dir(t[i].in, d, sizeof(d)), t[i].r);
		if (t[i].r)
			assert_string_equal(d, t[i].dir);
	}
	assert_int_equal(nf_enroot_shared_dir("/a/b/c/d$(id -u)", d, 4), -ENAMETOOLONG);
	/* shared parents sorted, once each, /tmp left to the OS; a home
	 * path adds none */
	assert_int_equal(nf_ctx_new(&ctx), 0);
	assert_int_equal(apply_json(ctx, "{\"role\":\"r\",\"boot_args\":[],"
		"\"containers\":{\"enroot\":{"
		"\"cache_path\":\"/var/cache/enroot/u-$(id -u)\","
		"\"data_path\":\"${HOME}/.local/share/enroot\","
		"\"temp_path\":\"/tmp\","
		"\"runtime_path\":\"/run/enroot/user-$(id -u)/rt\"}}}",
		root, sizeof(root)), 0);
	buf = slurp(root, "/etc/tmpfiles.d/nodeforge-enroot.conf");
	assert_non_null(buf);
	assert_non_null(strstr(buf, "\nd /run/enroot 1777 root root -\n"
				     "d /var/cache/enroot 1777 root root -\n"));
	assert_null(strstr(buf, "/tmp"));
	assert_null(strstr(buf, "HOME"));
	free(buf);
	rm_rf(root);
	/* a space would split the tmpfiles.d line */
	assert_int_equal(apply_json(ctx, "{\"role\":\"r\",\"boot_args\":[],"
		"\"containers\":{\"enroot\":{"
		"\"cache_path\":\"/var/cache/my enroot/u-$(id -u)\"}}}",
		root, sizeof(root)), NF_E_INVALID);
	assert_non_null(strstr(nf_errmsg(ctx), "containers.enroot.cache_path"));
	rm_rf(root);
	nf_ctx_free(ctx);
}

/* ------------------------------------------------ the passing sysroot */

#define PASS_DIR "tests/fixtures/sysroot/pass"
#define GRES_BEGIN "# BEGIN nodeforge gres render"
#define GRES_END "# END nodeforge gres render\n"
#define APPLY_MARK "# Written by nodeforge build"

static char pass_applied[64], pass_dir[PATH_MAX];
static int pass_bad, pass_files;

static char *read_all(const char *dir, const char *rel, size_t *len)
{
	char path[2 * PATH_MAX], *buf = NULL;

	snprintf(path, sizeof(path), "%s%s", dir, rel);
	if (nf_read_file(NULL, path, 1 << 20, &buf, len))
		return NULL;
	return buf;
}

/* profile.json: apply's, with the site's pin of the munge key that the
 * sysroot's /etc/munge/munge.key matches */
static int pass_profile_equal(const char *a, const char *b)
{
	json_t *ja = json_loads(a, 0, NULL), *jb = json_loads(b, 0, NULL);
	json_t *fp = json_object_get(json_object_get(jb, "site"), "fingerprints");
	int eq = fp && json_is_string(json_object_get(fp, "munge_key")) &&
		 json_object_del(fp, "munge_key") == 0 && json_equal(ja, jb);

	json_decref(ja);
	json_decref(jb);
	return eq;
}

/* gres.conf: apply's, with the GPU lines 'nodeforge gres render' put in
 * at first boot between its markers */
static int pass_gres_equal(const char *a, const char *b)
{
	const char *beg = strstr(b, "\n" GRES_BEGIN), *end;

	if (!beg || !(end = strstr(beg, "\n" GRES_END)))
		return 0;
	beg++;
	end += strlen(GRES_END) + 1;
	return strlen(a) == strlen(b) - (size_t)(end - beg) &&
	       !strncmp(a, b, (size_t)(beg - b)) && !strcmp(a + (beg - b), end);
}

/* Each entry apply wrote is in the sysroot, the same */
static int pass_cmp_cb(const char *p, const struct stat *st, int flag,
		       struct FTW *f)
{
	const char *rel = p + strlen(pass_applied);
	char la[PATH_MAX] = "", lb[PATH_MAX] = "", pb[2 * PATH_MAX];
	char *a = NULL, *b = NULL;
	size_t na = 0, nb = 0;
	int ok;

	(void)f;
	if (flag == FTW_D || S_ISDIR(st->st_mode))
		return 0;
	pass_files++;
	snprintf(pb, sizeof(pb), "%s%s", pass_dir, rel);
	if (S_ISLNK(st->st_mode)) {
		ok = readlink(p, la, sizeof(la) - 1) > 0 &&
		     readlink(pb, lb, sizeof(lb) - 1) > 0 && !strcmp(la, lb);
	} else {
		a = read_all(pass_applied, rel, &na);
		b = read_all(pass_dir, rel, &nb);
		if (!a || !b)
			ok = 0;
		else if (!strcmp(rel, "/etc/nodeforge/profile.json"))
			ok = pass_profile_equal(a, b);
		else if (!strcmp(rel, "/etc/slurm/gres.conf"))
			ok = pass_gres_equal(a, b);
		else
			ok = na == nb && !memcmp(a, b, na);
	}
	if (!ok) {
		print_error("%s%s is not what apply writes for the compute role "
			    "(make-pass.py regenerates it)\n", PASS_DIR, rel);
		pass_bad++;
	}
	free(a);
	free(b);
	return 0;
}

/* ... and a file of the sysroot that says apply wrote it is apply's */
static int pass_mark_cb(const char *p, const struct stat *st, int flag,
			struct FTW *f)
{
	const char *rel = p + strlen(pass_dir);
	char ap[2 * PATH_MAX], head[sizeof(APPLY_MARK)] = "";
	struct stat sa;
	FILE *fp;

	(void)f;
	(void)flag;
	if (!S_ISREG(st->st_mode) || !(fp = fopen(p, "r")))
		return 0;
	if (fread(head, 1, sizeof(head) - 1, fp) != sizeof(head) - 1)
		head[0] = '\0';
	fclose(fp);
	snprintf(ap, sizeof(ap), "%s%s", pass_applied, rel);
	if (!strcmp(head, APPLY_MARK) && lstat(ap, &sa)) {
		print_error("%s%s says apply wrote it, but apply writes no such file "
			    "for the compute role\n", PASS_DIR, rel);
		pass_bad++;
	}
	return 0;
}

static void test_apply_pass_sysroot(void **s)
{
	(void)s;
	/* make-pass.py regenerates pass from the updated trees */
	if (getenv("NF_UPDATE_FIXTURES"))
		skip();
	snprintf(pass_dir, sizeof(pass_dir), "%s/" PASS_DIR, srcdir());
	apply_role("compute", pass_applied, sizeof(pass_applied));
	pass_bad = pass_files = 0;
	assert_int_equal(nftw(pass_applied, pass_cmp_cb, 16, FTW_PHYS), 0);
	assert_int_equal(nftw(pass_dir, pass_mark_cb, 16, FTW_PHYS), 0);
	assert_int_equal(pass_bad, 0);
	assert_true(pass_files > 5);
	rm_rf(pass_applied);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_apply_compute),
		cmocka_unit_test(test_apply_controller),
		cmocka_unit_test(test_apply_login),
		cmocka_unit_test(test_apply_pass_sysroot),
		cmocka_unit_test(test_apply_unsafe),
		cmocka_unit_test(test_apply_pam_edit),
		cmocka_unit_test(test_apply_slurm_dirs),
		cmocka_unit_test(test_apply_slurm_dirs_refused),
		cmocka_unit_test(test_apply_gate_daemons),
		cmocka_unit_test(test_apply_time_sync_wait),
		cmocka_unit_test(test_apply_sysctl),
		cmocka_unit_test(test_apply_munge_key_moved),
		cmocka_unit_test(test_apply_accounting),
		cmocka_unit_test(test_apply_enroot_dirs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
