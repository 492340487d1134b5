/* SPDX-License-Identifier: MIT */
/* The one directory walker (lib/walk.c): its order, its depth limit, no
 * symlink followed, errors handed to the caller; and tree removal
 * (nf_rm_tree_at), which walks with it. */
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
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "internal.h"
#include "internal/pack.h"

static struct nf_ctx *ctx;
static char top[64];

static int setup(void **state)
{
	(void)state;
	snprintf(top, sizeof(top), "/tmp/nf-walk-XXXXXX");
	return mkdtemp(top) && nf_ctx_new(&ctx) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	nf_ctx_free(ctx);
	snprintf(cmd, sizeof(cmd), "chmod -R u+rwx %s; rm -rf %s", top, top);
	return system(cmd) == 0 ? 0 : -1;
}

/* A fresh tree SUB under the top, made by the shell commands CMDS run in
 * it; its path into DIR */
static void tree(const char *sub, const char *cmds, char *dir, size_t sz)
{
	char cmd[8192];

	snprintf(dir, sz, "%s/%s", top, sub);
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s' && cd '%s' && %s", dir, dir,
		 cmds);
	assert_int_equal(system(cmd), 0);
}

/* what the callbacks saw, in order (the deep trees' paths need room) */
static char seen[1 << 20];

struct log {
	const char *stop;     /* enter() returns 42 here */
	const char *skip;     /* enter() returns NF_WALK_SKIP here */
	int errors, go_on;
	char err_rel[PATH_MAX];
	int err;
};

static void logf_(const char *fmt, ...)
{
	size_t n = strlen(seen);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(seen + n, sizeof(seen) - n, fmt, ap);
	va_end(ap);
	assert_true(strlen(seen) < sizeof(seen) - 1);
}

static int log_enter(void *data, const struct nf_walk_entry *e)
{
	struct log *l = data;
	const mode_t m = e->st->st_mode;

	logf_("%s%c ", e->rel, S_ISDIR(m) ? '/' : S_ISLNK(m) ? '@' : '.');
	if (l->stop && !strcmp(e->rel, l->stop))
		return 42;
	if (l->skip && !strcmp(e->rel, l->skip))
		return NF_WALK_SKIP;
	return 0;
}

static int log_leave(void *data, const struct nf_walk_entry *e)
{
	(void)data;
	logf_("<%s ", e->rel);
	return 0;
}

static int log_error(void *data, const struct nf_walk_entry *e, int err,
		     const char *why)
{
	struct log *l = data;

	logf_("!%s ", e->rel);
	if (!l->errors++) {
		snprintf(l->err_rel, sizeof(l->err_rel), "%s", e->rel);
		l->err = err;
	}
	assert_non_null(why);
	assert_non_null(strstr(nf_errmsg(ctx), e->path));
	return l->go_on ? 0 : err;
}

static const struct nf_walk_ops enter_only = { .enter = log_enter };
static const struct nf_walk_ops all_ops = { .enter = log_enter,
					    .leave = log_leave,
					    .error = log_error };

/* Bytewise order, a directory's entries right after it ("a", "a/b",
 * "a-c"), whatever order the directory lists them in */
static void test_order(void **state)
{
	char dir[PATH_MAX];
	struct log l = { 0 };

	(void)state;
	tree("order", "mkdir -p b/c a a-c && touch B b/c/f a/b a-c/x a.b",
	     dir, sizeof(dir));
	seen[0] = '\0';
	assert_int_equal(nf_walk_tree(ctx, dir, &enter_only, &l), 0);
	assert_string_equal(seen, "B. a/ a/b. a-c/ a-c/x. a.b. b/ b/c/ "
			    "b/c/f. ");
}

/* leave() comes after what a directory holds, for every directory */
static void test_post_order(void **state)
{
	char dir[PATH_MAX];
	struct log l = { 0 };

	(void)state;
	tree("post", "mkdir -p a/b e && touch a/b/f z", dir, sizeof(dir));
	seen[0] = '\0';
	assert_int_equal(nf_walk_tree(ctx, dir, &all_ops, &l), 0);
	assert_string_equal(seen, "a/ a/b/ a/b/f. <a/b <a e/ <e z. ");
}

/* what enter() returns: 42 stops the walk and is returned, NF_WALK_SKIP
 * leaves a directory's content out and walks on */
static void test_stop_and_skip(void **state)
{
	char dir[PATH_MAX];
	struct log l = { .stop = "c" };

	(void)state;
	tree("stop", "mkdir -p a/x && touch a/x/f b c d", dir, sizeof(dir));
	seen[0] = '\0';
	assert_int_equal(nf_walk_tree(ctx, dir, &enter_only, &l), 42);
	assert_string_equal(seen, "a/ a/x/ a/x/f. b. c. ");
	l = (struct log){ .skip = "a" };
	seen[0] = '\0';
	assert_int_equal(nf_walk_tree(ctx, dir, &enter_only, &l), 0);
	assert_string_equal(seen, "a/ b. c. d. ");
	assert_int_equal(nf_walk_tree(ctx, "/nonexistent-nf", &enter_only, &l),
			 -ENOENT);
}

/* A symlink is an entry, never followed: not to a directory inside the
 * tree, not out of it; the top shown as "" gives paths equal to rel */
