/* SPDX-License-Identifier: MIT */
/* Image CI: the dpkg status parser, the secret scan and the daemon checks
 * the facets name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <stdio.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ci_int.h"
#include "internal/ci.h"

static void test_dpkg_status(void **state)
{
	const char *text =
		"Package: htop\nStatus: install ok installed\nPriority: optional\n"
		"Version: 3.2.2-2\nDescription: x\n multi line\n\n"
		"Package: gone\nStatus: deinstall ok config-files\nVersion: 1.0\n\n"
		"Package: last\nVersion: 2:1.0\nStatus: install ok installed";
	json_t *o = nf_ci_dpkg_packages(text);

	(void)state;
	assert_non_null(o);
	assert_int_equal(json_object_size(o), 2);
	assert_string_equal(json_string_value(json_object_get(o, "htop")), "3.2.2-2");
	assert_string_equal(json_string_value(json_object_get(o, "last")), "2:1.0");
	assert_null(json_object_get(o, "gone"));
	json_decref(o);
	o = nf_ci_dpkg_packages("");
	assert_int_equal(json_object_size(o), 0);
	json_decref(o);
}

static void test_storagepass(void **state)
{
	static const char *const yes[] = { "StoragePass=x", "a=b\n  StoragePass = s3cret\n",
					   "storagepass=1" };
	static const char *const no[] = { "# StoragePass=x", "StoragePass=", "StoragePass=  \n",
					  "StorageHost=db", "StoragePassword", "" };

	(void)state;
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		assert_true(nf_ci_has_storagepass(yes[i], strlen(yes[i])));
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		assert_false(nf_ci_has_storagepass(no[i], strlen(no[i])));
}

/* ROOT/etc/d1/.../dDEPTH, the deepest path into path */
static void deep_tree(char *root, int depth, char *path, size_t sz)
{
	assert_non_null(mkdtemp(root));
	snprintf(path, sz, "%s/etc", root);
	assert_int_equal(mkdir(path, 0755), 0);
	for (int i = 1; i <= depth; i++) {
		size_t l = strlen(path);

		snprintf(path + l, sz - l, "/d%d", i);
		assert_int_equal(mkdir(path, 0755), 0);
	}
}

static const struct nf_ci_case *find_case(const struct nf_ci *ci, const char *name)
{
	for (size_t i = 0; i < ci->n; i++)
		if (!strcmp(ci->v[i].name, name))
			return &ci->v[i];
	return NULL;
}

static void rm_tree(const char *root)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	assert_int_equal(system(cmd), 0);
}

static void done(struct nf_ci *ci, struct nf_ctx *ctx, const char *root)
{
	nf_ci_free(ci);
	nf_ctx_free(ctx);
	rm_tree(root);
}

/* the scan reads a tree as deep as an image can hold */
static void test_secret_scan_depth(void **state)
{
	char root[] = "/tmp/nf-ci-XXXXXX", path[4096];
	struct nf_ci *ci = calloc(1, sizeof(*ci));
	struct nf_ctx *ctx;
	const struct nf_ci_case *c;
	FILE *f;

	(void)state;
	deep_tree(root, 40, path, sizeof(path));
	strcat(path, "/munge.key");
	assert_non_null(f = fopen(path, "w"));
	fputs("key\n", f);
	fclose(f);
	assert_non_null(ci);
	assert_int_equal(nf_ctx_new(&ctx), 0);
	assert_int_equal(nf_ci_secret_scan(ctx, ci, root), 0);
	assert_non_null(c = find_case(ci, "ci.secrets.munge_key"));
	assert_int_equal(c->verdict, NF_V_FAIL);
	assert_non_null(strstr(c->message, "d40/munge.key"));
	done(ci, ctx, root);
}

/* The secret scan of ROOT with only 20 file descriptors free, so that
 * directories deep enough cannot be opened (root reads any mode) */
