/* SPDX-License-Identifier: MIT */
/* Fuzz the kernel command line parser: every parameter it returns is
 * found again by key and by its written form. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nf_cmdline *c;
	char w[512];

	if (nf_cmdline_new((const char *)data, size, &c))
		return 0;
	for (size_t i = 0; i < c->n; i++) {
		const struct nf_karg *a = &c->v[i];

		if (strchr(a->key, '"') || (a->val && strchr(a->val, '"')))
			abort();
		if (a->val && !nf_cmdline_value(c, a->key))
			abort();
		nf_karg_format(a, w, sizeof(w));
		/* a written form that fits, parsed again, is the same
		 * parameter (a key with a space or '=' has no such form) */
		if (strlen(w) < sizeof(w) - 1 && !strpbrk(a->key, " \t\n\v\f\r=") &&
		    *a->key && !nf_cmdline_has(c, w))
			abort();
	}
	nf_cmdline_free(c);
	return 0;
}
