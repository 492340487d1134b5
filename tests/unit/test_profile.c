/* SPDX-License-Identifier: MIT */
/* Profile inheritance and merge rules, schema types, site application. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "nodeforge.h"

static char dir[] = "/tmp/nf-test-profile.XXXXXX";

static void put(const char *name, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static struct nf_ctx *ctx_for_dir(void)
{
	struct nf_ctx *ctx;

	assert_int_equal(nf_ctx_new(&ctx), 0);
	assert_int_equal(nf_ctx_set_profiles_dir(ctx, dir), 0);
	return ctx;
}

/* Resolve `role`, return its JSON as a compact string (caller frees) */
static char *resolve_section(const char *role, const char *section, int *rc)
{
	struct nf_ctx *ctx = ctx_for_dir();
	struct nf_profile *p = NULL;
	struct nf_diags d;
	char *s = NULL;

	nf_diags_init(&d);
	*rc = nf_profile_resolve(ctx, role, NULL, &p, &d);
	if (*rc == 0)
		s = json_dumps(json_object_get(nf_profile_json(p), section),
			       JSON_COMPACT | JSON_ENCODE_ANY);
	nf_profile_free(p);
	nf_diags_free(&d);
	nf_ctx_free(ctx);
	return s;
}

static void test_child_scalar_wins(void **state)
{
	int rc;
	char *s;

	(void)state;
	put("p1.yaml", "abstract: true\nmemory:\n  thp: madvise\n  numa_balancing: true\n");
	put("c1.yaml", "inherits: [p1]\nmemory:\n  thp: never\n");
	s = resolve_section("c1", "memory", &rc);
	assert_int_equal(rc, 0);
	assert_string_equal(s, "{\"thp\":\"never\",\"numa_balancing\":true}");
	free(s);
}

static void test_lists_merge_in_order_without_duplicates(void **state)
{
	int rc;
	char *s;

	(void)state;
	put("p2.yaml", "abstract: true\nkernel:\n  args: [a=1, b, c]\n");
	put("q2.yaml", "abstract: true\nkernel:\n  args: [d, b]\n");
	put("c2.yaml", "inherits: [p2, q2]\nkernel:\n  args: [e, a=1]\n");
	s = resolve_section("c2", "kernel", &rc);
	assert_int_equal(rc, 0);
	assert_string_equal(s, "{\"args\":[\"a=1\",\"b\",\"c\",\"d\",\"e\"]}");
	free(s);
}

static void test_removal_markers(void **state)
{
	int rc;
	char *s;

	(void)state;
	put("p3.yaml", "abstract: true\nkernel:\n  args: [hugepages=64, quiet, iommu=pt]\n");
	put("c3.yaml", "inherits: [p3]\nkernel:\n  args: [\"!hugepages\", \"!quiet\", hugepages=160]\n");
	s = resolve_section("c3", "kernel", &rc);
	assert_int_equal(rc, 0);
	assert_string_equal(s, "{\"args\":[\"iommu=pt\",\"hugepages=160\"]}");
	free(s);
	/* a marker that removes nothing is an error */
	put("c3b.yaml", "inherits: [p3]\nkernel:\n  args: [\"!splash\"]\n");
	s = resolve_section("c3b", "kernel", &rc);
	assert_null(s);
	assert_int_not_equal(rc, 0);
}

static void test_object_lists_replace_by_name(void **state)
{
	int rc;
	char *s;

	(void)state;
	put("p4.yaml", "abstract: true\nslurm:\n  gres:\n"
	    "    - { name: gpu, type: h100, count: 8 }\n"
	    "    - { name: nvme, type: local, count: 1 }\n");
	put("c4.yaml", "inherits: [p4]\nslurm:\n  gres:\n"
	    "    - { name: gpu, type: h200, count: 8 }\n");
	s = resolve_section("c4", "slurm", &rc);
	assert_int_equal(rc, 0);
	assert_string_equal(s, "{\"gres\":[{\"name\":\"gpu\",\"type\":\"h200\",\"count\":8},"
			       "{\"name\":\"nvme\",\"type\":\"local\",\"count\":1}]}");
	free(s);
	put("c4b.yaml", "inherits: [p4]\nslurm:\n  gres: [\"!nvme\"]\n");
	s = resolve_section("c4b", "slurm", &rc);
	assert_int_equal(rc, 0);
	assert_string_equal(s, "{\"gres\":[{\"name\":\"gpu\",\"type\":\"h100\",\"count\":8}]}");
	free(s);
}