static void test_symlinks_not_followed(void **state)
{
	char dir[PATH_MAX], out[PATH_MAX], cmd[PATH_MAX + 128];
	struct log l = { 0 };
	int fd;

	(void)state;
	tree("outside", "mkdir -p secret && touch secret/f", out, sizeof(out));
	snprintf(cmd, sizeof(cmd), "ln -s '%s' out && ln -s / root && "
		 "mkdir d && touch d/f && ln -s d in", out);
	tree("links", cmd, dir, sizeof(dir));
	fd = open(dir, O_RDONLY | O_DIRECTORY);
	assert_true(fd >= 0);
	seen[0] = '\0';
	assert_int_equal(nf_walk_fd(ctx, fd, "", &enter_only, &l), 0);
	close(fd);
	assert_string_equal(seen, "d/ d/f. in@ out@ root@ ");
}

/* NF_WALK_DEPTH directories below the top are walked; one deeper is an
 * error, with its path: it stops a walk without an error callback, and
 * with one, the walk goes on past it */
static void test_depth_limit(void **state)
{
	char dir[PATH_MAX], cmd[4096] = "d=.; i=0; while [ $i -lt ";
	struct log l = { 0 };
	const char *slash;
	int k;

	(void)state;
	snprintf(cmd + strlen(cmd), sizeof(cmd) - strlen(cmd), "%d ]; do "
		 "i=$((i+1)); d=$d/$i; done; mkdir -p $d && touch $d/f z",
		 NF_WALK_DEPTH);
	tree("deep", cmd, dir, sizeof(dir));
	/* NF_WALK_DEPTH directories deep, holding a file: all walked */
	seen[0] = '\0';
	assert_int_equal(nf_walk_tree(ctx, dir, &enter_only, &l), 0);
	assert_non_null(strstr(seen, "/256/f. z. "));

	/* one more directory: too deep, even empty */
	snprintf(cmd, sizeof(cmd), "mkdir $(find . -name f -printf '%%h')/x");
	tree("deep", cmd, dir, sizeof(dir));
	l = (struct log){ 0 };
	seen[0] = '\0';
	assert_int_equal(nf_walk_tree(ctx, dir, &enter_only, &l), NF_E_LIMIT);
	assert_non_null(strstr(nf_errmsg(ctx), "/255/256/x': nested deeper "
			       "than 256 directories"));
	assert_null(strstr(seen, "z. "));

	l = (struct log){ .go_on = 1 };
	seen[0] = '\0';
	assert_int_equal(nf_walk_tree(ctx, dir, &all_ops, &l), 0);
	assert_int_equal(l.errors, 1);
	assert_int_equal(l.err, NF_E_LIMIT);
	for (k = 0, slash = l.err_rel; (slash = strchr(slash, '/')); slash++)
		k++;
	assert_int_equal(k + 1, NF_WALK_DEPTH + 1);
	assert_non_null(strstr(seen, "!1/2/3/"));
	assert_non_null(strstr(seen, "<1 z. "));   /* and it went on */
}

/* A directory that cannot be opened goes to the error callback, named;
 * the walk goes on when it says so.  Root reads any mode, so the opens
 * fail here for want of file descriptors. */
static void test_error_callback(void **state)
{
	char dir[PATH_MAX];
	struct log l = { .go_on = 1 };
	struct rlimit old, low;
	int fd, r;

	(void)state;
	tree("err", "mkdir -p a/1/2/3/4/5/6/7/8/9/10/11/12 && touch z", dir,
	     sizeof(dir));
	assert_true((fd = dup(0)) >= 0);
	close(fd);
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	low = old;
	low.rlim_cur = (rlim_t)fd + 6;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	seen[0] = '\0';
	r = nf_walk_tree(ctx, dir, &all_ops, &l);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	assert_int_equal(r, 0);
	assert_int_equal(l.errors, 1);
	assert_int_equal(l.err, -EMFILE);
	assert_int_equal(strncmp(l.err_rel, "a/1", 3), 0);
	assert_non_null(strstr(seen, "<a z. "));

	/* without the callback the first error stops the walk */
	l = (struct log){ 0 };
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	seen[0] = '\0';
	r = nf_walk_tree(ctx, dir, &enter_only, &l);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	assert_int_equal(r, -EMFILE);
	assert_non_null(strstr(nf_errmsg(ctx), "cannot read '"));
	assert_null(strstr(seen, "z. "));
}

/* Removal: the whole tree, whatever its modes; what a symlink in it
 * points to stays */
static void test_rm_tree(void **state)
{
	char dir[PATH_MAX], out[PATH_MAX], f[PATH_MAX + 16];
	char cmd[PATH_MAX + 128];
	struct stat st;

	(void)state;
	tree("keep", "touch f", out, sizeof(out));
	snprintf(cmd, sizeof(cmd), "mkdir -p a/b c && touch a/b/f c/g && "
		 "ln -s '%s' c/out && chmod 0 a/b && chmod 0555 c a", out);
	tree("rm", cmd, dir, sizeof(dir));
	assert_int_equal(nf_rm_tree_at(AT_FDCWD, dir), 0);
	assert_int_equal(lstat(dir, &st), -1);
	snprintf(f, sizeof(f), "%s/f", out);
	assert_int_equal(lstat(f, &st), 0);
	assert_int_equal(nf_rm_tree_at(AT_FDCWD, dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order),
		cmocka_unit_test(test_post_order),
		cmocka_unit_test(test_stop_and_skip),
		cmocka_unit_test(test_symlinks_not_followed),
		cmocka_unit_test(test_depth_limit),
		cmocka_unit_test(test_error_callback),
		cmocka_unit_test(test_rm_tree),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
