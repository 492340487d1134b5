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

/* The profile's sysctl may set kernel.numa_balancing too, at boot:
 * against numa_balancing, memory.numa_balancing could never pass */
static void lint_numa_balancing(struct nf_facet_lint *l, const json_t *sec)
{
	const json_t *nb = json_object_get(sec, "numa_balancing");
	const json_t *sysctl = json_object_get(nf_profile_json(l->profile), "sysctl");
	static const char *const keys[] = { "kernel.numa_balancing", "kernel/numa_balancing" };

	if (!json_is_boolean(nb))
		return;
	for (size_t i = 0; i < NF_ARRAY_SIZE(keys); i++) {
		const json_t *v = json_object_get(sysctl, keys[i]);
		char val[32], *end;
		long long on;

		if (json_is_integer(v))
			snprintf(val, sizeof(val), "%lld", (long long)json_integer_value(v));
		else if (json_is_string(v))
			snprintf(val, sizeof(val), "%s", json_string_value(v));
		else
			continue;
		/* a value that is no number is sysctl's lint error */
		on = strtoll(val, &end, 10);
		if (end == val || *end)
			continue;
		if ((on != 0) != json_is_true(nb))
			nf_lint_at(l, "memory.numa_balancing", NF_SEV_ERROR,
				   "numa_balancing %s, but sysctl %s: %s turns it %s at boot",
				   json_is_true(nb) ? "true" : "false", keys[i], val,
				   on ? "on" : "off");
	}
}

static int lint(struct nf_facet_lint *l, const json_t *sec)
{
	const json_t *hp = json_object_get(sec, "hugepages");
	const json_t *node = json_object_get(
		json_object_get(nf_profile_json(l->profile), "slurm"), "node");
	json_int_t count, mem_mb;
	const char *size;

	lint_numa_balancing(l, sec);
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

/* ---- check: what the verifier checks (nodeforge verify) ---- */

static int check_hugepages(struct nf_vcheck *c, const json_t *sec)
{
	const json_t *hp = json_object_get(sec, "hugepages");
	const char *size = json_string_value(json_object_get(hp, "size"));
	json_int_t want = json_integer_value(json_object_get(hp, "count"));
	char path[128], *buf = NULL;
	int r;

	if (!hp)
		return nf_v_skip(c, "the profile sets no hugepages");
	snprintf(path, sizeof(path), "/sys/kernel/mm/hugepages/hugepages-%skB/nr_hugepages",
		 size && !strcmp(size, "2M") ? "2048" : "1048576");
	nf_v_expect(c, "%lld pages of %s", (long long)want, size ? size : "1G");
	if ((r = nf_v_read(c, NF_VSYS, path, 64, &buf, NULL))) {
		nf_v_seen(c, "no %s hugepage pool (%s)", size ? size : "1G", strerror(-r));
		nf_v_remedy(c, "add default_hugepagesz=%s hugepagesz=%s hugepages=%lld to the "
			    "kernel command line and reboot", size ? size : "1G",
			    size ? size : "1G", (long long)want);
		return NF_V_FAIL;
	}
	nf_v_seen(c, "%lld pages", strtoll(buf, NULL, 10));
	r = strtoll(buf, NULL, 10) == want;
	free(buf);
	if (r)
		return NF_V_PASS;
	nf_v_remedy(c, "echo %lld > %s   # then make it permanent with hugepages= on the "
		    "kernel command line", (long long)want, path);
	return NF_V_FAIL;
}

/* The bracketed choice of a sysfs "always madvise [never]" file */
static void bracketed(const char *s, char *out, size_t sz)
{
	const char *a = strchr(s, '['), *b = a ? strchr(a, ']') : NULL;

	if (a && b)
		snprintf(out, sz, "%.*s", (int)(b - a - 1), a + 1);
	else
		snprintf(out, sz, "%.*s", (int)strcspn(s, "\n"), s);
}

static int check_thp(struct nf_vcheck *c, const json_t *sec)
{
	const char *want = json_string_value(json_object_get(sec, "thp"));
	char *buf = NULL, cur[32];
	int r;

	if (!want)
		return nf_v_skip(c, "the profile sets no thp");
	nf_v_expect(c, "%s", want);
	if ((r = nf_v_read(c, NF_VSYS, "/sys/kernel/mm/transparent_hugepage/enabled",
			   256, &buf, NULL))) {
		nf_v_seen(c, "cannot read the THP setting: %s", strerror(-r));
		return NF_V_FAIL;
	}
	bracketed(buf, cur, sizeof(cur));
	free(buf);
	nf_v_seen(c, "%s", cur);
	if (!strcmp(cur, want))
		return NF_V_PASS;
	nf_v_remedy(c, "echo %s > /sys/kernel/mm/transparent_hugepage/enabled   # and "
		    "transparent_hugepage=%s on the kernel command line", want, want);
	return NF_V_FAIL;
}

static int check_numa_balancing(struct nf_vcheck *c, const json_t *sec)
{
	const json_t *w = json_object_get(sec, "numa_balancing");
	char *buf = NULL;
	long cur;

	if (!json_is_boolean(w))
		return nf_v_skip(c, "the profile does not set numa_balancing");
	nf_v_expect(c, "%d", json_is_true(w));
	if (nf_v_read(c, NF_VSYS, "/proc/sys/kernel/numa_balancing", 64, &buf, NULL))
		return nf_v_skip(c, "the kernel has no automatic NUMA balancing");
	cur = strtol(buf, NULL, 10);
	free(buf);
	nf_v_seen(c, "%ld", cur);
	if ((cur != 0) == json_is_true(w))
		return NF_V_PASS;
	nf_v_remedy(c, "sysctl -w kernel.numa_balancing=%d   # and kernel.numa_balancing "
		    "in the profile's sysctl", json_is_true(w));
	return NF_V_FAIL;
}

static const struct nf_check_def defs[] = {
	/* the pool and THP come from the kernel command line */
	{ "memory.hugepages", "the hugepage pool holds the profile's count", NULL, 0, 0,
	  check_hugepages, "kernel.cmdline.running",
	  .needs = "hugepage-memory" },
	{ "memory.thp", "transparent hugepages as the profile says", NULL, 0, 0, check_thp,
	  "kernel.cmdline.running" },
	{ "memory.numa_balancing", "automatic NUMA balancing as the profile says", NULL, 0, 0,
	  check_numa_balancing },
};

static const struct nf_checkset checks = NF_CHECKSET(defs);

/* ---- end of check ---- */

const struct nf_facet nf_facet_memory = {
	.name = "memory",
	.summary = "hugepages, transparent hugepages, NUMA balancing",
	.schema = fields,
	.lint = lint,
	.boot_args = boot_args,
	.checks = &checks,
};
