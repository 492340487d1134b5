/* SPDX-License-Identifier: MIT */
/* Image CI parsers: dpkg status and the StoragePass scan. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "internal.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dpkg_status),
		cmocka_unit_test(test_storagepass),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
