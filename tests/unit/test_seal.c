/* SPDX-License-Identifier: MIT */
/* Sealed boxes: round trip, tampering, wrong key, wrong AAD, base64. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "internal.h"

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

static void test_roundtrip(void **state)
{
	uint8_t priv[32], pub[32], *blob, *pt;
	size_t bl, pl;
	const char msg[] = "the munge key";
	(void)state;

	assert_int_equal(nf_x25519_keypair(ctx, priv, pub), 0);
	assert_int_equal(nf_seal(ctx, pub, "aad", 3, msg, sizeof(msg), &blob,
				 &bl), 0);
	assert_int_equal(bl, sizeof(msg) + NF_SEAL_OVERHEAD);
	assert_null(memmem(blob, bl, msg, sizeof(msg) - 1));
	assert_int_equal(nf_seal_open(ctx, priv, "aad", 3, blob, bl, &pt, &pl),
			 0);
	assert_int_equal(pl, sizeof(msg));
	assert_memory_equal(pt, msg, sizeof(msg));
	nf_wipe_free(pt, pl + 1);
	free(blob);
}

static void test_empty_payload(void **state)
{
	uint8_t priv[32], pub[32], *blob, *pt;
	size_t bl, pl;
	(void)state;

	assert_int_equal(nf_x25519_keypair(ctx, priv, pub), 0);
	assert_int_equal(nf_seal(ctx, pub, NULL, 0, "", 0, &blob, &bl), 0);
	assert_int_equal(nf_seal_open(ctx, priv, NULL, 0, blob, bl, &pt, &pl),
			 0);
	assert_int_equal(pl, 0);
	nf_wipe_free(pt, 1);
	free(blob);
}

static void test_two_seals_differ(void **state)
{
	uint8_t priv[32], pub[32], *a, *b;
	size_t al, bl;
	(void)state;

	assert_int_equal(nf_x25519_keypair(ctx, priv, pub), 0);
	assert_int_equal(nf_seal(ctx, pub, "x", 1, "same", 4, &a, &al), 0);
	assert_int_equal(nf_seal(ctx, pub, "x", 1, "same", 4, &b, &bl), 0);
	assert_int_equal(al, bl);
	assert_memory_not_equal(a, b, al);
	free(a);
	free(b);
}

/* Flipping any single bit anywhere makes the box fail to open */
static void test_tamper_every_byte(void **state)
{
	uint8_t priv[32], pub[32], *blob, *pt;
	size_t bl, pl;
	(void)state;

	assert_int_equal(nf_x25519_keypair(ctx, priv, pub), 0);
	assert_int_equal(nf_seal(ctx, pub, "aad", 3, "secret!", 7, &blob, &bl),
			 0);
	for (size_t i = 0; i < bl; i++) {
		blob[i] ^= 0x01;
		assert_int_not_equal(nf_seal_open(ctx, priv, "aad", 3, blob, bl,
						  &pt, &pl), 0);
		blob[i] ^= 0x01;
	}
	/* truncated and extended */
	assert_int_not_equal(nf_seal_open(ctx, priv, "aad", 3, blob, bl - 1,
					  &pt, &pl), 0);
	assert_int_not_equal(nf_seal_open(ctx, priv, "aad", 3, blob, 10, &pt,
					  &pl), 0);
	assert_int_equal(nf_seal_open(ctx, priv, "aad", 3, blob, bl, &pt, &pl),
			 0);
	nf_wipe_free(pt, pl + 1);
	free(blob);
}

static void test_wrong_key_and_aad(void **state)
{
	uint8_t priv[32], pub[32], priv2[32], pub2[32], *blob, *pt;
	size_t bl, pl;
	(void)state;

	assert_int_equal(nf_x25519_keypair(ctx, priv, pub), 0);
	assert_int_equal(nf_x25519_keypair(ctx, priv2, pub2), 0);
	assert_int_equal(nf_seal(ctx, pub, "node-a", 6, "k", 1, &blob, &bl), 0);
	assert_int_equal(nf_seal_open(ctx, priv2, "node-a", 6, blob, bl, &pt,
				      &pl), NF_E_SIGNATURE);
	assert_non_null(strstr(nf_errmsg(ctx), "does not open"));
	assert_int_equal(nf_seal_open(ctx, priv, "node-b", 6, blob, bl, &pt,
				      &pl), NF_E_SIGNATURE);
	assert_int_equal(nf_seal_open(ctx, priv, "node-a", 5, blob, bl, &pt,
				      &pl), NF_E_SIGNATURE);
	free(blob);
}

/* A low-order public key (all zeros) is refused, not sealed to */
static void test_bad_public_key(void **state)
{
	uint8_t zero[32] = { 0 }, *blob = NULL;
	size_t bl;
	(void)state;

	assert_int_equal(nf_seal(ctx, zero, NULL, 0, "k", 1, &blob, &bl),
			 NF_E_INVALID);
	assert_null(blob);
}

static void test_base64(void **state)
{
	static const char *const bad[] = { "A", "AB=C", "A===", "AB$=",
					   "QUJD=", "====", "AB=A" };
	uint8_t *b;
	size_t n;
	char *s;
	(void)state;

	for (size_t len = 0; len < 8; len++) {
		uint8_t in[8] = { 0xff, 0, 1, 2, 0xfe, 3, 4, 5 };

		s = nf_b64_encode(in, len);
		assert_non_null(s);
		assert_int_equal(nf_b64_decode(s, 8, &b, &n), 0);
		assert_int_equal(n, len);
		assert_memory_equal(b, in, len);
		free(b);
		free(s);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_not_equal(nf_b64_decode(bad[i], 64, &b, &n), 0);
	assert_int_equal(nf_b64_decode("QUJDRA==", 3, &b, &n), NF_E_LIMIT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_empty_payload),
		cmocka_unit_test(test_two_seals_differ),
		cmocka_unit_test(test_tamper_every_byte),
		cmocka_unit_test(test_wrong_key_and_aad),
		cmocka_unit_test(test_bad_public_key),
		cmocka_unit_test(test_base64),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