static void test_conflicting_kernel_args(void **state)
{
	int rc;
	char *s;

	(void)state;
	put("p5.yaml", "abstract: true\nkernel:\n  args: [hugepages=64]\n");
	put("c5.yaml", "inherits: [p5]\nmemory:\n  hugepages: { size: 1G, count: 160 }\n");
	s = resolve_section("c5", "boot_args", &rc);
	assert_null(s);
	assert_int_equal(rc, NF_E_CONFLICT);
	/* the same value twice is not a conflict */
	put("c5b.yaml", "inherits: [p5]\nkernel:\n  args: [hugepages=64]\n");
	s = resolve_section("c5b", "boot_args", &rc);
	assert_int_equal(rc, 0);
	assert_string_equal(s, "[\"hugepages=64\"]");
	free(s);
}

static void test_isolate_cpus_expands(void **state)
{
	int rc;
	char *s;

	(void)state;
	put("c6.yaml", "kernel:\n  isolate_cpus: \"1-7,9-15\"\n");
	s = resolve_section("c6", "boot_args", &rc);
	assert_int_equal(rc, 0);
	assert_string_equal(s, "[\"isolcpus=nohz,domain,1-7,9-15\",\"nohz_full=1-7,9-15\","
			       "\"rcu_nocbs=1-7,9-15\"]");
	free(s);
}

static void test_cycle_and_missing(void **state)
{
	int rc;
	char *s;

	(void)state;
	put("x7.yaml", "inherits: [y7]\n");
	put("y7.yaml", "inherits: [x7]\n");
	s = resolve_section("x7", "kernel", &rc);
	assert_null(s);
	assert_int_equal(rc, NF_E_CYCLE);
	put("z7.yaml", "inherits: [nope]\n");
	s = resolve_section("z7", "kernel", &rc);
	assert_null(s);
	assert_int_equal(rc, NF_E_NOTFOUND);
	s = resolve_section("p1", "kernel", &rc);
	assert_null(s);
	assert_int_equal(rc, NF_E_INVALID); /* abstract */
}

static void test_positions_follow_the_merge(void **state)
{
	struct nf_ctx *ctx = ctx_for_dir();
	struct nf_profile *p = NULL;
	const char *file;
	unsigned line, col;

	(void)state;
	put("p8.yaml", "abstract: true\nkernel:\n  args:\n    - a\n    - b\n");
	put("c8.yaml", "inherits: [p8]\nkernel:\n  args:\n    - \"!a\"\n    - c\n");
	assert_int_equal(nf_profile_resolve(ctx, "c8", NULL, &p, NULL), 0);
	/* args are now [b, c]: b from p8 line 5, c from c8 line 5 */
	assert_int_equal(nf_profile_where(p, "kernel.args[0]", &file, &line, &col), 0);
	assert_non_null(strstr(file, "p8.yaml"));
	assert_int_equal(line, 5);
	assert_int_equal(nf_profile_where(p, "kernel.args[1]", &file, &line, &col), 0);
	assert_non_null(strstr(file, "c8.yaml"));
	assert_int_equal(line, 5);
	assert_int_equal(col, 7);
	nf_profile_free(p);
	nf_ctx_free(ctx);
}

static void test_shipped_compute_profile(void **state)
{
	const char *src = getenv("NF_SRCDIR");
	char pdir[1024], site[1100];
	struct nf_ctx *ctx;
	struct nf_site *s = NULL;
	struct nf_profile *p = NULL;
	char *args = NULL;

	(void)state;
	snprintf(pdir, sizeof(pdir), "%s/profiles", src ? src : ".");
	snprintf(site, sizeof(site), "%s/site.yaml", pdir);
	assert_int_equal(nf_ctx_new(&ctx), 0);
	nf_ctx_set_profiles_dir(ctx, pdir);
	assert_int_equal(nf_site_load(ctx, site, &s, NULL), 0);
	assert_int_equal(nf_profile_resolve(ctx, "compute", s, &p, NULL), 0);
	assert_int_equal(nf_profile_kernel_args(ctx, p, &args), 0);
	assert_non_null(strstr(args, "cgroup_memory=1"));
	assert_non_null(strstr(args, "systemd.unified_cgroup_hierarchy=1"));
	assert_non_null(strstr(args, "hugepages=160"));
	/* the site never hands a secret's source to a profile */
	assert_null(json_object_get(json_object_get(nf_profile_json(p), "site"), "secrets"));
	free(args);
	nf_profile_free(p);
	nf_site_free(s);
	nf_ctx_free(ctx);
}

/* 40,000 list entries: merge in linear time, as this process's CPU time
 * (a loaded machine does not stretch it; it compared every pair with
 * an snprintf'd key: 20,000 entries took minutes), with removals by name
 * and by key=, duplicates dropped and positions carried */
