/* SPDX-License-Identifier: MIT */
/* The kernel command line parser: the kernel's quoting rules. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "internal.h"

static struct nf_cmdline *parse(const char *s)
{
	struct nf_cmdline *c = NULL;

	assert_int_equal(nf_cmdline_new(s, strlen(s), &c), 0);
	return c;
}

static void expect_arg(const struct nf_cmdline *c, size_t i, const char *key,
		       const char *val)
{
	assert_true(i < c->n);
	assert_string_equal(c->v[i].key, key);
	if (val)
		assert_string_equal(c->v[i].val, val);
	else
		assert_null(c->v[i].val);
}

static void test_split(void **state)
{
	struct nf_cmdline *c;

	(void)state;
	c = parse("  ro quiet\tconsole=ttyS0,115200n8\n");
	assert_int_equal(c->n, 3);
	expect_arg(c, 0, "ro", NULL);
	expect_arg(c, 1, "quiet", NULL);
	expect_arg(c, 2, "console", "ttyS0,115200n8");
	nf_cmdline_free(c);

	c = parse("");
	assert_int_equal(c->n, 0);
	nf_cmdline_free(c);
	c = parse(" \n\t ");
	assert_int_equal(c->n, 0);
	nf_cmdline_free(c);
}

/* k="a b": the quotes group the space into the value and are removed */
static void test_quotes(void **state)
{
	struct nf_cmdline *c;

	(void)state;
	c = parse("k=\"a b\" x \"m=c d\" \"flag with space\" dm-mod.create=\"v,,,ro,0 1 zero\" e=");
	assert_int_equal(c->n, 6);
	expect_arg(c, 0, "k", "a b");
	expect_arg(c, 1, "x", NULL);
	expect_arg(c, 2, "m", "c d");
	expect_arg(c, 3, "flag with space", NULL);
	expect_arg(c, 4, "dm-mod.create", "v,,,ro,0 1 zero");
	expect_arg(c, 5, "e", "");
	nf_cmdline_free(c);

	/* the first '=' ends the key; later ones belong to the value */
	c = parse("root=PARTUUID=ab-01 init=/bin/sh");
	expect_arg(c, 0, "root", "PARTUUID=ab-01");
	expect_arg(c, 1, "init", "/bin/sh");
	nf_cmdline_free(c);

	/* an unterminated quote runs to the end of the line */
	c = parse("a=\"b c d");
	assert_int_equal(c->n, 1);
	expect_arg(c, 0, "a", "b c d");
	nf_cmdline_free(c);
}

/* The kernel removes one pair of quotes: the one opening the parameter
 * or its value, with a quote closing the parameter; others stay */
static void test_kernel_quotes(void **state)
{
	struct nf_cmdline *c;

	(void)state;
	c = parse("k=a\"b c\" init=/bin/sh\"\" \"quiet\" k=\"\" k=\"a\"b\"\" \"k\"=v");
	assert_int_equal(c->n, 6);
	expect_arg(c, 0, "k", "a\"b c\"");
	expect_arg(c, 1, "init", "/bin/sh\"\"");
	expect_arg(c, 2, "quiet", NULL);
	expect_arg(c, 3, "k", "");
	expect_arg(c, 4, "k", "a\"b\"");
	expect_arg(c, 5, "k\"", "v");
	nf_cmdline_free(c);

	/* an unterminated quote: its opening quote goes, the rest stays one */
	c = parse("x \"k=a b\t");
	assert_int_equal(c->n, 2);
	expect_arg(c, 1, "k", "a b\t");
	nf_cmdline_free(c);

	/* a leading '=' is part of the key: "=x" has no value */
	c = parse("=x =a=b \"=c\"");
	assert_int_equal(c->n, 3);
	expect_arg(c, 0, "=x", NULL);
	expect_arg(c, 1, "=a", "b");
	expect_arg(c, 2, "=c", NULL);
	nf_cmdline_free(c);
}

/* A bare `--` ends the kernel's parameters: the rest is init's */
static void test_dashdash(void **state)
{
	struct nf_cmdline *c;

	(void)state;
	c = parse("ro quiet -- single hugepages=16 nodeforge.node=x\n");
	assert_int_equal(c->n, 2);
	expect_arg(c, 1, "quiet", NULL);
	assert_null(nf_cmdline_value(c, "hugepages"));
	assert_false(nf_cmdline_has(c, "hugepages=16"));
	assert_false(nf_cmdline_has(c, "single"));
	nf_cmdline_free(c);

	c = parse("a \"--\" b");
	assert_int_equal(c->n, 1);
	nf_cmdline_free(c);

	/* not bare: parameters like any other */
	c = parse("--=1 a-- --x b");
	assert_int_equal(c->n, 4);
	expect_arg(c, 0, "--", "1");
	expect_arg(c, 3, "b", NULL);
	nf_cmdline_free(c);
	assert_false(nf_cmdline_has(NULL, "--"));
}

/* The kernel's white space: \t to \r, space and 0xa0; /proc/cmdline ends
 * with a newline */
static void test_kernel_space(void **state)
{
	struct nf_cmdline *c;

	(void)state;
	c = parse("ro\t\tquiet  \v\fk=\r\xa0x\xa0\"a\xa0" "b\"\n\n");
	assert_int_equal(c->n, 5);
	expect_arg(c, 0, "ro", NULL);
	expect_arg(c, 1, "quiet", NULL);
	expect_arg(c, 2, "k", "");
	expect_arg(c, 3, "x", NULL);
	expect_arg(c, 4, "a\xa0" "b", NULL);
	nf_cmdline_free(c);
}

