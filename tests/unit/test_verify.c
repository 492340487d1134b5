/* SPDX-License-Identifier: MIT */
/* The verifier's engine: config parsing helpers, dependency ordering,
 * root causes first, the run budget. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "internal.h"

static char srcdir[1024];

static void test_conf_get(void **state)
{
	const char *text = "# comment\nSelectType=select/linear\n  selecttype = select/cons_tres  \n"
			   "SelectTypeParameters=CR_Core\nUsePAM yes\n";
	char *v;

	(void)state;
	v = nf_v_conf_get(text, "SelectType", "= \t");
	assert_string_equal(v, "select/cons_tres"); /* last wins, any case */
	free(v);
	v = nf_v_conf_get(text, "SelectTypeParameters", "=");
	assert_string_equal(v, "CR_Core");
	free(v);
	v = nf_v_conf_get(text, "UsePAM", " \t");
	assert_string_equal(v, "yes");
	free(v);
	assert_null(nf_v_conf_get(text, "Select", "="));
	assert_null(nf_v_conf_get("", "x", "="));
}

static void test_json_str(void **state)
{
	char b[32];
	json_t *v;

	(void)state;
	v = json_true();
	assert_int_equal(nf_v_json_str(v, b, sizeof(b)), 0);
	assert_string_equal(b, "yes");
	json_decref(v);
	v = json_integer(1048576);
	nf_v_json_str(v, b, sizeof(b));
	assert_string_equal(b, "1048576");
	json_decref(v);
	v = json_array();
	assert_int_equal(nf_v_json_str(v, b, sizeof(b)), -EINVAL);
	json_decref(v);
}

/* The passing fixture's profile with `edit` applied, loaded back */
static struct nf_profile *fixture_profile(struct nf_ctx *ctx, const char *hca)
{
	char in[1200], out[] = "/tmp/nf-test-verify-XXXXXX";
	struct nf_profile *p = NULL;
	json_t *j;
	int fd;

	snprintf(in, sizeof(in), "%s/tests/fixtures/sysroot/pass/etc/nodeforge/profile.json",
		 srcdir);
	j = json_load_file(in, 0, NULL);
	assert_non_null(j);
	if (hca)
		json_array_append_new(json_object_get(json_object_get(j, "ib"), "hcas"),
				      json_string(hca));
	fd = mkstemp(out);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(json_dump_file(j, out, 0), 0);
	json_decref(j);
	assert_int_equal(nf_profile_load_json(ctx, out, &p), 0);
	unlink(out);
	return p;
}

static void test_root_cause_first(void **state)
{
	char sys[1100], fx[1200];
	struct nf_verify_opts o = { 0 };
	struct nf_verify *v = NULL;
	struct nf_ctx *ctx;
	struct nf_profile *p;
	const struct nf_check_result *r;

	(void)state;
	snprintf(sys, sizeof(sys), "%s/tests/fixtures/sysroot/pass", srcdir);
	snprintf(fx, sizeof(fx), "%s/fixture.json", sys);
	assert_int_equal(nf_ctx_new(&ctx), 0);
	p = fixture_profile(ctx, "mlx5_9");
	o.sysroot = sys;
	o.fixture = fx;
	o.only = "ib";
	assert_int_equal(nf_verify_run(ctx, p, &o, &v), 0);
	assert_false(nf_verify_passed(v));
	r = nf_verify_result(v, 0);
	assert_string_equal(r->id, "ib.hca.present");
	assert_int_equal(r->verdict, NF_V_FAIL);
	assert_string_equal(r->seen, "missing: mlx5_9");
	r = nf_verify_result(v, 1);
	assert_int_equal(r->verdict, NF_V_SKIP);
	assert_string_equal(r->cause, "ib.hca.present");
	assert_string_equal(r->reason, "because ib.hca.present failed");
	assert_int_equal(nf_verify_tally(v, NF_V_FAIL), 1);
	nf_verify_free(v);

	/* the same hardware with the profile's HCAs passes */
	nf_profile_free(p);
	p = fixture_profile(ctx, NULL);
	assert_int_equal(nf_verify_run(ctx, p, &o, &v), 0);
	assert_true(nf_verify_passed(v));
	assert_int_equal(nf_verify_tally(v, NF_V_PASS), 4);
	nf_verify_free(v);
	nf_profile_free(p);
	nf_ctx_free(ctx);
}

static void test_bad_fixture(void **state)
{
	struct nf_verify_opts o = { .fixture = "/nonexistent/fixture.json" };
	struct nf_verify *v = NULL;
	struct nf_ctx *ctx;
	struct nf_profile *p;

	(void)state;
	assert_int_equal(nf_ctx_new(&ctx), 0);
	p = fixture_profile(ctx, NULL);
	assert_int_equal(nf_verify_run(ctx, p, &o, &v), -ENOENT);
	assert_non_null(strstr(nf_errmsg(ctx), "/nonexistent/fixture.json"));
	nf_profile_free(p);
	nf_ctx_free(ctx);
}

