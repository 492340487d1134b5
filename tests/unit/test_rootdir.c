/* SPDX-License-Identifier: MIT */
/* Work inside a root directory (lib/rootdir.c): nothing escapes the root,
 * files are replaced, not written through. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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

static struct nf_ctx *ctx;
static char root[64], outside[64];
static int rootfd = -1;

static int setup(void **state)
{
	(void)state;
	snprintf(root, sizeof(root), "/tmp/nf-rootdir-XXXXXX");
	snprintf(outside, sizeof(outside), "/tmp/nf-outside-XXXXXX");
	if (!mkdtemp(root) || !mkdtemp(outside) || nf_ctx_new(&ctx) < 0)
		return -1;
	rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return rootfd < 0 ? -1 : 0;
}

static int teardown(void **state)
{
	char cmd[200];

	(void)state;
	close(rootfd);
	nf_ctx_free(ctx);
	snprintf(cmd, sizeof(cmd), "rm -rf %s %s", root, outside);
	return system(cmd) == 0 ? 0 : -1;
}

static int exists(const char *dir, const char *rel)
{
	char p[PATH_MAX];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	return lstat(p, &st) == 0;
}

/* Names in DIR that start with '.' (a temporary file left behind) */
static int dotfiles(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d)))
		if (de->d_name[0] == '.' && strcmp(de->d_name, ".") &&
		    strcmp(de->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

static void test_bad_components_refused_before_anything_is_made(void **state)
{
	static const char *bad[] = { "a/../../x", "a/./x", "a//x", "a/x/",
				     "..", "", "/" };

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = nf_root_write(ctx, rootfd, bad[i], "x", 1, 0644, -1, -1,
				      NF_ROOT_CREATE);

		assert_int_equal(r, NF_E_UNSAFE);
		assert_non_null(strstr(nf_errmsg(ctx), bad[i]));
	}
	assert_false(exists(root, "a"));
}

static void test_symlinked_directory_is_not_followed(void **state)
{
	char p[PATH_MAX];
	int fd;

	(void)state;
	snprintf(p, sizeof(p), "%s/etc", root);
	assert_int_equal(symlink(outside, p), 0);
	assert_int_equal(nf_root_write(ctx, rootfd, "/etc/munge/munge.key", "k",
				       1, 0400, -1, -1, NF_ROOT_CREATE),
			 NF_E_UNSAFE);
	assert_non_null(strstr(nf_errmsg(ctx), "'etc' is a symlink"));
	assert_false(exists(outside, "munge"));
	fd = nf_root_opendir(ctx, rootfd, "etc", 0);
	assert_int_equal(fd, NF_E_UNSAFE);
	/* a regular file where a directory is expected: the same refusal */
	assert_int_equal(nf_root_write(ctx, rootfd, "f", "x", 1, 0644, -1, -1,
				       0), 0);
	assert_int_equal(nf_root_write(ctx, rootfd, "f/g", "x", 1, 0644, -1,
				       -1, NF_ROOT_CREATE), NF_E_UNSAFE);
	unlink(p);
	snprintf(p, sizeof(p), "%s/f", root);
	unlink(p);
}

static void test_symlink_at_the_leaf_is_replaced(void **state)
{
	char p[PATH_MAX], target[PATH_MAX];
	struct stat st;

	(void)state;
	snprintf(target, sizeof(target), "%s/victim", outside);
	snprintf(p, sizeof(p), "%s/leaf", root);
	assert_int_equal(symlink(target, p), 0);
	assert_int_equal(nf_root_write(ctx, rootfd, "/leaf", "new", 3, 0640,
				       -1, -1, NF_ROOT_FSYNC), 0);
	assert_false(exists(outside, "victim"));
	assert_int_equal(lstat(p, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0640);
	assert_int_equal(st.st_size, 3);
	assert_int_equal(dotfiles(root), 0);
	unlink(p);
}

static void test_parents_made_0755_whatever_the_umask(void **state)
{
	char p[PATH_MAX];
	struct stat st;
	mode_t old = umask(077);
	char leaf[NAME_MAX + 1];
	int fd;

	(void)state;
	assert_int_equal(nf_root_write(ctx, rootfd, "/x/y/z.conf", "abc", 3,
				       0600, (long)getuid(), (long)getgid(),
				       NF_ROOT_CREATE | NF_ROOT_FSYNC), 0);
	umask(old);
	snprintf(p, sizeof(p), "%s/x/y", root);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0755);
	snprintf(p, sizeof(p), "%s/x/y/z.conf", root);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	snprintf(p, sizeof(p), "%s/x/y", root);
	assert_int_equal(dotfiles(p), 0);
	/* without NF_ROOT_CREATE a missing parent is -ENOENT */
	assert_int_equal(nf_root_parent(ctx, rootfd, "/x/none/f", 0, leaf,
					sizeof(leaf)), -ENOENT);
	fd = nf_root_parent(ctx, rootfd, "x/y/z.conf", 0, leaf, sizeof(leaf));
	assert_true(fd >= 0);
	assert_string_equal(leaf, "z.conf");
	close(fd);
	/* "" and "/" open the root itself */
	fd = nf_root_opendir(ctx, rootfd, "/", 0);
	assert_true(fd >= 0);
	assert_int_equal(faccessat(fd, "x/y/z.conf", F_OK, 0), 0);
	close(fd);
}

static void test_long_names_refused(void **state)
{
	char name[NAME_MAX + 10];

	(void)state;
	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	assert_int_equal(nf_root_write(ctx, rootfd, name, "x", 1, 0644, -1, -1,
				       0), NF_E_LIMIT);
	/* room for the temporary name is kept */
	name[NAME_MAX - 5] = '\0';
	assert_int_equal(nf_root_write(ctx, rootfd, name, "x", 1, 0644, -1, -1,
				       0), NF_E_LIMIT);
	assert_int_equal(dotfiles(root), 0);
}

/* Reading resolves every symlink inside the root, absolute ones too */
static void test_openat_root_resolves_inside(void **state)
{
	char p[PATH_MAX], buf[8] = "";
	int fd;

	(void)state;
	assert_int_equal(nf_root_write(ctx, rootfd, "/usr/lib/os-release",
				       "root", 4, 0644, -1, -1, NF_ROOT_CREATE),
			 0);
	snprintf(p, sizeof(p), "%s/lib", root);
	assert_int_equal(symlink("/usr/lib", p), 0);
	fd = nf_openat_root(rootfd, "/lib/os-release", O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, buf, sizeof(buf) - 1), 4);
	assert_string_equal(buf, "root");
	close(fd);
	/* the writer refuses the same symlink */
	assert_int_equal(nf_root_write(ctx, rootfd, "/lib/x", "x", 1, 0644, -1,
				       -1, NF_ROOT_CREATE), NF_E_UNSAFE);
	unlink(p);
}

