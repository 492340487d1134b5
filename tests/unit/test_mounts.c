/* SPDX-License-Identifier: MIT */
/* Which mount, filesystem and disk hold a path (fixture mountinfo). */
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

static int setup(void **state)
{
	const char *src = getenv("NF_SRCDIR");
	char dir[4096];

	(void)state;
	if (nf_ctx_new(&ctx) < 0)
		return -1;
	snprintf(dir, sizeof(dir), "%s/tests/fixtures/disk/sysroot",
		 src ? src : ".");
	return nf_ctx_set_sysroot(ctx, dir);
}

static int teardown(void **state)
{
	(void)state;
	nf_ctx_free(ctx);
	return 0;
}

static void expect(const char *path, const char *mp, const char *src,
		   const char *fstype, const char *root, const char *disk)
{
	struct nf_mount_info m;

	if (nf_mount_find(ctx, path, &m) != 0)
		fail_msg("'%s': %s", path, nf_errmsg(ctx));
	assert_string_equal(m.mountpoint, mp);
	assert_string_equal(m.source, src);
	assert_string_equal(m.fstype, fstype);
	assert_string_equal(m.root, root);
	if (disk)
		assert_string_equal(m.disk, disk);
	else
		assert_null(m.disk);
	nf_mount_info_clear(&m);
}

static void test_enroot_cache(void **state)
{
	(void)state;
	expect("/var/lib/enroot/cache", "/var/lib/enroot", "/dev/nvme1n1p1",
	       "xfs", "/enroot", "nvme1n1");
	expect("/var/lib/enroot", "/var/lib/enroot", "/dev/nvme1n1p1", "xfs",
	       "/enroot", "nvme1n1");
	expect("/raid/enroot/data", "/raid", "/dev/nvme1n1p1", "xfs", "/",
	       "nvme1n1");
}

static void test_prefix_is_by_component(void **state)
{
	(void)state;
	/* /raidx is not under /raid; /var/lib/enrootx not under enroot */
	expect("/raidx", "/", "/dev/nvme0n1p2", "ext4", "/", "nvme0n1");
	expect("/var/lib/enrootx", "/", "/dev/nvme0n1p2", "ext4", "/",
	       "nvme0n1");
	expect("/", "/", "/dev/nvme0n1p2", "ext4", "/", "nvme0n1");
	expect("//var//lib/./enroot/", "/var/lib/enroot", "/dev/nvme1n1p1",
	       "xfs", "/enroot", "nvme1n1");
}

static void test_overmount_and_escapes(void **state)
{
	(void)state;
	/* the later mount on /tmp hides the first */
	expect("/tmp/x", "/tmp", "overlay-tmp", "tmpfs", "/", NULL);
	expect("/mnt/with space/f", "/mnt/with space", "tmp fs", "tmpfs", "/",
	       NULL);
}

static void test_bad(void **state)
{
	struct nf_mount_info m;

	(void)state;
	assert_int_not_equal(nf_mount_find(ctx, "relative/path", &m), 0);
	assert_int_not_equal(nf_mount_find(ctx, "/var/../etc", &m), 0);
	assert_non_null(strstr(nf_errmsg(ctx), "'/var/../etc'"));
	nf_ctx_set_sysroot(ctx, "/nonexistent-sysroot");
	assert_int_not_equal(nf_mount_find(ctx, "/", &m), 0);
	assert_non_null(strstr(nf_errmsg(ctx), "mountinfo"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_enroot_cache),
		cmocka_unit_test(test_prefix_is_by_component),
		cmocka_unit_test(test_overmount_and_escapes),
		cmocka_unit_test(test_bad),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
