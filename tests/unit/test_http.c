/* SPDX-License-Identifier: MIT */
/* Boot server parsers: request paths, ranges, verdicts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "internal.h"

static void test_paths(void **state)
{
	static const char *const good[] = {
		"/ipxe/boot.ipxe", "/ipxe/mac/52-54-00-00-01-01.ipxe",
		"/grub/grub.cfg-01-52-54-00-00-01-01", "/images/compute/a+b~c:d.zst",
	};
	static const char *const bad[] = {
		"", "/", "ipxe/boot.ipxe", "/../etc/passwd", "/ipxe/../x",
		"/ipxe//boot.ipxe", "/ipxe/.boot.ipxe.tmp.1", "/ipxe/", "/a b",
		"/a%2e", "/a\\b", "/a/./b", "/a\n",
	};
	char longp[1100];

	(void)state;
	for (size_t i = 0; i < NF_ARRAY_SIZE(good); i++)
		if (!nf_http_safe_path(good[i]))
			fail_msg("'%s' should be served", good[i]);
	for (size_t i = 0; i < NF_ARRAY_SIZE(bad); i++)
		if (nf_http_safe_path(bad[i]))
			fail_msg("'%s' should be refused", bad[i]);
	memset(longp, 'a', sizeof(longp) - 1);
	longp[0] = '/';
	longp[sizeof(longp) - 1] = '\0';
	assert_false(nf_http_safe_path(longp));
}

static void test_ranges(void **state)
{
	uint64_t off, len;

	(void)state;
	assert_int_equal(nf_http_parse_range("bytes=2-5", 15, &off, &len), 0);
	assert_int_equal(off, 2);
	assert_int_equal(len, 4);
	assert_int_equal(nf_http_parse_range("bytes=10-", 15, &off, &len), 0);
	assert_int_equal(len, 5);
	assert_int_equal(nf_http_parse_range("bytes=-3", 15, &off, &len), 0);
	assert_int_equal(off, 12);
	assert_int_equal(len, 3);
	assert_int_equal(nf_http_parse_range("bytes=-30", 15, &off, &len), 0);
	assert_int_equal(off, 0);
	assert_int_equal(len, 15);
	assert_int_equal(nf_http_parse_range("bytes=5-100", 15, &off, &len), 0);
	assert_int_equal(len, 10);
	assert_int_equal(nf_http_parse_range("bytes=15-", 15, &off, &len), -2);
	assert_int_equal(nf_http_parse_range("bytes=-0", 15, &off, &len), -2);
	assert_int_equal(nf_http_parse_range("bytes=0-0", 0, &off, &len), -2);
	assert_int_equal(nf_http_parse_range("bytes=5-2", 15, &off, &len), -1);
	assert_int_equal(nf_http_parse_range("bytes=0-1,3-4", 15, &off, &len), -1);
	assert_int_equal(nf_http_parse_range("items=0-1", 15, &off, &len), -1);
	assert_int_equal(nf_http_parse_range("bytes=a-", 15, &off, &len), -1);
	assert_int_equal(nf_http_parse_range("bytes=1-2x", 15, &off, &len), -1);
}

static void expect_verdict(const char *json, const char *name, const char *why)
{
	json_t *v = json_loads(json, 0, NULL);
	char buf[256];
	const char *r = nf_verdict_check(v, name, buf, sizeof(buf));

	if (why)
		assert_non_null(r && strstr(r, why) ? r : NULL);
	else if (r)
		fail_msg("'%s' refused: %s", json, r);
	json_decref(v);
}

static void test_verdicts(void **state)
{
	(void)state;
	expect_verdict("{\"result\":\"pass\"}", "n1", NULL);
	expect_verdict("{\"result\":\"fail\",\"node\":\"n1\",\"root_causes\":"
		       "[{\"id\":\"gpu.count\",\"message\":\"expected 8\"}]}",
		       "n1", NULL);
	expect_verdict("{\"result\":\"ok\"}", "n1", "'result'");
	expect_verdict("{}", "n1", "'result'");
	expect_verdict("[1]", "n1", "JSON object");
	expect_verdict("{\"result\":\"pass\",\"node\":\"n2\"}", "n1",
		       "'node' is 'n2' but the URL names 'n1'");
	expect_verdict("{\"result\":\"ok\"}", "n1", "not 'ok'");
	expect_verdict("{\"result\":\"pass\",\"image\":3}", "n1", "'image'");
	expect_verdict("{\"result\":\"pass\",\"root_causes\":{}}", "n1", "list");
	expect_verdict("{\"result\":\"pass\",\"root_causes\":[{\"message\":\"x\"}]}",
		       "n1", "'id'");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_paths),
		cmocka_unit_test(test_ranges),
		cmocka_unit_test(test_verdicts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