/* The newest kernel by version order (10 after 9), with its initrd */
static void test_find_kernel(void **state)
{
	char k[PATH_MAX], i[PATH_MAX];

	(void)state;
	assert_int_equal(nf_root_find_kernel(ctx, rootfd, k, sizeof(k), i,
					     sizeof(i)), NF_E_NOTFOUND);
	assert_non_null(strstr(nf_errmsg(ctx), "the image has no kernel"));
	assert_int_equal(nf_root_write(ctx, rootfd, "/boot/vmlinuz-6.1.0-9-amd64",
				       "k", 1, 0644, -1, -1, NF_ROOT_CREATE), 0);
	assert_int_equal(nf_root_write(ctx, rootfd, "/boot/vmlinuz-6.1.0-10-amd64",
				       "k", 1, 0644, -1, -1, 0), 0);
	assert_int_equal(nf_root_write(ctx, rootfd, "/boot/initrd.img-6.1.0-9-amd64",
				       "i", 1, 0644, -1, -1, 0), 0);
	assert_int_equal(nf_root_find_kernel(ctx, rootfd, k, sizeof(k), i,
					     sizeof(i)), 0);
	assert_string_equal(k, "/boot/vmlinuz-6.1.0-10-amd64");
	assert_string_equal(i, "");
	assert_int_equal(nf_root_write(ctx, rootfd, "/boot/initramfs-6.1.0-10-amd64.img",
				       "i", 1, 0644, -1, -1, 0), 0);
	assert_int_equal(nf_root_find_kernel(ctx, rootfd, k, sizeof(k), i,
					     sizeof(i)), 0);
	assert_string_equal(i, "/boot/initramfs-6.1.0-10-amd64.img");
	assert_int_equal(nf_root_find_kernel(ctx, rootfd, k, sizeof(k), NULL,
					     0), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_components_refused_before_anything_is_made),
		cmocka_unit_test(test_symlinked_directory_is_not_followed),
		cmocka_unit_test(test_symlink_at_the_leaf_is_replaced),
		cmocka_unit_test(test_parents_made_0755_whatever_the_umask),
		cmocka_unit_test(test_long_names_refused),
		cmocka_unit_test(test_openat_root_resolves_inside),
		cmocka_unit_test(test_find_kernel),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
