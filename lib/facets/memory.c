/* SPDX-License-Identifier: MIT */
/* memory: explicit hugepages, transparent hugepages, NUMA balancing. */
#include "internal.h"

static const struct nf_field hugepages[] = {
	{ "size", NF_T_STR, .choices = (const char *const[]){ "2M", "1G", NULL } },
	{ "count", NF_T_INT, .required = true },
	{ 0 }
};

static const struct nf_field fields[] = {
	{ "hugepages", NF_T_OBJ, hugepages },
	{ "thp", NF_T_STR, .choices = (const char *const[]){ "never", "madvise", "always", NULL } },
	{ "numa_balancing", NF_T_BOOL },
	{ 0 }
};

static int boot_args(const json_t *sec, json_t *args)
{
	const json_t *hp = json_object_get(sec, "hugepages");
	const char *thp = json_string_value(json_object_get(sec, "thp"));
	const json_t *nb = json_object_get(sec, "numa_balancing");

	if (hp) {
		const char *size = json_string_value(json_object_get(hp, "size"));

		if (!size)
			size = "1G";
		json_array_append_new(args, json_sprintf("default_hugepagesz=%s", size));
		json_array_append_new(args, json_sprintf("hugepagesz=%s", size));
		json_array_append_new(args, json_sprintf("hugepages=%lld",
			(long long)json_integer_value(json_object_get(hp, "count"))));
	}
	if (thp)
		json_array_append_new(args, json_sprintf("transparent_hugepage=%s", thp));
	if (json_is_false(nb))
		json_array_append_new(args, json_string("numa_balancing=disable"));
	return 0;
}

static int lint(struct nf_facet_lint *l, const json_t *sec)
{
	const json_t *hp = json_object_get(sec, "hugepages");
	const json_t *node = json_object_get(
		json_object_get(nf_profile_json(l->profile), "slurm"), "node");
	json_int_t count, mem_mb;
	const char *size;

	if (!hp)
		return 0;
	count = json_integer_value(json_object_get(hp, "count"));
	size = json_string_value(json_object_get(hp, "size"));
	if (count < 0)
		nf_lint_at(l, "memory.hugepages.count", NF_SEV_ERROR,
			   "hugepages count %lld is negative", (long long)count);
	mem_mb = json_integer_value(json_object_get(node, "real_memory_mb"));
	if (mem_mb > 0) {
		long long hp_mb = (long long)count * (size && !strcmp(size, "2M") ? 2 : 1024);

		/* hugepages are taken out of RAM at boot: Slurm must not hand
		 * that memory to jobs as RealMemory */
		if (hp_mb >= mem_mb)
			nf_lint_at(l, "memory.hugepages.count", NF_SEV_ERROR,
				   "%lld hugepages of %s (%lld MiB) do not fit below "
				   "slurm.node.real_memory_mb (%lld MiB)", (long long)count,
				   size ? size : "1G", hp_mb, (long long)mem_mb);
	}
	return 0;
}

/* ---- apply: what the image build writes (nodeforge build) ---- */

/* ---- end of apply ---- */

/* ---- check: what the verifier checks (nodeforge verify) ---- */

/* ---- end of check ---- */

const struct nf_facet nf_facet_memory = {
	.name = "memory",
	.summary = "hugepages, transparent hugepages, NUMA balancing",
	.apply = NULL,
	.schema = fields,
	.lint = lint,
	.boot_args = boot_args,
	.checks = NULL,
};
