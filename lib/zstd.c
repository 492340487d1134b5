/* SPDX-License-Identifier: MIT */
/*
 * libzstd adapter: the only file that sees libzstd's types and its
 * ZSTD_isError() convention.
 *
 * The stream is always compressed in zstd's multi-threaded mode (at least
 * one worker): its output is the same for every worker count >= 1, while
 * the single-threaded mode (0 workers) cuts blocks differently, so the
 * thread count never changes the bytes.  Frame parameters follow the zstd
 * command line (content checksum on, no long-distance matching, the
 * level's own window), with one difference: each job reloads a quarter
 * of the window (overlapLog 8) instead of an eighth, which wins back most
 * of what cutting the input into parallel jobs costs in ratio for a few
 * per cent of CPU time.
 */
#include "internal.h"

#include <stdlib.h>
#include <unistd.h>
#include <zstd.h>

#define NF_ZSTD_OVERLAP_LOG 8

struct nf_zstd {
	struct nf_ctx *ctx;
	ZSTD_CCtx *cc;
	nf_awrite_fn fn;
	void *data;
	void *out;
	size_t outsz;
};

static int zs_fail(struct nf_zstd *z, size_t code, const char *what)
{
	return nf_fail(z->ctx, NF_E_EXTERNAL, "cannot %s: %s", what,
		       ZSTD_getErrorName(code));
}

int nf_zstd_new(struct nf_ctx *ctx, int level, int threads, nf_awrite_fn fn,
		void *data, struct nf_zstd **out)
{
	struct nf_zstd *z = calloc(1, sizeof(*z));
	size_t e;

	if (!z)
		return -ENOMEM;
	z->ctx = ctx;
	z->fn = fn;
	z->data = data;
	z->outsz = ZSTD_CStreamOutSize();
	z->out = malloc(z->outsz);
	z->cc = ZSTD_createCCtx();
	if (!z->out || !z->cc) {
		nf_zstd_free(z);
		return -ENOMEM;
	}
	if (threads <= 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		threads = n > 0 ? (int)n : 1;
	}
	if (threads > 64)
		threads = 64;
	e = ZSTD_CCtx_setParameter(z->cc, ZSTD_c_nbWorkers, threads);
	if (ZSTD_isError(e)) {
		nf_zstd_free(z);
		return nf_fail(ctx, NF_E_UNSUPPORTED,
			       "cannot compress with zstd: this libzstd has no "
			       "multi-threaded mode (%s), and its single-threaded "
			       "output differs", ZSTD_getErrorName(e));
	}
	if (ZSTD_isError(e = ZSTD_CCtx_setParameter(z->cc,
			ZSTD_c_compressionLevel, level)) ||
	    ZSTD_isError(e = ZSTD_CCtx_setParameter(z->cc,
			ZSTD_c_checksumFlag, 1)) ||
	    ZSTD_isError(e = ZSTD_CCtx_setParameter(z->cc,
			ZSTD_c_overlapLog, NF_ZSTD_OVERLAP_LOG))) {
		int r = zs_fail(z, e, "set up the zstd compressor");

		nf_zstd_free(z);
		return r;
	}
	*out = z;
	return 0;
}

static int zs_run(struct nf_zstd *z, const void *buf, size_t len,
		  ZSTD_EndDirective mode)
{
	ZSTD_inBuffer in = { buf, len, 0 };

	for (;;) {
		ZSTD_outBuffer o = { z->out, z->outsz, 0 };
		size_t left = ZSTD_compressStream2(z->cc, &o, &in, mode);
		int r;

		if (ZSTD_isError(left))
			return zs_fail(z, left, "compress the archive");
		if (o.pos && (r = z->fn(z->data, z->out, o.pos)))
			return r;
		if (mode == ZSTD_e_end ? left == 0 : in.pos == in.size)
			return 0;
	}
}

int nf_zstd_write(struct nf_zstd *z, const void *buf, size_t len)
{
	return len ? zs_run(z, buf, len, ZSTD_e_continue) : 0;
}

int nf_zstd_close(struct nf_zstd *z)
{
	int r = zs_run(z, NULL, 0, ZSTD_e_end);

	nf_zstd_free(z);
	return r;
}

void nf_zstd_free(struct nf_zstd *z)
{
	if (!z)
		return;
	ZSTD_freeCCtx(z->cc);
	free(z->out);
	free(z);
}
