/* SPDX-License-Identifier: MIT */
/* Pack formats, determinism, manifest parsing and the unpacker's refusals. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "internal.h"

static char tmpdir[64];

static int setup(void **state)
{
	(void)state;
	strcpy(tmpdir, "/tmp/nf-test-pack.XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	return nf_rm_tree_at(AT_FDCWD, tmpdir);
}

static void put(const char *rel, const char *content, mode_t mode)
{
	char p[256];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", tmpdir, rel);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs(content, f);
	fclose(f);
	chmod(p, mode);
}

static char *slurp(const char *rel, size_t *len)
{
	char p[256], *buf = NULL;

	snprintf(p, sizeof(p), "%s/%s", tmpdir, rel);
	assert_int_equal(nf_read_file(NULL, p, 1 << 26, &buf, len), 0);
	return buf;
}

static void test_parse_format(void **state)
{
	int f, c;

	(void)state;
	assert_int_equal(nf_pack_parse_format("x/img.tar.zst", &f, &c), 0);
	assert_int_equal(f, NF_PACK_TAR);
	assert_int_equal(c, NF_COMP_ZSTD);
	assert_int_equal(nf_pack_parse_format("initrd.cpio.gz", &f, &c), 0);
	assert_int_equal(f, NF_PACK_CPIO);
	assert_int_equal(c, NF_COMP_GZIP);
	assert_int_equal(nf_pack_parse_format("ROLE-0123.rootfs.tar.xz", &f, &c), 0);
	assert_int_equal(f, NF_PACK_TAR);
	assert_int_equal(c, NF_COMP_XZ);
	assert_int_equal(nf_pack_parse_format("cpio.xz", &f, &c), 0);
	assert_int_equal(f, NF_PACK_CPIO);
	assert_int_equal(c, NF_COMP_XZ);
	assert_int_equal(nf_pack_parse_format("a.txz", &f, &c), NF_E_INVALID);
	assert_int_equal(nf_pack_parse_format("cpio", &f, &c), 0);
	assert_int_equal(c, NF_COMP_NONE);
	assert_int_equal(nf_pack_parse_format("a.tar", &f, &c), 0);
	assert_int_equal(nf_pack_parse_format("atar", &f, &c), NF_E_INVALID);
	assert_int_equal(nf_pack_parse_format("a.zip", &f, &c), NF_E_INVALID);
	assert_string_equal(nf_pack_format_name(NF_PACK_CPIO, NF_COMP_ZSTD),
			    "cpio.zst");
	assert_string_equal(nf_pack_format_name(NF_PACK_TAR, NF_COMP_XZ),
			    "tar.xz");
}

static void test_pack_deterministic(void **state)
{
	struct nf_ctx *ctx;
	struct nf_pack_opts o = { .format = NF_PACK_TAR,
				  .compressor = NF_COMP_ZSTD, .level = 3,
				  .threads = 1 };
	char root[128], out[128];
	char *a, *b, *ma;
	size_t la, lb, lm;
	json_t *m;

	(void)state;
	assert_int_equal(nf_ctx_new(&ctx), 0);
	snprintf(root, sizeof(root), "%s/root", tmpdir);
	assert_int_equal(mkdir(root, 0755), 0);
	put("root/b", "bbb", 0644);
	put("root/a", "aaaa", 0600);
	snprintf(out, sizeof(out), "%s/one.tar.zst", tmpdir);
	assert_int_equal(nf_pack(ctx, root, out, &o), 0);
	o.threads = 2;
	snprintf(out, sizeof(out), "%s/two.tar.zst", tmpdir);
	assert_int_equal(nf_pack(ctx, root, out, &o), 0);
	a = slurp("one.tar.zst", &la);
	b = slurp("two.tar.zst", &lb);
	assert_int_equal(la, lb);
	assert_memory_equal(a, b, la);

	ma = slurp("one.tar.zst.manifest.json", &lm);
	assert_int_equal(nf_manifest_parse(ctx, ma, lm, &m), 0);
	{
		json_t *e = json_array_get(json_object_get(m, "entries"), 1);
		char hex[NF_SHA256_HEX];

		assert_string_equal(json_string_value(json_object_get(e, "path")), "a");
		assert_string_equal(json_string_value(json_object_get(e, "mode")), "0600");
		nf_sha256_hex("aaaa", 4, hex);
		assert_string_equal(json_string_value(json_object_get(e, "sha256")), hex);
		nf_sha256_hex(a, la, hex);
		assert_string_equal(json_string_value(json_object_get(
			json_object_get(m, "archive"), "sha256")), hex);
	}
	json_decref(m);
	free(ma);
	free(a);
	free(b);
	nf_ctx_free(ctx);
}

static void test_manifest_parse_bad(void **state)
{
	static const char *const bad[] = {
		"",
		"[]",
		"{\"nodeforge_manifest\":2,\"entries\":[]}",
		"{\"nodeforge_manifest\":1}",
		"{\"nodeforge_manifest\":1,\"entries\":[1],\"archive\":{}}",
		"{\"nodeforge_manifest\":1,\"entries\":[{\"path\":\"a\",\"type\":\"file\",\"mode\":\"0644\",\"uid\":0,\"gid\":0,\"size\":1,\"sha256\":\"xyz\"}]}",
		"{\"nodeforge_manifest\":1,\"entries\":[{\"path\":\"a\",\"type\":\"socket\",\"mode\":\"0644\",\"uid\":0,\"gid\":0}]}",
		"{\"nodeforge_manifest\":1,\"entries\":[{\"path\":\"a\",\"type\":\"dir\",\"mode\":\"9\",\"uid\":0,\"gid\":0}]}",
		"{\"nodeforge_manifest\":1,\"entries\":[],\"archive\":{\"name\":\"x\",\"sha256\":\"00\",\"size\":1}}",
		"{\"nodeforge_manifest\":1,\"nodeforge_manifest\":1}",
	};
	struct nf_ctx *ctx;

	(void)state;
	assert_int_equal(nf_ctx_new(&ctx), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *m = NULL;

		if (nf_manifest_parse(ctx, bad[i], strlen(bad[i]), &m) == 0)
			fail_msg("manifest %zu should not parse", i);
		assert_true(*nf_errmsg(ctx) != '\0');
	}
	nf_ctx_free(ctx);
}

/* A NUL byte between two tokens: jansson alone read past it, the streamed
 * scanner did not (found by fuzz_manifest); both refuse it, named */
