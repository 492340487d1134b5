/* SPDX-License-Identifier: MIT */
/* libFuzzer target: nf_elf_interp on any bytes.  A path it returns lies
 * inside the input and fits the buffer. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char out[64];
	uint8_t *b = malloc(size ? size : 1);

	if (!b)
		return 0;
	memcpy(b, data, size);
	if (nf_elf_interp(b, size, out, sizeof(out)) == 1 &&
	    (strlen(out) >= sizeof(out) || !memmem(b, size, out, strlen(out))))
		abort();
	free(b);
	return 0;
}
