/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the safe unpacker on arbitrary archives, writing into
 * a scratch directory that is emptied after each input. */
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/*
 * libarchive's cpio reader reserves a read-ahead buffer as large as a
 * header's declared name size (newc: up to 4 GiB) before it finds the
 * input too short.  The reservation is virtual (nothing is written to it)
 * and released at once, but libFuzzer's malloc limit (= its 2 GiB RSS
 * limit) reports it as out-of-memory.  Raise the malloc limit only; the
 * RSS limit still catches real growth.
 */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static char *args[64];
	static char lim[] = "-malloc_limit_mb=8192";
	int n = *argc < 62 ? *argc : 62;

	memcpy(args, *argv, (size_t)n * sizeof(char *));
	args[n++] = lim;
	args[n] = NULL;
	*argc = n;
	*argv = args;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct nf_ctx *ctx;
	static char base[64];
	struct nf_unpack_opts o = { .max_size = 1 << 20, .max_entries = 1000 };
	int dfd;

	if (!ctx) {
		if (nf_ctx_new(&ctx))
			return 0;
		strcpy(base, "/tmp/nf-fuzz-unpack.XXXXXX");
		if (!mkdtemp(base))
			abort();
	}
	if (mkdirat(AT_FDCWD, base, 0700) < 0 && errno != EEXIST)
		return 0;
	dfd = open(base, O_RDONLY | O_DIRECTORY);
	if (dfd < 0)
		return 0;
	nf_unpack_mem(ctx, data, size, dfd, &o);
	close(dfd);
	nf_rm_tree_at(AT_FDCWD, base);
	return 0;
}
