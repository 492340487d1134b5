/* SPDX-License-Identifier: MIT */
/*
 * Fuzz the refusal log's reader: refusals.log as found in the enrollment
 * state directory (one JSON object a line; anything else is skipped).
 */
#include <stdint.h>
#include <stdlib.h>

#include "enroll_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *arr = json_array();
	size_t n, i;
	json_t *v;

	if (!arr)
		return 0;
	n = nf_en_refusals_parse((const char *)data, size, arr);
	if (n != json_array_size(arr))
		abort();
	json_array_foreach(arr, i, v)
		if (!json_is_object(v))
			abort();
	json_decref(arr);
	return 0;
}
