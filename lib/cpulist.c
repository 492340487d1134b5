/* SPDX-License-Identifier: MIT */
/* CPU lists as the kernel writes them: "0-3,8,10-11". */
#include "internal.h"

#include <ctype.h>
#include <stdlib.h>

int nf_cpulist_parse(const char *s, uint8_t *bits, size_t nbits,
		     unsigned *maxcpu)
{
	unsigned max = 0;
	int any = 0;

	memset(bits, 0, (nbits + 7) / 8);
	while (*s && isspace((unsigned char)*s))
		s++;
	while (*s && *s != '\n') {
		unsigned long lo, hi;
		char *end;

		if (!isdigit((unsigned char)*s))
			return NF_E_PARSE;
		lo = strtoul(s, &end, 10);
		s = end;
		hi = lo;
		if (*s == '-') {
			s++;
			if (!isdigit((unsigned char)*s))
				return NF_E_PARSE;
			hi = strtoul(s, &end, 10);
			s = end;
		}
		if (hi < lo)
			return NF_E_PARSE;
		if (hi >= nbits)
			return NF_E_LIMIT;
		for (unsigned long i = lo; i <= hi; i++)
			bits[i / 8] |= (uint8_t)(1u << (i % 8));
		if (hi > max)
			max = (unsigned)hi;
		any = 1;
		if (*s == ',') {
			s++;
			if (!isdigit((unsigned char)*s))
				return NF_E_PARSE;
		} else if (*s && *s != '\n') {
			return NF_E_PARSE;
		}
	}
	if (maxcpu)
		*maxcpu = any ? max : 0;
	return any ? 0 : NF_E_PARSE;
}

char *nf_cpulist_format(const uint8_t *bits, size_t nbits)
{
	size_t cap = 64, len = 0;
	char *out = malloc(cap);

	if (!out)
		return NULL;
	out[0] = '\0';
	for (size_t i = 0; i < nbits; i++) {
		size_t j = i;
		char tmp[48];
		int w;

		if (!(bits[i / 8] & (1u << (i % 8))))
			continue;
		while (j + 1 < nbits && (bits[(j + 1) / 8] & (1u << ((j + 1) % 8))))
			j++;
		if (j == i)
			w = snprintf(tmp, sizeof(tmp), "%s%zu", len ? "," : "", i);
		else
			w = snprintf(tmp, sizeof(tmp), "%s%zu-%zu", len ? "," : "",
				     i, j);
		if (len + (size_t)w + 1 > cap) {
			char *n;

			cap = (len + (size_t)w + 1) * 2;
			if (!(n = realloc(out, cap))) {
				free(out);
				return NULL;
			}
			out = n;
		}
		memcpy(out + len, tmp, (size_t)w + 1);
		len += (size_t)w;
		i = j;
	}
	return out;
}

/* Slurm's Cores= counts cores, not CPUs: a hyperthread sibling folds onto
 * its core, whose id is the CPU's modulo the node's cores (Linux numbers
 * the first thread of every core before the second ones) */
int nf_cpulist_fold_cores(const char *cpulist, unsigned ncores,
			  uint8_t *cores, size_t nbits)
{
	uint8_t *cpus;
	int r;

	if (!ncores || ncores > nbits)
		return NF_E_USAGE;
	if (!(cpus = malloc((nbits + 7) / 8)))
		return -ENOMEM;
	if ((r = nf_cpulist_parse(cpulist, cpus, nbits, NULL)) == 0)
		for (size_t cpu = 0; cpu < nbits; cpu++)
			if (cpus[cpu / 8] & (1u << (cpu % 8))) {
				size_t core = cpu % ncores;

				cores[core / 8] |= (uint8_t)(1u << (core % 8));
			}
	free(cpus);
	return r;
}
