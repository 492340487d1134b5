/* SPDX-License-Identifier: MIT */
/* EFI boot variables on a copy of the fixture efivars directory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nodeforge.h"

static struct nf_ctx *ctx;
static char dir[] = "/tmp/nf-test-efi.XXXXXX";

static int setup(void **state)
{
	const char *src = getenv("NF_SRCDIR");
	char cmd[8192];

	(void)state;
	if (nf_ctx_new(&ctx) < 0 || !mkdtemp(dir))
		return -1;
	snprintf(cmd, sizeof(cmd),
		 "cp %s/tests/fixtures/efi/sysroot/sys/firmware/efi/efivars/* %s/",
		 src ? src : ".", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[4096];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		return -1;
	nf_ctx_free(ctx);
	return 0;
}

static void test_parse_num(void **state)
{
	unsigned n;

	(void)state;
	assert_int_equal(nf_efi_parse_num("0003", &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(nf_efi_parse_num("Boot001A", &n), 0);
	assert_int_equal(n, 0x1a);
	assert_int_equal(nf_efi_parse_num("bootffff", &n), 0);
	assert_int_equal(n, 0xffff);
	assert_int_not_equal(nf_efi_parse_num("12345", &n), 0);
	assert_int_not_equal(nf_efi_parse_num("Boot", &n), 0);
	assert_int_not_equal(nf_efi_parse_num("00g0", &n), 0);
}

static void test_next_boot_network(void **state)
{
	struct nf_efi *efi;
	unsigned num;
	int yes, next;

	(void)state;
	assert_int_equal(nf_efi_open_dir(ctx, dir, &efi), 0);
	assert_int_equal(nf_efi_next_boot_is_network(efi, &yes, &next), 0);
	assert_false(yes);
	assert_int_equal(next, -1);
	assert_int_equal(nf_efi_resolve(efi, "pxe", &num), 0);
	assert_int_equal(num, 0);
	assert_int_equal(nf_efi_set_boot_next(efi, num), 0);
	assert_int_equal(nf_efi_next_boot_is_network(efi, &yes, &next), 0);
	assert_true(yes);
	assert_int_equal(next, 0);
	assert_int_equal(nf_efi_set_boot_next(efi, 1), 0);
	assert_int_equal(nf_efi_next_boot_is_network(efi, &yes, &next), 0);
	assert_false(yes);
	assert_int_equal(nf_efi_clear_boot_next(efi), 0);
	assert_int_equal(nf_efi_clear_boot_next(efi), 0);
	assert_int_equal(nf_efi_boot_next(efi, &next), 0);
	assert_int_equal(next, -1);
	assert_int_equal(nf_efi_set_boot_next(efi, 9), NF_E_NOTFOUND);
	nf_efi_free(efi);
}

static void test_no_efi(void **state)
{
	struct nf_efi *efi = NULL;

	(void)state;
	nf_ctx_set_sysroot(ctx, "/nonexistent");
	assert_int_equal(nf_efi_open(ctx, &efi), NF_E_NOHW);
	assert_null(efi);
	assert_non_null(strstr(nf_errmsg(ctx), "legacy BIOS"));
	nf_ctx_set_sysroot(ctx, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_num),
		cmocka_unit_test(test_next_boot_network),
		cmocka_unit_test(test_no_efi),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