static void test_large_list_merge_is_linear(void **state)
{
	enum { N = 20000 };
	struct nf_ctx *ctx = ctx_for_dir();
	struct nf_profile *p = NULL;
	struct timespec t0, t1;
	const json_t *inst;
	const char *file;
	unsigned line, col;
	char path[512];
	FILE *f;
	double secs;

	(void)state;
	snprintf(path, sizeof(path), "%s/big9.yaml", dir);
	assert_non_null(f = fopen(path, "w"));
	fputs("abstract: true\nsystem:\n  packages:\n    install:\n", f);
	for (int i = 0; i < N; i++)
		fprintf(f, "      - %s-%d%s\n", i % 2 ? "kv" : "pkg", i, i % 2 ? "=1" : "");
	fclose(f);
	snprintf(path, sizeof(path), "%s/c9.yaml", dir);
	assert_non_null(f = fopen(path, "w"));
	fputs("inherits: [big9]\nsystem:\n  packages:\n    install:\n", f);
	/* remove pkg-0 and kv-1=1 (by its key), repeat pkg-2, then new ones */
	fputs("      - \"!pkg-0\"\n      - \"!kv-1\"\n      - pkg-2\n", f);
	for (int i = 3; i < N; i++)
		fprintf(f, "      - new-%d\n", i);
	fclose(f);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
	assert_int_equal(nf_profile_resolve(ctx, "c9", NULL, &p, NULL), 0);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
	secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	inst = json_object_get(json_object_get(json_object_get(nf_profile_json(p),
				"system"), "packages"), "install");
	assert_int_equal(json_array_size(inst), (N - 2) + (N - 3));
	assert_string_equal(json_string_value(json_array_get(inst, 0)), "pkg-2");
	assert_string_equal(json_string_value(json_array_get(inst, N - 2)), "new-3");
	/* pkg-2 was replaced in place by the child's: the child's position */
	assert_int_equal(nf_profile_where(p, "system.packages.install[0]", &file, &line, &col), 0);
	assert_non_null(strstr(file, "c9.yaml"));
	assert_int_equal(line, 7);
	/* kv-3=1 kept the parent's position (line 5 + its index 3) */
	assert_int_equal(nf_profile_where(p, "system.packages.install[1]", &file, &line, &col), 0);
	assert_non_null(strstr(file, "big9.yaml"));
	assert_int_equal(line, 8);
	assert_int_equal(nf_profile_where(p, "system.packages.install[39994]", &file, &line, &col), 0);
	assert_non_null(strstr(file, "c9.yaml"));
	assert_int_equal(line, 7 + N - 3);
	nf_profile_free(p);
	nf_ctx_free(ctx);
	if (secs > 3.0)
		fail_msg("resolving %d list entries took %.2f s (linear: well under 1 s)",
			 2 * N, secs);
}

/* 40,000 kernel arguments: duplicates and conflicts found in linear time
 * (every argument was compared with every one kept before it), as this
 * process's CPU time */
static void test_many_kernel_args_are_linear(void **state)
{
	enum { N = 40000 };
	struct nf_ctx *ctx = ctx_for_dir();
	struct nf_profile *p = NULL;
	struct nf_diags d;
	struct timespec t0, t1;
	char path[512];
	FILE *f;
	double secs;
	int rc;

	(void)state;
	snprintf(path, sizeof(path), "%s/k10.yaml", dir);
	assert_non_null(f = fopen(path, "w"));
	fputs("kernel:\n  args:\n", f);
	for (int i = 0; i < N; i++)
		fprintf(f, "    - k%d=1\n", i);
	/* line N + 3: the same again is dropped; line N + 4 conflicts */
	fputs("    - k7=1\n    - k7=2\n", f);
	fclose(f);
	nf_diags_init(&d);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
	rc = nf_profile_resolve(ctx, "k10", NULL, &p, &d);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
	secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	assert_int_equal(rc, NF_E_CONFLICT);
	assert_int_equal(d.n, 1);
	assert_int_equal(d.v[0].line, N + 4);
	/* the earlier one named is the last k7=1 before it */
	snprintf(path, sizeof(path), "'k7=2' conflicts with 'k7=1' (%s/k10.yaml:%d:7)",
		 dir, N + 3);
	assert_non_null(strstr(d.v[0].message, path));
	nf_diags_free(&d);
	nf_ctx_free(ctx);
	if (secs > 3.0)
		fail_msg("%d kernel arguments took %.2f s (linear: well under 1 s)",
			 N, secs);
}

static int teardown(void **state)
{
	char cmd[256];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_child_scalar_wins),
		cmocka_unit_test(test_lists_merge_in_order_without_duplicates),
		cmocka_unit_test(test_removal_markers),
		cmocka_unit_test(test_object_lists_replace_by_name),
		cmocka_unit_test(test_conflicting_kernel_args),
		cmocka_unit_test(test_isolate_cpus_expands),
		cmocka_unit_test(test_cycle_and_missing),
		cmocka_unit_test(test_positions_follow_the_merge),
		cmocka_unit_test(test_shipped_compute_profile),
		cmocka_unit_test(test_large_list_merge_is_linear),
		cmocka_unit_test(test_many_kernel_args_are_linear),
	};
	if (!mkdtemp(dir))
		return 1;
	return cmocka_run_group_tests(tests, NULL, teardown);
}
