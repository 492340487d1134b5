/* SPDX-License-Identifier: MIT */
/*
 * kernel: the kernel command line.  `args` are literal; `isolate_cpus`
 * expands to isolcpus/nohz_full/rcu_nocbs so the three never disagree.
 */
#include "internal.h"

#include <stdlib.h>

static const struct nf_field fields[] = {
	{ "args", NF_T_STRLIST },
	{ "isolate_cpus", NF_T_STR },
	{ 0 }
};

static int boot_args(const json_t *sec, json_t *args)
{
	const char *mask = json_string_value(json_object_get(sec, "isolate_cpus"));
	size_t i;
	json_t *a;

	json_array_foreach(json_object_get(sec, "args"), i, a)
		json_array_append(args, a);
	if (mask && *mask) {
		/* isolcpus takes flags, then the list, comma-separated */
		json_array_append_new(args, json_sprintf("isolcpus=nohz,domain,%s", mask));
		json_array_append_new(args, json_sprintf("nohz_full=%s", mask));
		json_array_append_new(args, json_sprintf("rcu_nocbs=%s", mask));
	}
	return 0;
}

static int lint(struct nf_facet_lint *l, const json_t *sec)
{
	const json_t *node = json_object_get(
		json_object_get(nf_profile_json(l->profile), "slurm"), "node");
	const char *mask = json_string_value(json_object_get(sec, "isolate_cpus"));
	size_t i;
	json_t *a;

	json_array_foreach(json_object_get(sec, "args"), i, a) {
		const char *s = json_string_value(a);
		char path[64];

		snprintf(path, sizeof(path), "kernel.args[%zu]", i);
		if (s && (!*s || strpbrk(s, " \t\n\"'")))
			nf_lint_at(l, path, NF_SEV_ERROR,
				   "kernel argument '%s' must be one word", s);
		if (s && (!strncmp(s, "isolcpus=", 9) ||
			  !strncmp(s, "nohz_full=", 10) ||
			  !strncmp(s, "rcu_nocbs=", 10)))
			nf_lint_at(l, path, NF_SEV_WARNING,
				   "'%s': set kernel.isolate_cpus instead, so "
				   "isolcpus, nohz_full and rcu_nocbs agree", s);
	}
	if (mask && *mask) {
		uint8_t bits[8192 / 8];
		unsigned max = 0;

		if (nf_cpulist_parse(mask, bits, sizeof(bits) * 8, &max)) {
			nf_lint_at(l, "kernel.isolate_cpus", NF_SEV_ERROR,
				   "'%s' is not a CPU list such as 1-31,33-63",
				   mask);
		} else if (node) {
			json_int_t cpus =
				json_integer_value(json_object_get(node, "sockets")) *
				json_integer_value(json_object_get(node, "cores_per_socket")) *
				json_integer_value(json_object_get(node, "threads_per_core"));

			if (cpus > 0 && max >= cpus)
				nf_lint_at(l, "kernel.isolate_cpus", NF_SEV_ERROR,
					   "isolate_cpus '%s' names CPU %u but the node has "
					   "%lld CPUs (0-%lld)", mask, max,
					   (long long)cpus, (long long)cpus - 1);
			if (cpus > 0 && (bits[0] & 1))
				nf_lint_at(l, "kernel.isolate_cpus", NF_SEV_WARNING,
					   "isolate_cpus '%s' isolates CPU 0: leave "
					   "housekeeping CPUs for the OS and slurmd", mask);
		}
	}
	return 0;
}

/* ---- apply: what the image build writes (nodeforge build) ---- */

/* ---- end of apply ---- */

/* ---- check: what the verifier checks (nodeforge verify) ---- */

/* ---- end of check ---- */

const struct nf_facet nf_facet_kernel = {
	.name = "kernel",
	.summary = "kernel command line (GRUB, /etc/kernel/cmdline, boot artifacts)",
	.apply = NULL,
	.schema = fields,
	.lint = lint,
	.boot_args = boot_args,
	.checks = NULL,
};
