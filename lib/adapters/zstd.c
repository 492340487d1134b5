/* SPDX-License-Identifier: MIT */
/*
 * libzstd adapter: the only file that sees libzstd's types and its
 * ZSTD_isError() convention.
 *
 * The stream is always compressed in zstd's multi-threaded mode (at least
 * one worker): its output is the same for every worker count >= 1, while
 * the single-threaded mode (0 workers) cuts blocks differently, so the
 * thread count never changes the bytes.  The level's own parameters are
 * kept (window, no long-distance matching, no content checksum: the
 * manifest's sha256 covers the archive), except the job size (see
 * nf_zstd_new()).
 *
 * libzstd's calls run in a thread of their own, fed through a ring of
 * slots: reading, hashing and formatting the stream in the caller's thread
 * overlap with handing it to zstd's workers, hashing and writing the
 * compressed output.
 */
#include "internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>
/* for ZSTD_getCParams(): the window of a level */
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>

/* The stream is handed to the compressing thread in slots: small enough
 * that the writer and the compressor take turns often, enough of them to
 * absorb a file that takes long to read */
#define NF_ZSTD_SLOT (256 * 1024)
#define NF_ZSTD_SLOTS 16

struct nf_zstd {
	struct nf_ctx *ctx;
	ZSTD_CCtx *cc;
	nf_awrite_fn fn;
	void *data;
	void *out;
	size_t outsz;

	/* Ring of slots: [tail, head) are full, waiting for the thread */
	pthread_t thread;
	int started;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	char *slot[NF_ZSTD_SLOTS];
	size_t used[NF_ZSTD_SLOTS];
	unsigned head, tail;   /* counters, index modulo NF_ZSTD_SLOTS */
	size_t fill;           /* bytes in slot[head] not yet handed over */
	int ending;            /* no more input: end the frame */
	int cancel;            /* stop without ending the frame */
	int done;              /* the thread has stopped */
	int err;               /* the thread's failure */
	size_t zerr;           /* libzstd's error code, for the message */
};

static int zs_run(struct nf_zstd *z, const void *buf, size_t len,
		  ZSTD_EndDirective mode)
{
	ZSTD_inBuffer in = { buf, len, 0 };

	for (;;) {
		ZSTD_outBuffer o = { z->out, z->outsz, 0 };
		size_t left = ZSTD_compressStream2(z->cc, &o, &in, mode);
		int r;

		if (ZSTD_isError(left)) {
			z->zerr = left;
			return NF_E_EXTERNAL;
		}
		if (o.pos && (r = z->fn(z->data, z->out, o.pos)))
			return r;
		if (mode == ZSTD_e_end ? left == 0 : in.pos == in.size)
			return 0;
	}
}

/* The compressing thread: libzstd's calls, its own workers and the output
 * callback run here, while the caller goes on producing the stream */
static void *zs_thread(void *arg)
{
	struct nf_zstd *z = arg;
	int r = 0;

	pthread_mutex_lock(&z->lock);
	for (;;) {
		while (z->tail == z->head && !z->ending && !z->cancel)
			pthread_cond_wait(&z->cond, &z->lock);
		if (z->cancel)
			goto out;
		if (z->tail == z->head)
			break;
		pthread_mutex_unlock(&z->lock);
		r = zs_run(z, z->slot[z->tail % NF_ZSTD_SLOTS],
			   z->used[z->tail % NF_ZSTD_SLOTS], ZSTD_e_continue);
		pthread_mutex_lock(&z->lock);
		z->tail++;
		if (r)
			goto out;
		pthread_cond_broadcast(&z->cond);
	}
	pthread_mutex_unlock(&z->lock);
	r = zs_run(z, NULL, 0, ZSTD_e_end);
	pthread_mutex_lock(&z->lock);
out:
	z->err = r;
	z->done = 1;
	pthread_cond_broadcast(&z->cond);
	pthread_mutex_unlock(&z->lock);
	return NULL;
}

/* The thread's failure as the caller's error (called by the caller only:
 * the message is recorded in its thread) */
static int zs_err(struct nf_zstd *z, int r)
{
	if (r == NF_E_EXTERNAL && z->zerr)
		return nf_fail(z->ctx, NF_E_EXTERNAL, "cannot compress the "
			       "archive: %s", ZSTD_getErrorName(z->zerr));
	return r;
}

