/* SPDX-License-Identifier: MIT */
/* The one distribution table that build, apply and pxe consult. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nodeforge.h"

static void test_distro_table(void **state)
{
	static const char *const el[] = { "rocky9", "rhel9", "alma9" };
	static const char *const deb[][2] = {
		{ "debian13", "trixie" }, { "debian12", "bookworm" },
		{ "debian11", "bullseye" },
	};

	(void)state;
	for (size_t i = 0; i < 3; i++) {
		const struct nf_distro *d = nf_distro_find(el[i]);

		assert_non_null(d);
		assert_true(d->el);
		assert_true(nf_distro_is_el(el[i]));
		assert_string_equal(d->suite, "9");
	}
	for (size_t i = 0; i < 3; i++) {
		const struct nf_distro *d = nf_distro_find(deb[i][0]);

		assert_non_null(d);
		assert_false(d->el);
		assert_false(nf_distro_is_el(deb[i][0]));
		assert_string_equal(d->suite, deb[i][1]);
	}
	/* what the prefix tests used to take for EL is not a distribution */
	assert_null(nf_distro_find("el9"));
	assert_false(nf_distro_is_el("el9"));
	assert_false(nf_distro_is_el("rockylinux"));
	assert_false(nf_distro_is_el(NULL));
	assert_null(nf_distro_find("ubuntu22"));
	/* what a site file may name is in the table */
	for (size_t i = 0; nf_site_distros[i]; i++)
		assert_non_null(nf_distro_find(nf_site_distros[i]));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_distro_table),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
