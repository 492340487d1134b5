/* SPDX-License-Identifier: MIT */
/* Hostlist and CPU list parsing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nodeforge.h"

static void expect_hosts(const char *expr, const char *joined)
{
	char **v = NULL, buf[4096] = "";
	size_t n = 0;

	assert_int_equal(nf_hostlist_expand(expr, &v, &n, 0), 0);
	for (size_t i = 0; i < n; i++) {
		if (i)
			strcat(buf, " ");
		strcat(buf, v[i]);
	}
	assert_string_equal(buf, joined);
	nf_strv_free(v, n);
}

static void test_hostlist_ranges(void **state)
{
	(void)state;
	expect_hosts("cp-01", "cp-01");
	expect_hosts("gpu-[01-04]", "gpu-01 gpu-02 gpu-03 gpu-04");
	expect_hosts("gpu-[01-02,07],cp-01", "gpu-01 gpu-02 gpu-07 cp-01");
	expect_hosts("r[1-2]n[08-09]", "r1n08 r1n09 r2n08 r2n09");
	expect_hosts("n[8-10]", "n8 n9 n10");
	expect_hosts("n[098-100]", "n098 n099 n100");
}

static void test_hostlist_bad(void **state)
{
	static const char *const bad[] = {
		"", "gpu-[", "gpu-]", "gpu-[04-01]", "gpu-[a-b]", "gpu-[]",
		"gpu-[1,]", "a,,b", "a b", "gpu-[1-2", "x[[1]]", ",a",
	};
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char **v = NULL;
		size_t n = 0;

		if (nf_hostlist_expand(bad[i], &v, &n, 0) == 0)
			fail_msg("'%s' should not parse", bad[i]);
	}
}

static void test_hostlist_cap(void **state)
{
	char **v = NULL;
	size_t n = 0;

	(void)state;
	assert_int_equal(nf_hostlist_expand("n[1-100000]", &v, &n, 1000),
			 NF_E_LIMIT);
	assert_int_equal(nf_hostlist_expand("n[1-1000]", &v, &n, 1000), 0);
	assert_int_equal(n, 1000);
	nf_strv_free(v, n);
}

static void test_cpulist(void **state)
{
	uint8_t bits[32];
	unsigned max;
	char *s;

	(void)state;
	assert_int_equal(nf_cpulist_parse("1-7,9-15,17", bits, 256, &max), 0);
	assert_int_equal(max, 17);
	s = nf_cpulist_format(bits, 256);
	assert_string_equal(s, "1-7,9-15,17");
	free(s);
	assert_int_equal(nf_cpulist_parse("0-3\n", bits, 256, &max), 0);
	assert_int_equal(max, 3);
	assert_int_not_equal(nf_cpulist_parse("3-1", bits, 256, NULL), 0);
	assert_int_not_equal(nf_cpulist_parse("1,", bits, 256, NULL), 0);
	assert_int_not_equal(nf_cpulist_parse("x", bits, 256, NULL), 0);
	assert_int_equal(nf_cpulist_parse("300", bits, 256, NULL), NF_E_LIMIT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hostlist_ranges),
		cmocka_unit_test(test_hostlist_bad),
		cmocka_unit_test(test_hostlist_cap),
		cmocka_unit_test(test_cpulist),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
