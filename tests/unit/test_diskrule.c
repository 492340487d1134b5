/* SPDX-License-Identifier: MIT */
/* Disk selection rules: parser, matching, picking. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "internal.h"
#include "internal/storage.h"

static struct nf_ctx *ctx;

static int setup(void **state)
{
	(void)state;
	return nf_ctx_new(&ctx);
}

static int teardown(void **state)
{
	(void)state;
	nf_ctx_free(ctx);
	return 0;
}

static struct nf_disk mk(const char *name, const char *tran,
			 unsigned long long size, int rm, const char *fs)
{
	struct nf_disk d = { 0 };

	d.name = (char *)name;
	d.path = (char *)name;
	d.transport = (char *)tran;
	d.size = size;
	d.removable = rm;
	d.rotational = 0;
	d.fstype = (char *)fs;
	return d;
}

static int matches(const char *rule, const struct nf_disk *d)
{
	struct nf_diskrule *r;
	int m;

	assert_int_equal(nf_diskrule_parse(ctx, rule, &r), 0);
	m = nf_diskrule_match(r, d);
	nf_diskrule_free(r);
	return m;
}

static void test_parse_good(void **state)
{
	static const char *const good[] = {
		"empty", "!empty", "smallest", "largest,first",
		"transport=nvme,removable=0,empty,smallest",
		"model~*PM9A3*", "model!~*usb*", "size>=500G", "size<1.5TiB",
		"size=512", "size>3.84T", "rotational=no", "removable=true",
		" transport=nvme , empty ", "fstype=", "label=enroot",
		"name=nvme0n1", "path~/dev/nvme*", "pttype!=gpt",
	};
	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++) {
		struct nf_diskrule *r = NULL;

		if (nf_diskrule_parse(ctx, good[i], &r) != 0)
			fail_msg("'%s' should parse: %s", good[i], nf_errmsg(ctx));
		nf_diskrule_free(r);
	}
}

static void test_parse_bad(void **state)
{
	static const char *const bad[] = {
		"", ",", "empty,", "colour=red", "transport", "size>=",
		"size>=lots", "size~5G", "size>=1.5", "size>=5X",
		"removable=2", "removable>0", "model>=a", "smallest,largest",
		"transport==nvme", "size>=99999999999999999999",
		"size>=18446744073709551615P", "empty\n",
	};
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		struct nf_diskrule *r = NULL;

		if (nf_diskrule_parse(ctx, bad[i], &r) == 0) {
			nf_diskrule_free(r);
			fail_msg("'%s' should not parse", bad[i]);
		}
		assert_null(r);
		assert_true(strlen(nf_errmsg(ctx)) > 0);
	}
}

static void test_parse_caps(void **state)
{
	char big[2048];
	struct nf_diskrule *r = NULL;
	size_t off = 0;

	(void)state;
	for (int i = 0; i < 33; i++)
		off += (size_t)snprintf(big + off, sizeof(big) - off, "%sempty",
					i ? "," : "");
	assert_int_equal(nf_diskrule_parse(ctx, big, &r), NF_E_LIMIT);
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_not_equal(nf_diskrule_parse(ctx, big, &r), 0);
	assert_null(r);
}

static void test_match(void **state)
{
	struct nf_disk n = mk("nvme0n1", "nvme", 1920383410176ULL, 0, NULL);
	struct nf_disk u = mk("sdb", "usb", 32017047552ULL, 1, "vfat");

	(void)state;
	n.model = (char *)"SAMSUNG MZQL21T9HCJR-00A07";
	assert_true(matches("transport=nvme,removable=0,empty", &n));
	assert_false(matches("transport=nvme", &u));
	assert_true(matches("transport!=nvme", &u));
	assert_true(matches("model~*mzql21t9*", &n));
	assert_false(matches("model~*mzql21t9*", &u)); /* no model: "" */
	assert_true(matches("size>=1.92T", &n));
	assert_false(matches("size>=1.92T", &u));
	assert_true(matches("size<1.75TiB", &n));  /* 1.746 TiB */
	assert_true(matches("size=1920383410176", &n));
	assert_true(matches("!empty,fstype=vfat", &u));
	assert_true(matches("fstype=", &n));
	u.removable = -1;
	assert_false(matches("removable=1", &u));
	assert_false(matches("removable=0", &u));
	assert_false(matches("removable!=0", &u));
}