/* A context without the facet table (the library's own scratch kind)
 * resolves no profile and verifies nothing: it fails, naming why, never
 * runs with no facets */
static void test_no_facet_table(void **state)
{
	struct nf_verify_opts o = { 0 };
	struct nf_verify *v = NULL;
	struct nf_profile *p = NULL;
	struct nf_ctx *ctx, *bare;
	struct nf_diags d;
	char dir[1024];

	(void)state;
	assert_int_equal(nf_ctx_new(&ctx), 0);
	p = fixture_profile(ctx, NULL);
	assert_int_equal(nf_ctx_alloc(&bare), 0);
	assert_int_equal(nf_verify_run(bare, p, &o, &v), NF_E_USAGE);
	assert_null(v);
	assert_non_null(strstr(nf_errmsg(bare), "no facet table"));
	nf_clear_error(bare);
	snprintf(dir, sizeof(dir), "%s/profiles", srcdir);
	assert_int_equal(nf_ctx_set_profiles_dir(bare, dir), 0);
	nf_diags_init(&d);
	nf_profile_free(p);
	p = NULL;
	assert_int_equal(nf_profile_resolve(bare, "compute", NULL, &p, &d), NF_E_USAGE);
	assert_null(p);
	assert_non_null(strstr(nf_errmsg(bare), "no facet table"));
	nf_diags_free(&d);
	nf_ctx_free(bare);
	nf_ctx_free(ctx);
}

/* What a check needs that a CI VM may lack is in its definition, from a
 * known set, and every hardware check declares it */
static void test_check_needs(void **state)
{
	static const char *const known[] = { "gpu", "nvswitch", "ib", "nvme", "disk",
					     "hugepage-memory", "cpus", "ntp",
					     "cluster-key", "controller" };
	extern const struct nf_facet *const nf_facets[];
	extern const size_t nf_nfacets;
	size_t checks = 0;

	(void)state;
	for (size_t i = 0; i < nf_nfacets; i++) {
		const struct nf_checkset *cs = nf_facets[i]->checks;

		for (size_t j = 0; cs && j < cs->n; j++) {
			const struct nf_check_def *d = &cs->v[j];
			int ok = !d->needs;

			for (size_t k = 0; d->needs && k < NF_ARRAY_SIZE(known); k++)
				ok |= !strcmp(d->needs, known[k]);
			assert_true(ok);
			if (!strncmp(d->id, "gpu.", 4) || !strncmp(d->id, "ib.", 3) ||
			    !strncmp(d->id, "fabric_manager.", 15))
				assert_non_null(d->needs);
			checks++;
		}
	}
	assert_true(checks >= 50);
	assert_string_equal(nf_check_find("gpu.count")->needs, "gpu");
	assert_string_equal(nf_check_find("time.sync")->needs, "ntp");
	/* a CI VM's one CPU cannot hold a GPU node's isolation mask */
	assert_non_null(nf_check_find("kernel.isolcpus"));
	assert_string_equal(nf_check_find("kernel.isolcpus")->needs, "cpus");
	assert_null(nf_check_find("munge.key.mode")->needs);
	assert_null(nf_check_find("no.such.check"));
}

/* What checks say is escaped once for every reader; a truncated buffer
 * never ends inside an \xNN */
static void test_text_defang(void **state)
{
	char buf[64], small[8];
	char *e;

	(void)state;
	snprintf(buf, sizeof(buf), "ok \\ plain \xc3\xa9");
	nf_text_defang(buf, sizeof(buf));
	assert_string_equal(buf, "ok \\ plain \xc3\xa9"); /* unchanged */
	snprintf(buf, sizeof(buf), "a\x1b[2J\nb\xc2\x9b" "c\xe2\x80\xae" "d\x7f");
	nf_text_defang(buf, sizeof(buf));
	assert_string_equal(buf, "a\\x1b[2J\\x0ab\\xc2\\x9bc\\xe2\\x80\\xaed\\x7f");
	snprintf(small, sizeof(small), "ab\033cd");
	nf_text_defang(small, sizeof(small));
	assert_string_equal(small, "ab\\x1bc"); /* 7 bytes fit */
	snprintf(small, sizeof(small), "abcd\033e");
	nf_text_defang(small, sizeof(small));
	assert_string_equal(small, "abcd"); /* not half of \x1b */
	e = nf_text_escape("a\\b\rc");
	assert_string_equal(e, "a\\\\b\\x0dc");
	free(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_conf_get),
		cmocka_unit_test(test_json_str),
		cmocka_unit_test(test_root_cause_first),
		cmocka_unit_test(test_bad_fixture),
		cmocka_unit_test(test_no_facet_table),
		cmocka_unit_test(test_check_needs),
		cmocka_unit_test(test_text_defang),
	};
	const char *s = getenv("NF_SRCDIR");

	snprintf(srcdir, sizeof(srcdir), "%s", s ? s : ".");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
