/* SPDX-License-Identifier: MIT */
/* What a command says of a failure: its own message, never an older one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "internal.h"

/* A library call that handles an optional file's absence and then fails
 * with a bare 'return -errno', as 212 paths of the library do */
static int optional_then_bare(struct nf_ctx *ctx)
{
	char *buf;

	if (nf_read_file(ctx, "/nonexistent/nodeforge-optional", 1024, &buf, NULL) == 0)
		free(buf);
	return -EACCES;
}

static void test_stale_message(void **state)
{
	struct nf_ctx *ctx;
	int r;

	(void)state;
	assert_int_equal(nf_ctx_new(&ctx), 0);
	r = optional_then_bare(ctx);
	/* the context still holds the handled failure's message: this is
	 * what 'nodeforge CMD: ...' printed for the EACCES */
	assert_non_null(strstr(nf_errmsg(ctx), "nodeforge-optional"));
	assert_string_equal(nf_error_text(ctx, r), nf_strerror(-EACCES));
	nf_ctx_free(ctx);
}

static void test_own_message(void **state)
{
	struct nf_ctx *ctx;
	char *buf;
	int r;

	(void)state;
	assert_int_equal(nf_ctx_new(&ctx), 0);
	r = nf_read_file(ctx, "/nonexistent/nodeforge-needed", 1024, &buf, NULL);
	assert_int_equal(r, -ENOENT);
	assert_non_null(strstr(nf_error_text(ctx, r), "cannot read '/nonexistent/nodeforge-needed'"));
	r = nf_fail(ctx, NF_E_INVALID, "bad value 'x'");
	assert_string_equal(nf_error_text(ctx, r), "bad value 'x'");
	nf_clear_error(ctx);
	assert_string_equal(nf_error_text(ctx, r), nf_strerror(NF_E_INVALID));
	assert_string_equal(nf_error_text(NULL, -ENOENT), nf_strerror(-ENOENT));
	nf_ctx_free(ctx);
}

/* A handled failure's message goes; the one before the mark (the failure
 * being reported while a cleanup probes) stays */
static void test_handled_drop(void **state)
{
	struct nf_ctx *ctx;
	unsigned m;
	char *buf;
	int r;

	(void)state;
	assert_int_equal(nf_ctx_new(&ctx), 0);
	m = nf_err_mark(ctx);
	r = nf_read_file(ctx, "/nonexistent/nodeforge-optional", 1024, &buf, NULL);
	assert_int_equal(r, -ENOENT);
	assert_true(nf_err_since(ctx, m));
	nf_err_drop(ctx, m);
	assert_false(nf_err_since(ctx, m));
	assert_string_equal(nf_error_text(ctx, -ENOENT), nf_strerror(-ENOENT));

	r = nf_fail(ctx, NF_E_INVALID, "bad value 'x'");
	m = nf_err_mark(ctx);
	assert_int_equal(nf_read_file(ctx, "/nonexistent/nodeforge-optional", 1024,
				      &buf, NULL), -ENOENT);
	nf_err_drop(ctx, m);
	assert_string_equal(nf_error_text(ctx, r), "bad value 'x'");
	/* nothing recorded since the mark: nothing to drop */
	m = nf_err_mark(ctx);
	nf_err_drop(ctx, m);
	assert_string_equal(nf_error_text(ctx, r), "bad value 'x'");
	nf_ctx_free(ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stale_message),
		cmocka_unit_test(test_own_message),
		cmocka_unit_test(test_handled_drop),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
