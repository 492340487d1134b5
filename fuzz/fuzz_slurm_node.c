/* SPDX-License-Identifier: MIT */
/* Fuzz the `scontrol show node -o` line parser: a parsed line names its
 * node and state, every field fits its buffer, and the state's words are
 * found again. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nf_slurm_node n;
	char word[128];
	size_t k;

	if (nf_slurm_node_parse((const char *)data, size, &n))
		return 0;
	if (!*n.name || !*n.state || strlen(n.name) >= sizeof(n.name) ||
	    strlen(n.state) >= sizeof(n.state) ||
	    strlen(n.reason) >= sizeof(n.reason))
		abort();
	/* the base state, up to the first '+' and without the flag marks
	 * after it ("IDLE*"), is one of its words */
	k = strcspn(n.state, "+");
	while (k && strchr("*~#$@!%", n.state[k - 1]))
		k--;
	if (k && k < sizeof(word)) {
		memcpy(word, n.state, k);
		word[k] = '\0';
		if (!nf_slurm_state_has(n.state, word))
			abort();
	}
	return 0;
}
