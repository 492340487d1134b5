/* SPDX-License-Identifier: MIT */
/*
 * Fuzz the check `cluster fetch` runs on a boot server's answer: a
 * detached signature's text (the first NF_SIG_LINE bytes of the input, or
 * all of it when shorter) over the rest, with a fixed public key.  The
 * seeds hold a valid signature over a cluster.conf, so the fuzzer also
 * reaches the verification itself.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

static const char pem[] =
	"-----BEGIN PUBLIC KEY-----\n"
	"MCowBQYDK2VwAyEAvAgm7uwMZtI00lILD5eM/LmBEfdsLim9gFKOoTLpE8c=\n"
	"-----END PUBLIC KEY-----\n";

static char pub[64];

static void remove_pub(void)
{
	unlink(pub);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct nf_ctx *ctx;
	size_t slen = size < NF_SIG_LINE - 1 ? size : NF_SIG_LINE - 1;
	char sig[NF_SIG_LINE];

	if (!ctx) {
		FILE *f;

		snprintf(pub, sizeof(pub), "/tmp/nf-fuzz-sig.%d.pub", (int)getpid());
		if (nf_ctx_new(&ctx) || !(f = fopen(pub, "w")) ||
		    fputs(pem, f) < 0 || fclose(f))
			abort();
		atexit(remove_pub);
	}
	memcpy(sig, data, slen);
	sig[slen] = '\0';
	if (!nf_sig_check(ctx, "slurm.conf", data + slen, size - slen,
			  "slurm.conf.sig", sig, slen, pub) &&
	    size - slen < 2)
		abort();       /* nothing this short was signed */
	return 0;
}