static void test_manifest_nul(void **state)
{
	static const char m[] = "{\"nodeforge_manifest\":1,\"level\":0\0,\n\"entries\":[]}";
	struct nf_ctx *ctx;
	json_t *out = NULL;

	(void)state;
	assert_int_equal(nf_ctx_new(&ctx), 0);
	assert_int_not_equal(nf_manifest_parse(ctx, m, sizeof(m) - 1, &out), 0);
	assert_null(out);
	assert_string_equal(nf_errmsg(ctx), "line 1: a NUL byte (offset 33)");
	assert_int_not_equal(nf_manifest_scan(ctx, m, sizeof(m) - 1, &out), 0);
	assert_null(out);
	assert_string_equal(nf_errmsg(ctx), "line 1: a NUL byte (offset 33)");
	nf_ctx_free(ctx);
}

/* An archive in memory, written with the same writer nf_pack uses */
struct membuf {
	char *p;
	size_t n;
};

static int mem_write(void *data, const void *buf, size_t len)
{
	struct membuf *m = data;

	/* Keep the first MiB: a huge declared entry is padded by the writer,
	 * and the reader must refuse it from its header alone */
	if (m->n >= (1 << 20))
		return 0;
	m->p = realloc(m->p, m->n + len);
	memcpy(m->p + m->n, buf, len);
	m->n += len;
	return 0;
}

static int skip_devs;   /* nf_unpack_opts.skip_devices for unpack_one */

static int unpack_one(const char *name, mode_t mode, const char *link,
		      const char *hardlink, long long size)
{
	struct nf_ctx *ctx;
	struct nf_awriter *w;
	struct membuf mb = { 0 };
	struct nf_aentry first = { .path = "ok", .mode = S_IFREG | 0644 };
	struct nf_aentry e = { .path = name, .mode = mode, .symlink = link,
			       .hardlink = hardlink, .size = size };
	char dir[128];
	int dfd, r;

	assert_int_equal(nf_ctx_new(&ctx), 0);
	assert_int_equal(nf_awriter_new(ctx, NF_PACK_TAR, NF_COMP_NONE, -1, 1,
					mem_write, &mb, &w), 0);
	assert_int_equal(nf_awriter_header(w, &first), 0);
	assert_int_equal(nf_awriter_header(w, &e), 0);
	if (size > 0 && size < 4096) {
		char z[4096] = { 0 };

		assert_int_equal(nf_awriter_data(w, z, (size_t)size), 0);
	}
	nf_awriter_close(w);
	snprintf(dir, sizeof(dir), "%s/u", tmpdir);
	nf_rm_tree_at(AT_FDCWD, dir);
	assert_int_equal(mkdir(dir, 0755), 0);
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	r = nf_unpack_mem(ctx, mb.p, mb.n, dfd,
			  &(struct nf_unpack_opts){ .max_size = 1 << 20,
						    .skip_devices = skip_devs });
	close(dfd);
	free(mb.p);
	nf_ctx_free(ctx);
	return r;
}

/* skip_devices: a device node is left out, the rest unpacked */
static void test_unpack_skip_devices(void **state)
{
	char p[160];

	(void)state;
	skip_devs = 1;
	assert_int_equal(unpack_one("sda", S_IFBLK | 0600, NULL, NULL, 0), 0);
	skip_devs = 0;
	snprintf(p, sizeof(p), "%s/u/sda", tmpdir);
	assert_int_equal(access(p, F_OK), -1);
	snprintf(p, sizeof(p), "%s/u/ok", tmpdir);
	assert_int_equal(access(p, F_OK), 0);
}

static void test_unpack_refusals(void **state)
{
	(void)state;
	assert_int_equal(unpack_one("a/b", S_IFREG | 0644, NULL, NULL, 3), 0);
	assert_int_equal(unpack_one("/etc/x", S_IFREG | 0644, NULL, NULL, 1),
			 NF_E_UNSAFE);
	assert_int_equal(unpack_one("a/../../x", S_IFREG | 0644, NULL, NULL, 1),
			 NF_E_UNSAFE);
	assert_int_equal(unpack_one("h", S_IFREG | 0644, NULL, "../x", 0),
			 NF_E_UNSAFE);
	assert_int_equal(unpack_one("ok/x", S_IFREG | 0644, NULL, NULL, 1),
			 NF_E_UNSAFE);
	assert_int_equal(unpack_one("sda", S_IFBLK | 0600, NULL, NULL, 0),
			 NF_E_UNSAFE);
	assert_int_equal(unpack_one("big", S_IFREG | 0644, NULL, NULL,
				    64LL << 20), NF_E_LIMIT);
	assert_int_equal(unpack_one("l", S_IFLNK | 0777, "/etc", NULL, 0), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_format),
		cmocka_unit_test_setup_teardown(test_pack_deterministic, setup,
						teardown),
		cmocka_unit_test(test_manifest_parse_bad),
		cmocka_unit_test(test_manifest_nul),
		cmocka_unit_test_setup_teardown(test_unpack_skip_devices, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_unpack_refusals, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
