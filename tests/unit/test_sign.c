/* SPDX-License-Identifier: MIT */
/* Detached Ed25519 signatures in memory (lib/adapters/crypto.c), as
 * `cluster fetch` checks the boot tree's cluster files: the right key
 * and bytes pass; a changed byte, another key, a malformed signature or
 * no usable public key never do. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "internal.h"

static struct nf_ctx *ctx;
static char dir[] = "/tmp/nf-test-sign.XXXXXX";
static char key[64], pub[64], okey[64], opub[64];

static const char conf[] = "# Written by nodeforge\nSlurmctldHost=ctl-01(10.0.0.2)\n";

static int setup(void **state)
{
	char d[80];

	(void)state;
	if (nf_ctx_new(&ctx) || !mkdtemp(dir))
		return -1;
	snprintf(d, sizeof(d), "%s/a", dir);
	snprintf(key, sizeof(key), "%s/signing.key", d);
	snprintf(pub, sizeof(pub), "%s/signing.pub", d);
	if (nf_keys_signing(ctx, d))
		return -1;
	snprintf(d, sizeof(d), "%s/b", dir);
	snprintf(okey, sizeof(okey), "%s/signing.key", d);
	snprintf(opub, sizeof(opub), "%s/signing.pub", d);
	return nf_keys_signing(ctx, d);
}

static int teardown(void **state)
{
	(void)state;
	nf_rm_tree_at(AT_FDCWD, dir);
	nf_ctx_free(ctx);
	return 0;
}

static int check(const void *buf, size_t len, const char *sig, const char *pk)
{
	return nf_sig_check(ctx, "slurm.conf", buf, len, "slurm.conf.sig", sig,
			    strlen(sig), pk);
}

static void test_roundtrip(void **state)
{
	char line[NF_SIG_LINE + 1];
	(void)state;

	assert_int_equal(nf_sign_buf(ctx, "c", conf, strlen(conf), key, line), 0);
	assert_int_equal(strlen(line), NF_SIG_LINE - 1);
	assert_int_equal(strncmp(line, "ed25519 ", 8), 0);
	assert_int_equal(line[NF_SIG_LINE - 2], '\n');
	assert_int_equal(check(conf, strlen(conf), line, pub), 0);
	/* without its newline, or with CRLF, the same signature */
	line[NF_SIG_LINE - 2] = '\0';
	assert_int_equal(check(conf, strlen(conf), line, pub), 0);
	strcat(line, "\r\n");
	assert_int_equal(check(conf, strlen(conf), line, pub), 0);
}

static void test_tampered_bytes(void **state)
{
	char line[NF_SIG_LINE], buf[sizeof(conf)];
	(void)state;

	assert_int_equal(nf_sign_buf(ctx, "c", conf, strlen(conf), key, line), 0);
	for (size_t i = 0; i < strlen(conf); i++) {
		memcpy(buf, conf, sizeof(conf));
		buf[i] ^= 0x20;
		assert_int_equal(check(buf, strlen(conf), line, pub),
				 NF_E_SIGNATURE);
		assert_non_null(strstr(nf_errmsg(ctx), "signature of 'slurm.conf' "
					 "does not verify with"));
	}
	/* the last byte cut */
	assert_int_equal(check(conf, strlen(conf) - 1, line, pub), NF_E_SIGNATURE);
	/* every hex digit of the signature */
	for (size_t i = 8; i < 8 + 128; i++) {
		char bad[NF_SIG_LINE];

		memcpy(bad, line, sizeof(bad));
		bad[i] = bad[i] == '0' ? '1' : '0';
		assert_int_equal(check(conf, strlen(conf), bad, pub),
				 NF_E_SIGNATURE);
	}
}

static void test_other_key(void **state)
{
	char line[NF_SIG_LINE];
	(void)state;

	assert_int_equal(nf_sign_buf(ctx, "c", conf, strlen(conf), okey, line), 0);
	assert_int_equal(check(conf, strlen(conf), line, pub), NF_E_SIGNATURE);
	assert_int_equal(check(conf, strlen(conf), line, opub), 0);
}

static void test_malformed(void **state)
{
	static const char *const bad[] = {
		"", "\n", "ed25519", "ed25519 ", "ed25519 00",
		"rsa 0000", "ED25519 ", "ed25519  ",
	};
	char line[NF_SIG_LINE], s[NF_SIG_LINE + 8];
	(void)state;

	for (size_t i = 0; i < NF_ARRAY_SIZE(bad); i++) {
		assert_int_equal(check(conf, strlen(conf), bad[i], pub),
				 NF_E_SIGNATURE);
		assert_non_null(strstr(nf_errmsg(ctx), "'slurm.conf.sig' is not "
					 "an ed25519 signature"));
	}
	assert_int_equal(nf_sign_buf(ctx, "c", conf, strlen(conf), key, line), 0);
	/* upper-case hex, a digit too many, a character after it */
	memcpy(s, line, sizeof(line));
	s[8] = s[8] >= 'a' ? (char)(s[8] - 32) : 'G';
	assert_int_equal(check(conf, strlen(conf), s, pub), NF_E_SIGNATURE);
	snprintf(s, sizeof(s), "%.*s0\n", NF_SIG_LINE - 2, line);
	assert_int_equal(check(conf, strlen(conf), s, pub), NF_E_SIGNATURE);
	snprintf(s, sizeof(s), "%.*s x", NF_SIG_LINE - 2, line);
	assert_int_equal(check(conf, strlen(conf), s, pub), NF_E_SIGNATURE);
	/* a NUL inside the text */
	memcpy(s, line, sizeof(line));
	s[20] = '\0';
	assert_int_equal(nf_sig_check(ctx, "c", conf, strlen(conf), "c.sig", s,
				      NF_SIG_LINE - 1, pub), NF_E_SIGNATURE);
}

static void test_no_usable_key(void **state)
{
	char line[NF_SIG_LINE], missing[80];
	(void)state;

	assert_int_equal(nf_sign_buf(ctx, "c", conf, strlen(conf), key, line), 0);
	snprintf(missing, sizeof(missing), "%s/none.pub", dir);
	assert_int_not_equal(check(conf, strlen(conf), line, missing), 0);
	/* a private key is not a public one */
	assert_int_not_equal(check(conf, strlen(conf), line, key), 0);
	/* nor signs with a public key */
	assert_int_not_equal(nf_sign_buf(ctx, "c", conf, 1, pub, line), 0);
}

static void test_public_pem(void **state)
{
	char *pem = NULL, *want = NULL;
	size_t len = 0, wlen = 0;
	(void)state;

	assert_int_equal(nf_public_pem(ctx, key, &pem, &len), 0);
	assert_int_equal(nf_read_file(ctx, pub, 1 << 16, &want, &wlen), 0);
	assert_int_equal(len, wlen);
	assert_memory_equal(pem, want, len);
	assert_int_equal(strlen(pem), len);
	free(pem);
	free(want);
	assert_int_not_equal(nf_public_pem(ctx, pub, &pem, &len), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_tampered_bytes),
		cmocka_unit_test(test_other_key),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_no_usable_key),
		cmocka_unit_test(test_public_pem),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