static void test_pick(void **state)
{
	struct nf_disk v[] = {
		mk("nvme1n1", "nvme", 3840755982336ULL, 0, NULL),
		mk("nvme0n1", "nvme", 1920383410176ULL, 0, NULL),
		mk("nvme2n1", "nvme", 1920383410176ULL, 0, NULL),
		mk("sda", "sata", 8001563222016ULL, 0, "ext4"),
	};
	struct nf_disks d = { v, 4 };
	struct nf_diskrule *r;
	size_t idx;

	(void)state;
	assert_int_equal(nf_diskrule_parse(ctx, "transport=nvme,largest", &r), 0);
	assert_int_equal(nf_disk_pick(ctx, r, &d, &idx), 0);
	assert_int_equal(idx, 0);
	nf_diskrule_free(r);

	assert_int_equal(nf_diskrule_parse(ctx, "transport=nvme,smallest", &r), 0);
	assert_int_equal(nf_disk_pick(ctx, r, &d, &idx), NF_E_CONFLICT);
	assert_non_null(strstr(nf_errmsg(ctx), "nvme0n1, nvme2n1"));
	nf_diskrule_free(r);

	assert_int_equal(nf_diskrule_parse(ctx, "transport=nvme,smallest,first", &r), 0);
	assert_int_equal(nf_disk_pick(ctx, r, &d, &idx), 0);
	assert_int_equal(idx, 1);
	nf_diskrule_free(r);

	assert_int_equal(nf_diskrule_parse(ctx, "transport=nvme", &r), 0);
	assert_int_equal(nf_disk_pick(ctx, r, &d, &idx), NF_E_CONFLICT);
	nf_diskrule_free(r);

	assert_int_equal(nf_diskrule_parse(ctx, "transport=usb", &r), 0);
	assert_int_equal(nf_disk_pick(ctx, r, &d, &idx), NF_E_NOTFOUND);
	assert_non_null(strstr(nf_errmsg(ctx), "no disk matches 'transport=usb'"));
	nf_diskrule_free(r);

	assert_int_equal(nf_diskrule_parse(ctx, "!empty", &r), 0);
	assert_int_equal(nf_disk_pick(ctx, r, &d, &idx), 0);
	assert_int_equal(idx, 3);
	nf_diskrule_free(r);
}

/* The verifier drops the terms about contents: a formatted cache disk
 * still matches the rule that chose it while it was empty */
static void test_hardware_only(void **state)
{
	struct nf_disk formatted = mk("nvme1n1", "nvme", 7680ULL << 30, 0, "xfs");
	struct nf_disk usb = mk("sdb", "usb", 7680ULL << 30, 1, NULL);
	struct nf_diskrule *r;
	char dropped[64];

	(void)state;
	assert_int_equal(nf_diskrule_parse(ctx, "transport=nvme,empty,fstype!=xfs,label~x*,pttype=gpt,largest", &r), 0);
	assert_false(nf_diskrule_match(r, &formatted));
	assert_int_equal(nf_diskrule_hardware_only(r, dropped, sizeof(dropped)), 4);
	assert_string_equal(dropped, "empty,fstype,label,pttype");
	assert_true(nf_diskrule_match(r, &formatted));
	assert_false(nf_diskrule_match(r, &usb));
	/* nothing left to drop; a small buffer is cut, never overrun */
	assert_int_equal(nf_diskrule_hardware_only(r, dropped, sizeof(dropped)), 0);
	assert_string_equal(dropped, "");
	nf_diskrule_free(r);
	assert_int_equal(nf_diskrule_parse(ctx, "!empty,fstype=xfs", &r), 0);
	assert_int_equal(nf_diskrule_hardware_only(r, dropped, 4), 2);
	assert_string_equal(dropped, "!em");
	assert_true(nf_diskrule_match(r, &usb));
	nf_diskrule_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_good),
		cmocka_unit_test(test_parse_bad),
		cmocka_unit_test(test_parse_caps),
		cmocka_unit_test(test_match),
		cmocka_unit_test(test_pick),
		cmocka_unit_test(test_hardware_only),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