static int scan_short_of_fds(struct nf_ctx *ctx, struct nf_ci *ci,
			     const char *root)
{
	struct rlimit old, low;
	int fd, r;

	/* the lowest free descriptor tells how many are open */
	assert_true((fd = dup(0)) >= 0);
	close(fd);
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	low = old;
	low.rlim_cur = (rlim_t)fd + 20;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	r = nf_ci_secret_scan(ctx, ci, root);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	return r;
}

/* Every secret case failed, its message naming WHAT as not scanned */
static void secret_cases_unscanned(const struct nf_ci *ci, const char *what)
{
	static const char *const ids[] = { "ci.secrets.munge_key",
					   "ci.secrets.storage_pass",
					   "ci.secrets.private_key" };
	const struct nf_ci_case *c;

	for (size_t i = 0; i < 3; i++) {
		assert_non_null(c = find_case(ci, ids[i]));
		assert_int_equal(c->verdict, NF_V_FAIL);
		assert_non_null(strstr(c->message, "not scanned"));
		assert_non_null(strstr(c->message, what));
	}
}

/* a directory the scan cannot open (here: out of file descriptors, which
 * root cannot override as it can a mode) fails the secret cases, named */
static void test_secret_scan_fails_closed(void **state)
{
	char root[] = "/tmp/nf-ci-XXXXXX", path[4096];
	struct nf_ci *ci = calloc(1, sizeof(*ci));
	struct nf_ctx *ctx;

	(void)state;
	deep_tree(root, 60, path, sizeof(path));
	assert_non_null(ci);
	assert_int_equal(nf_ctx_new(&ctx), 0);
	assert_int_equal(scan_short_of_fds(ctx, ci, root), 0);
	secret_cases_unscanned(ci, "etc/d1/d2/");
	done(ci, ctx, root);
}

/* ROOT/REL with TEXT, its parents made */
static void put(const char *root, const char *rel, const char *text)
{
	char path[4096], cmd[4200];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\"", path);
	assert_int_equal(system(cmd), 0);
	assert_non_null(f = fopen(path, "w"));
	fputs(text, f);
	fclose(f);
}

/* a tree nested deeper than the walker goes fails the secret cases, the
 * directory named: what it holds was not scanned */
static void test_secret_scan_too_deep(void **state)
{
	char root[] = "/tmp/nf-ci-XXXXXX", path[4096];
	struct nf_ci *ci = calloc(1, sizeof(*ci));
	struct nf_ctx *ctx;

	(void)state;
	deep_tree(root, NF_WALK_DEPTH + 1, path, sizeof(path));
	assert_non_null(ci);
	assert_int_equal(nf_ctx_new(&ctx), 0);
	assert_int_equal(nf_ci_secret_scan(ctx, ci, root), 0);
	secret_cases_unscanned(ci, "etc/d1/d2/d3/");
	secret_cases_unscanned(ci, "/d256/d257 (nested deeper than 256 "
			       "directories)");
	done(ci, ctx, root);
}

/* past a directory it cannot open, the scan goes on: a key beside it is
 * found, and the directory is named */
static void test_secret_scan_goes_on(void **state)
{
	char root[] = "/tmp/nf-ci-XXXXXX", path[4096];
	struct nf_ci *ci = calloc(1, sizeof(*ci));
	struct nf_ctx *ctx;
	const struct nf_ci_case *c;

	(void)state;
	deep_tree(root, 60, path, sizeof(path));
	put(root, "etc/zz/munge.key", "key\n");
	assert_non_null(ci);
	assert_int_equal(nf_ctx_new(&ctx), 0);
	assert_int_equal(scan_short_of_fds(ctx, ci, root), 0);
	secret_cases_unscanned(ci, "etc/d1/d2/");
	assert_non_null(c = find_case(ci, "ci.secrets.munge_key"));
	assert_non_null(strstr(c->message, "etc/zz/munge.key"));
	done(ci, ctx, root);
}

/* a munge key at the profile's own key_path is found, wherever that is
 * and whatever the file is called */