/* '-' and '_' are one character in a parameter's name */
static void test_name_dash(void **state)
{
	struct nf_cmdline *c;

	(void)state;
	c = parse("rcu-nocbs=1-3 nvidia_drm.modeset=1 a_b");
	assert_true(nf_cmdline_has(c, "rcu_nocbs=1-3"));
	assert_false(nf_cmdline_has(c, "rcu_nocbs=1_3"));
	assert_true(nf_cmdline_has(c, "nvidia-drm.modeset=1"));
	assert_true(nf_cmdline_has(c, "a-b"));
	assert_false(nf_cmdline_has(c, "a.b"));
	assert_string_equal(nf_cmdline_value(c, "rcu_nocbs"), "1-3");
	nf_cmdline_free(c);
}

static void test_value_and_has(void **state)
{
	struct nf_cmdline *c;

	(void)state;
	c = parse("nodeforge.server=http://a nodeforge.server nodeforge.node=\"n 1\" "
		  "hugepages=16 hugepages=32 quiet");
	/* the last KEY=VALUE wins; a bare KEY is not one */
	assert_string_equal(nf_cmdline_value(c, "nodeforge.server"), "http://a");
	assert_string_equal(nf_cmdline_value(c, "nodeforge.node"), "n 1");
	assert_string_equal(nf_cmdline_value(c, "hugepages"), "32");
	assert_null(nf_cmdline_value(c, "quiet"));
	assert_null(nf_cmdline_value(c, "nodeforge"));
	assert_true(nf_cmdline_has(c, "hugepages=16"));
	assert_true(nf_cmdline_has(c, "nodeforge.node=\"n 1\""));
	assert_true(nf_cmdline_has(c, "\"nodeforge.node=n 1\""));
	assert_true(nf_cmdline_has(c, "quiet"));
	assert_false(nf_cmdline_has(c, "quiet=1"));
	assert_false(nf_cmdline_has(c, "hugepages"));
	assert_false(nf_cmdline_has(c, "hugepages=1"));
	assert_false(nf_cmdline_has(c, "nodeforge.node=n"));
	assert_false(nf_cmdline_has(c, "n"));
	nf_cmdline_free(c);
}

static void test_format_roundtrip(void **state)
{
	struct nf_cmdline *c, *d;
	char w[64];

	(void)state;
	c = parse("k=\"a b\" q x=1");
	nf_karg_format(&c->v[0], w, sizeof(w));
	assert_string_equal(w, "k=\"a b\"");
	d = parse(w);
	expect_arg(d, 0, "k", "a b");
	nf_cmdline_free(d);
	nf_karg_format(&c->v[1], w, sizeof(w));
	assert_string_equal(w, "q");
	nf_cmdline_free(c);

	/* a value that starts with a quote is quoted, or it loses it */
	c = parse("k=\"\"a\"\" x=a\"b");
	expect_arg(c, 0, "k", "\"a\"");
	nf_karg_format(&c->v[0], w, sizeof(w));
	assert_string_equal(w, "k=\"\"a\"\"");
	assert_true(nf_cmdline_has(c, w));
	nf_karg_format(&c->v[1], w, sizeof(w));
	assert_string_equal(w, "x=a\"b");
	assert_true(nf_cmdline_has(c, w));
	nf_cmdline_free(c);
}

static void test_kargs_key(void **state)
{
	char k[8];

	(void)state;
	assert_int_equal(nf_kargs_key("hugepages=16", k, sizeof(k)), NF_E_LIMIT);
	assert_int_equal(nf_kargs_key("hp=16", k, sizeof(k)), 1);
	assert_string_equal(k, "hp");
	assert_int_equal(nf_kargs_key("quiet", k, sizeof(k)), 0);
	assert_string_equal(k, "quiet");
	assert_int_equal(nf_kargs_key("k=\"a b\"", k, sizeof(k)), 1);
	assert_string_equal(k, "k");
	assert_int_equal(nf_kargs_key("a b", k, sizeof(k)), NF_E_INVALID);
}

static void test_limits(void **state)
{
	struct nf_cmdline *c = NULL;
	size_t n = 70 * 1024;
	char *big = malloc(n + 1);

	(void)state;
	assert_non_null(big);
	memset(big, 'a', n);
	big[n] = '\0';
	assert_int_equal(nf_cmdline_new(big, n, &c), NF_E_LIMIT);
	/* 4097 one-letter parameters */
	for (size_t i = 0; i < 4097; i++) {
		big[2 * i] = 'x';
		big[2 * i + 1] = ' ';
	}
	big[2 * 4097] = '\0';
	assert_int_equal(nf_cmdline_new(big, strlen(big), &c), NF_E_LIMIT);
	/* a NUL ends the text, as it ends /proc/cmdline */
	assert_int_equal(nf_cmdline_new("a\0b", 3, &c), 0);
	assert_int_equal(c->n, 1);
	nf_cmdline_free(c);
	free(big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_split),
		cmocka_unit_test(test_quotes),
		cmocka_unit_test(test_kernel_quotes),
		cmocka_unit_test(test_dashdash),
		cmocka_unit_test(test_kernel_space),
		cmocka_unit_test(test_name_dash),
		cmocka_unit_test(test_value_and_has),
		cmocka_unit_test(test_format_roundtrip),
		cmocka_unit_test(test_kargs_key),
		cmocka_unit_test(test_limits),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
