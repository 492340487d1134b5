/* SPDX-License-Identifier: MIT */
/* nf_elf_interp: the loader of a real dynamically linked program and of a
 * built one, none for a static one, and every truncation or offset that
 * points outside the bytes refused rather than read. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "internal.h"

static const char LOADER[] = "/lib64/ld-linux-x86-64.so.2";

/* ELF64 LE: header, one PT_INTERP program header, the path after it */
static size_t make_elf(uint8_t *b, const char *interp)
{
	size_t n = strlen(interp) + 1;

	memset(b, 0, 120);
	memcpy(b, "\177ELF", 4);
	b[4] = 2;
	b[5] = 1;
	b[6] = 1;
	b[16] = 3;   /* ET_DYN */
	b[18] = 62;  /* x86-64 */
	b[32] = 64;  /* e_phoff */
	b[54] = 56;  /* e_phentsize */
	b[56] = 1;   /* e_phnum */
	b[64] = 3;   /* PT_INTERP */
	b[72] = 120; /* p_offset */
	b[96] = (uint8_t)n; /* p_filesz */
	memcpy(b + 120, interp, n);
	return 120 + n;
}

static void test_built(void **state)
{
	uint8_t b[256];
	char out[128];
	size_t len = make_elf(b, LOADER);

	(void)state;
	assert_int_equal(nf_elf_interp(b, len, out, sizeof(out)), 1);
	assert_string_equal(out, LOADER);
	/* no program header of that type: static */
	b[64] = 1;
	assert_int_equal(nf_elf_interp(b, len, out, sizeof(out)), 0);
}

static void test_host_program(void **state)
{
	char *buf = NULL, out[256];
	size_t len = 0;

	(void)state;
	if (nf_read_file(NULL, "/bin/true", 64u << 20, &buf, &len))
		skip();
	assert_int_equal(nf_elf_interp(buf, len, out, sizeof(out)), 1);
	assert_string_equal(out, LOADER);
	free(buf);
	if (nf_read_file(NULL, "/bin/busybox", 64u << 20, &buf, &len) == 0) {
		/* busybox-static: no interpreter */
		assert_int_equal(nf_elf_interp(buf, len, out, sizeof(out)), 0);
		free(buf);
	}
}

static void test_refused(void **state)
{
	uint8_t b[256], c[256];
	char out[128], small[8];
	size_t len = make_elf(b, LOADER);

	(void)state;
	/* every truncation: never read past the end, never a path */
	for (size_t n = 0; n < len; n++) {
		int r = nf_elf_interp(b, n, out, sizeof(out));

		assert_true(r == -ENOEXEC || r == -EINVAL);
	}
	assert_int_equal(nf_elf_interp("#!/bin/sh\n", 10, out, sizeof(out)), -ENOEXEC);
	/* one byte changed each: what nf_elf_interp must say */
	static const struct { size_t at; uint8_t val; int want; } bad[] = {
		{ 4, 1, -ENOEXEC },     /* 32-bit */
		{ 5, 2, -ENOEXEC },     /* big-endian */
		{ 32, 0xf0, -EINVAL },  /* program headers past the end */
		{ 54, 8, -EINVAL },     /* an entry size below 56 */
		{ 57, 0xff, -EINVAL },  /* a huge count */
		{ 79, 0x80, -EINVAL },  /* the path's segment outside the file */
		{ 96, sizeof(LOADER) - 1, -EINVAL }, /* without its NUL */
		{ 120, 0, -EINVAL },    /* empty */
	};
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		memcpy(c, b, len);
		c[bad[k].at] = bad[k].val;
		assert_int_equal(nf_elf_interp(c, len, out, sizeof(out)), bad[k].want);
	}
	/* a path longer than the caller's buffer */
	assert_int_equal(nf_elf_interp(b, len, small, sizeof(small)), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_built),
		cmocka_unit_test(test_host_program),
		cmocka_unit_test(test_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
