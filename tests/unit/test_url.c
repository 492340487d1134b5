/* SPDX-License-Identifier: MIT */
/* nf_is_url: the one rule that tells a URL from a directory in every
 * option that takes either (docs/flags.md). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "nodeforge.h"

static void test_urls(void **state)
{
	(void)state;
	assert_true(nf_is_url("http://deb.debian.org/debian"));
	assert_true(nf_is_url("https://mirror.example/art/"));
	assert_true(nf_is_url("file:///srv/mirror"));
	assert_true(nf_is_url("git+ssh://host/x"));
}

static void test_directories(void **state)
{
	(void)state;
	/* relative paths, the README's among them, are directories */
	assert_false(nf_is_url("../shared/artifacts"));
	assert_false(nf_is_url("./mirror"));
	assert_false(nf_is_url("mirror"));
	assert_false(nf_is_url("/srv/mirror"));
	/* a colon alone is no scheme; nor is a scheme that starts oddly */
	assert_false(nf_is_url("a:b/c"));
	assert_false(nf_is_url("dir/http://x"));
	assert_false(nf_is_url("1http://x"));
	assert_false(nf_is_url("://x"));
	assert_false(nf_is_url(""));
	assert_false(nf_is_url(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_urls),
		cmocka_unit_test(test_directories),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