int nf_zstd_new(struct nf_ctx *ctx, int level, int threads, nf_awrite_fn fn,
		void *data, struct nf_zstd **out)
{
	struct nf_zstd *z = calloc(1, sizeof(*z));
	ZSTD_compressionParameters cp;
	size_t e;
	int r;

	if (!z)
		return -ENOMEM;
	z->ctx = ctx;
	z->fn = fn;
	z->data = data;
	pthread_mutex_init(&z->lock, NULL);
	pthread_cond_init(&z->cond, NULL);
	z->outsz = ZSTD_CStreamOutSize();
	z->out = malloc(z->outsz);
	z->cc = ZSTD_createCCtx();
	if (!z->out || !z->cc) {
		nf_zstd_free(z);
		return -ENOMEM;
	}
	for (int i = 0; i < NF_ZSTD_SLOTS; i++) {
		if (!(z->slot[i] = malloc(NF_ZSTD_SLOT))) {
			nf_zstd_free(z);
			return -ENOMEM;
		}
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
	/* Jobs half again as large as zstd's default (4 windows): fewer cuts
	 * where a job starts without its predecessor's history */
	cp = ZSTD_getCParams(level, 0, 0);
	if (ZSTD_isError(e = ZSTD_CCtx_setParameter(z->cc,
			ZSTD_c_compressionLevel, level)) ||
	    ZSTD_isError(e = ZSTD_CCtx_setParameter(z->cc,
			ZSTD_c_jobSize, 3 << (cp.windowLog + 1)))) {
		nf_zstd_free(z);
		return nf_fail(ctx, NF_E_EXTERNAL, "cannot set up the zstd "
			       "compressor: %s", ZSTD_getErrorName(e));
	}
	z->started = 1;
	if ((r = pthread_create(&z->thread, NULL, zs_thread, z))) {
		z->started = 0;
		nf_zstd_free(z);
		return nf_fail(ctx, -r, "cannot start the compressing thread: %s",
			       strerror(r));
	}
	*out = z;
	return 0;
}

/* Hand the filled slot over; wait for a free one.  Returns the thread's
 * error, if any. */
static int zs_push(struct nf_zstd *z)
{
	int r;

	pthread_mutex_lock(&z->lock);
	z->used[z->head % NF_ZSTD_SLOTS] = z->fill;
	z->head++;
	z->fill = 0;
	pthread_cond_broadcast(&z->cond);
	while (z->head - z->tail >= NF_ZSTD_SLOTS && !z->done)
		pthread_cond_wait(&z->cond, &z->lock);
	r = z->err;
	pthread_mutex_unlock(&z->lock);
	return r;
}

void *nf_zstd_buffer(struct nf_zstd *z, size_t *len)
{
	*len = NF_ZSTD_SLOT - z->fill;
	return z->slot[z->head % NF_ZSTD_SLOTS] + z->fill;
}

int nf_zstd_write(struct nf_zstd *z, const void *buf, size_t len)
{
	const char *b = buf;
	int r;

	/* Already in place: written into nf_zstd_buffer()'s room */
	if (b == z->slot[z->head % NF_ZSTD_SLOTS] + z->fill &&
	    len <= NF_ZSTD_SLOT - z->fill) {
		z->fill += len;
		if (z->fill == NF_ZSTD_SLOT && (r = zs_push(z)))
			return zs_err(z, r);
		return 0;
	}
	while (len > 0) {
		size_t n = NF_ZSTD_SLOT - z->fill;

		if (n > len)
			n = len;
		memcpy(z->slot[z->head % NF_ZSTD_SLOTS] + z->fill, b, n);
		z->fill += n;
		b += n;
		len -= n;
		if (z->fill == NF_ZSTD_SLOT && (r = zs_push(z)))
			return zs_err(z, r);
	}
	return 0;
}

/* Stop the thread, after ending the frame (end = 1) or at once */
static int zs_stop(struct nf_zstd *z, int end)
{
	int r;

	if (!z->started)
		return 0;
	pthread_mutex_lock(&z->lock);
	if (end && z->fill) {
		z->used[z->head % NF_ZSTD_SLOTS] = z->fill;
		z->head++;
		z->fill = 0;
	}
	if (end)
		z->ending = 1;
	else
		z->cancel = 1;
	pthread_cond_broadcast(&z->cond);
	pthread_mutex_unlock(&z->lock);
	pthread_join(z->thread, NULL);
	z->started = 0;
	r = z->err;
	return r;
}

int nf_zstd_close(struct nf_zstd *z)
{
	int r = zs_stop(z, 1);

	if (r)
		r = zs_err(z, r);
	nf_zstd_free(z);
	return r;
}

void nf_zstd_free(struct nf_zstd *z)
{
	if (!z)
		return;
	zs_stop(z, 0);
	ZSTD_freeCCtx(z->cc);
	for (int i = 0; i < NF_ZSTD_SLOTS; i++)
		free(z->slot[i]);
	free(z->out);
	pthread_cond_destroy(&z->cond);
	pthread_mutex_destroy(&z->lock);
	free(z);
}
