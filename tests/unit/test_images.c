/* SPDX-License-Identifier: MIT */
/* The published images of a build output: names, grouping, order, prune. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <cmocka.h>

#include "nodeforge.h"

static char dir[64];

static void put(const char *rel, const char *text, long mtime)
{
	char p[256];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	assert_non_null(f = fopen(p, "w"));
	fputs(text, f);
	fclose(f);
	if (mtime) {
		struct timeval tv[2] = { { mtime, 0 }, { mtime, 0 } };

		assert_int_equal(utimes(p, tv), 0);
	}
}

static const char *const kinds[] = {
	"rootfs.tar.zst", "initramfs.cpio.zst", "vmlinuz", "manifest.json",
	"manifest.json.sig",
};

/* An image of role r under id ID, its manifest published at MTIME */
static void image(const char *id, long mtime)
{
	char rel[128];

	for (size_t i = 0; i < sizeof(kinds) / sizeof(*kinds); i++) {
		snprintf(rel, sizeof(rel), "r/r-%s.%s", id, kinds[i]);
		put(rel, "x", mtime);
	}
}

/* ROLE.current naming image ID (its sha256: ID, then zeros) */
static void current(const char *id)
{
	char doc[512], sha[65];

	snprintf(sha, sizeof(sha), "%s%052d", id, 0);
	snprintf(doc, sizeof(doc), "{\"role\": \"r\", \"kernel\": \"r-%s.vmlinuz\","
		 " \"initramfs\": \"r-%s.initramfs.cpio.zst\", \"rootfs\": "
		 "\"r-%s.rootfs.tar.zst\", \"rootfs_sha256\": \"%s\"}\n",
		 id, id, id, sha);
	put("r/r.current", doc, 0);
}

static int setup(void **state)
{
	char p[128];

	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/nf-images.XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(p, sizeof(p), "%s/r", dir);
	assert_int_equal(mkdir(p, 0755), 0);
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd);
}

static void test_file_id(void **state)
{
	char id[13];

	(void)state;
	assert_true(nf_image_file_id("compute", "compute-0123456789ab.vmlinuz", id));
	assert_string_equal(id, "0123456789ab");
	assert_false(nf_image_file_id("compute", "compute.current", id));
	assert_false(nf_image_file_id("compute", "compute-0123456789AB.vmlinuz", id));
	assert_false(nf_image_file_id("compute", "compute-0123456789a.vmlinuz", id));
	assert_false(nf_image_file_id("compute", "compute-0123456789ab.", id));
	assert_false(nf_image_file_id("compute", "compute-0123456789abc.x", id));
	assert_false(nf_image_file_id("comp", "compute-0123456789ab.vmlinuz", id));
	assert_false(nf_image_file_id("compute", "login-0123456789ab.vmlinuz", id));
}

static void test_scan_groups_and_orders(void **state)
{
	struct nf_ctx *ctx;
	struct nf_images l = { 0 };

	(void)state;
	image("aaaaaaaaaaaa", 3000);
	image("bbbbbbbbbbbb", 1000);
	image("000000000000", 2000);
	put("r/.lock", "", 0);
	put("r/r-cccccccccccc.manifest.json", "x", 500); /* unsigned */
	current("000000000000");
	assert_int_equal(nf_ctx_new(&ctx), 0);
	assert_int_equal(nf_images_scan(ctx, dir, "r", &l), 0);
	assert_int_equal(l.n, 4);
	assert_string_equal(l.v[0].id, "aaaaaaaaaaaa");
	assert_string_equal(l.v[1].id, "000000000000");
	assert_string_equal(l.v[2].id, "bbbbbbbbbbbb");
	assert_string_equal(l.v[3].id, "cccccccccccc");
	assert_int_equal(l.v[0].nfiles, 5);
	assert_int_equal(l.v[0].size, 5);
	assert_int_equal(l.v[0].built, 3000);
	assert_string_equal(l.v[0].files[0], "r-aaaaaaaaaaaa.initramfs.cpio.zst");
	assert_true(l.v[1].current);
	assert_false(l.v[0].current);
	assert_true(l.v[0].is_signed);
	assert_false(l.v[3].is_signed);
	nf_images_free(&l);
	assert_int_equal(nf_images_scan(ctx, dir, "nope", &l), NF_E_NOTFOUND);
	assert_int_equal(nf_images_scan(ctx, dir, "../r", &l), NF_E_INVALID);
	nf_ctx_free(ctx);
}

static void test_prune_keeps_newest_current_booted(void **state)
{
	struct nf_ctx *ctx;
	struct nf_images l = { 0 };
	const char *trees[1];
	char tree[128], p[160];
	struct nf_image_prune_opts o = { .keep = 1, .trees = trees, .ntrees = 1 };

	(void)state;
	image("aaaaaaaaaaaa", 4000);
	image("bbbbbbbbbbbb", 3000);
	image("cccccccccccc", 2000);
	image("000000000000", 1000);
	current("000000000000");
	/* a tree whose one node boots cccccccccccc */
	snprintf(tree, sizeof(tree), "%s/tree", dir);
	snprintf(p, sizeof(p), "%s/ipxe", tree);
	assert_int_equal(mkdir(tree, 0755), 0);
	assert_int_equal(mkdir(p, 0755), 0);
	put("tree/nodes.json", "{}", 0);
	put("tree/ipxe/n1.ipxe", "kernel http://s/images/r/r-cccccccccccc.vmlinuz\n", 0);
	trees[0] = tree;
	assert_int_equal(nf_ctx_new(&ctx), 0);
	o.dry_run = 1;
	assert_int_equal(nf_images_prune(ctx, dir, "r", &o, &l), 0);
	assert_int_equal(l.n, 4);
	snprintf(p, sizeof(p), "%s/r/r-bbbbbbbbbbbb.vmlinuz", dir);
	assert_int_equal(access(p, F_OK), 0);
	nf_images_free(&l);
	o.dry_run = 0;
	assert_int_equal(nf_images_prune(ctx, dir, "r", &o, &l), 0);
	assert_false(l.v[0].pruned);                     /* the newest */
	assert_true(l.v[1].pruned);                      /* bbbbbbbbbbbb */
	assert_false(l.v[2].pruned);                     /* booted */
	assert_true(l.v[2].booted);
	assert_false(l.v[3].pruned);                     /* current */
	assert_int_equal(access(p, F_OK), -1);
	nf_images_free(&l);
	assert_int_equal(nf_images_scan(ctx, dir, "r", &l), 0);
	assert_int_equal(l.n, 3);
	nf_images_free(&l);
	/* a directory without nodes.json is no tree: refused */
	trees[0] = dir;
	assert_int_equal(nf_images_prune(ctx, dir, "r", &o, &l), NF_E_NOTFOUND);
	assert_int_equal(l.n, 0);
	nf_ctx_free(ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_file_id),
		cmocka_unit_test_setup_teardown(test_scan_groups_and_orders,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_prune_keeps_newest_current_booted,
						setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
