/* SPDX-License-Identifier: MIT */
/* The image's var/lib/dpkg/status (nodeforge ci --baseline) and the
 * StoragePass scan of the image's files, from arbitrary bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "internal/ci.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	json_t *pk;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = 0;
	pk = nf_ci_dpkg_packages(text);
	json_decref(pk);
	nf_ci_has_storagepass((const char *)data, size);
	free(text);
	return 0;
}
