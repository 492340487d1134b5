/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the boot server's request parsers (path, Range header,
 * verdict JSON).  The first byte picks the parser. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s;
	uint64_t off, len;

	if (size < 1 || size > 70000)
		return 0;
	s = malloc(size);
	if (!s)
		return 0;
	memcpy(s, data + 1, size - 1);
	s[size - 1] = '\0';
	switch (data[0] % 3) {
	case 0:
		nf_http_safe_path(s);
		break;
	case 1:
		if (nf_http_parse_range(s, 1000, &off, &len) == 0 &&
		    (len == 0 || off + len > 1000))
			abort();
		nf_http_parse_range(s, 0, &off, &len);
		break;
	default: {
		json_t *v = json_loadb(s, size - 1, 0, NULL);

		char buf[256];

		nf_verdict_check(v, "gpu-01", buf, sizeof(buf));
		json_decref(v);
	}
	}
	free(s);
	return 0;
}