static void test_secret_scan_key_path(void **state)
{
	static const char *const paths[] = { "/var/spool/munge/cluster.key",
					     "/etc/slurm/keys/cluster.key" };
	const struct nf_ci_case *c;

	(void)state;
	for (size_t i = 0; i < 2; i++) {
		char root[] = "/tmp/nf-ci-XXXXXX", prof[512];
		struct nf_ci *ci = calloc(1, sizeof(*ci));
		struct nf_ctx *ctx;

		assert_non_null(mkdtemp(root));
		snprintf(prof, sizeof(prof), "{\"role\": \"compute\", \"boot_args\": [], "
			 "\"munge\": {\"key_path\": \"%s\"}}\n", paths[i]);
		put(root, "etc/nodeforge/profile.json", prof);
		put(root, paths[i] + 1, "key\n");
		assert_non_null(ci);
		assert_int_equal(nf_ctx_new(&ctx), 0);
		assert_int_equal(nf_ci_secret_scan(ctx, ci, root), 0);
		assert_non_null(c = find_case(ci, "ci.secrets.munge_key"));
		assert_int_equal(c->verdict, NF_V_FAIL);
		assert_non_null(strstr(c->message, paths[i] + 1));
		done(ci, ctx, root);
	}
}

/* Stand-in for running the image's programs chrooted (that needs the
 * image's own binaries): each call recorded as "ID: ARGV..." */
static int record_run(struct nf_daemon_ci *d, const char *host, const char *id,
		      const char *const *argv, long grace_ms, int rc_counts,
		      const char *want)
{
	char line[1024];
	size_t n;

	(void)host, (void)grace_ms, (void)rc_counts, (void)want;
	n = (size_t)snprintf(line, sizeof(line), "%s:", id);
	for (size_t i = 0; argv[i] && n < sizeof(line); i++)
		n += (size_t)snprintf(line + n, sizeof(line) - n, " %s", argv[i]);
	return json_array_append_new(d->data, json_string(line));
}

/* chronyd parses the chrony.conf the time facet wrote: /etc/chrony.conf
 * on EL, /etc/chrony/chrony.conf on Debian */
static void test_daemons_chrony_el(void **state)
{
	static const struct { const char *distro, *conf; } cases[] = {
		{ "rocky9", "/etc/chrony.conf" },
		{ "debian13", "/etc/chrony/chrony.conf" },
	};

	(void)state;
	for (size_t i = 0; i < 2; i++) {
		char root[] = "/tmp/nf-ci-XXXXXX", prof[512], want[256];
		json_t *runs = json_array();
		struct nf_ctx *ctx;

		assert_non_null(mkdtemp(root));
		snprintf(prof, sizeof(prof), "{\"role\": \"compute\", \"boot_args\": [], "
			 "\"site\": {\"distro\": \"%s\"}, \"time\": {}}\n",
			 cases[i].distro);
		put(root, "etc/nodeforge/profile.json", prof);
		put(root, cases[i].conf + 1, "server ntp.example\n");
		put(root, "usr/sbin/chronyd", "");
		assert_int_equal(nf_ctx_new(&ctx), 0);
		assert_int_equal(nf_ci_daemons_run(ctx, root, NULL, NULL, record_run,
						   runs), 0);
		snprintf(want, sizeof(want), "chrony.conf: chronyd -p -f %s",
			 cases[i].conf);
		assert_int_equal(json_array_size(runs), 1);
		assert_string_equal(json_string_value(json_array_get(runs, 0)), want);
		json_decref(runs);
		nf_ctx_free(ctx);
		rm_tree(root);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dpkg_status),
		cmocka_unit_test(test_storagepass),
		cmocka_unit_test(test_secret_scan_depth),
		cmocka_unit_test(test_secret_scan_fails_closed),
		cmocka_unit_test(test_secret_scan_too_deep),
		cmocka_unit_test(test_secret_scan_goes_on),
		cmocka_unit_test(test_secret_scan_key_path),
		cmocka_unit_test(test_daemons_chrony_el),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
