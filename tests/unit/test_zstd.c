/* SPDX-License-Identifier: MIT */
/* The zstd stream: the same bytes whatever the worker count and however
 * the input is cut, a frame zstd decodes, and a failing output that stops
 * the stream without hanging. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <zstd.h>

#include "internal.h"

/* Enough for several zstd jobs at level 1 (a job is a few MiB there) */
#define INPUT (12u << 20)

struct sink {
	unsigned char *buf;
	size_t len, cap;
	size_t fail_after;  /* fail once this many bytes came (0: never) */
};

static int sink_write(void *data, const void *buf, size_t len)
{
	struct sink *s = data;

	if (s->fail_after && s->len + len > s->fail_after)
		return -EIO;
	if (s->len + len > s->cap) {
		s->cap = (s->len + len) * 2;
		s->buf = realloc(s->buf, s->cap);
		assert_non_null(s->buf);
	}
	memcpy(s->buf + s->len, buf, len);
	s->len += len;
	return 0;
}

/* Half noise, half text: compressible enough that the jobs' content
 * matters, random enough that they are not trivial */
static unsigned char *make_input(void)
{
	unsigned char *in = malloc(INPUT);
	uint64_t x = 0x9E3779B97F4A7C15ULL;

	assert_non_null(in);
	for (size_t i = 0; i < INPUT; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		in[i] = (i / 4096) % 2 ? (unsigned char)x
				       : (unsigned char)("nodeforge pack "[i % 15]);
	}
	return in;
}

/* Compress `in` with `threads` workers, `chunk` bytes per call; with
 * in_place, through nf_zstd_buffer() */
static void compress(const unsigned char *in, int threads, size_t chunk,
		     int in_place, struct sink *out)
{
	struct nf_ctx *ctx = NULL;
	struct nf_zstd *z;
	size_t off = 0;

	assert_int_equal(nf_ctx_new(&ctx), 0);
	memset(out, 0, sizeof(*out));
	assert_int_equal(nf_zstd_new(ctx, 1, threads, sink_write, out, &z), 0);
	while (off < INPUT) {
		size_t n = INPUT - off < chunk ? INPUT - off : chunk;

		if (in_place) {
			size_t room;
			unsigned char *b = nf_zstd_buffer(z, &room);

			assert_true(room > 0);
			if (n > room)
				n = room;
			memcpy(b, in + off, n);
			assert_int_equal(nf_zstd_write(z, b, n), 0);
		} else {
			assert_int_equal(nf_zstd_write(z, in + off, n), 0);
		}
		off += n;
	}
	assert_int_equal(nf_zstd_close(z), 0);
	nf_ctx_free(ctx);
}

static void test_same_bytes_any_threads(void **state)
{
	unsigned char *in = make_input(), *back;
	struct sink a, b, c, d;

	(void)state;
	compress(in, 1, 1 << 20, 0, &a);
	compress(in, 2, 512, 0, &b);
	compress(in, 4, 3 << 20, 0, &c);
	compress(in, 3, 100000, 1, &d);
	assert_true(a.len > 0 && a.len < INPUT);
	assert_int_equal(a.len, b.len);
	assert_int_equal(a.len, c.len);
	assert_int_equal(a.len, d.len);
	assert_memory_equal(a.buf, b.buf, a.len);
	assert_memory_equal(a.buf, c.buf, a.len);
	assert_memory_equal(a.buf, d.buf, a.len);

	/* One frame that zstd decodes back to the input */
	back = malloc(INPUT);
	assert_non_null(back);
	assert_int_equal(ZSTD_decompress(back, INPUT, a.buf, a.len), INPUT);
	assert_memory_equal(back, in, INPUT);
	free(back);
	free(a.buf);
	free(b.buf);
	free(c.buf);
	free(d.buf);
	free(in);
}

static void test_output_failure_stops(void **state)
{
	unsigned char *in = make_input();
	struct sink s = { .fail_after = 1 };
	struct nf_ctx *ctx = NULL;
	struct nf_zstd *z;
	size_t off = 0;
	int r = 0;

	(void)state;
	assert_int_equal(nf_ctx_new(&ctx), 0);
	assert_int_equal(nf_zstd_new(ctx, 1, 2, sink_write, &s, &z), 0);
	/* The failure reaches the writer while it writes, or at close */
	while (off < INPUT && !r) {
		r = nf_zstd_write(z, in + off, 65536);
		off += 65536;
	}
	if (!r)
		r = nf_zstd_close(z);
	else
		nf_zstd_free(z);
	assert_int_equal(r, -EIO);
	nf_ctx_free(ctx);
	free(s.buf);
	free(in);
}

static void test_free_without_close(void **state)
{
	unsigned char *in = make_input();
	struct sink s;
	struct nf_ctx *ctx = NULL;
	struct nf_zstd *z;

	(void)state;
	memset(&s, 0, sizeof(s));
	assert_int_equal(nf_ctx_new(&ctx), 0);
	assert_int_equal(nf_zstd_new(ctx, 3, 2, sink_write, &s, &z), 0);
	assert_int_equal(nf_zstd_write(z, in, INPUT / 2), 0);
	nf_zstd_free(z);   /* stops the thread, ends no frame */
	nf_ctx_free(ctx);
	free(s.buf);
	free(in);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_bytes_any_threads),
		cmocka_unit_test(test_output_failure_stops),
		cmocka_unit_test(test_free_without_close),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
