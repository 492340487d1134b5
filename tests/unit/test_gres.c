/* SPDX-License-Identifier: MIT */
/* gres render: topology -> gres.conf lines, the parsers, the merge. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "internal.h"
#include "internal/gres.h"

static struct nf_ctx *ctx;

static int setup(void **s)
{
	(void)s;
	return nf_ctx_new(&ctx);
}

static int teardown(void **s)
{
	(void)s;
	nf_ctx_free(ctx);
	return 0;
}

static const char *const bus8[] = {
	"0000:18:00.0", "0000:2a:00.0", "0000:3a:00.0", "0000:5d:00.0",
	"0000:9a:00.0", "0000:ab:00.0", "0000:ba:00.0", "0000:db:00.0",
};

/* 8 GPUs on 2 sockets x 64 cores x 2 threads: 4 per NUMA node */
static struct nf_gres_topo *topo8(void)
{
	struct nf_gres_topo *t = calloc(1, sizeof(*t));

	assert_non_null(t);
	t->n = 8;
	for (int i = 0; i < 8; i++) {
		t->gpu[i].minor = i;
		snprintf(t->gpu[i].bus_id, sizeof(t->gpu[i].bus_id), "%s", bus8[i]);
		snprintf(t->gpu[i].cpulist, sizeof(t->gpu[i].cpulist), "%s",
			 i < 4 ? "0-63,128-191" : "64-127,192-255");
	}
	return t;
}

/* An NVML snapshot: GPU i's links go to remotes[i] (a JSON list) */
static json_t *snapshot(size_t n, const char *(*remote)(size_t i))
{
	json_t *gpus = json_array();

	for (size_t i = 0; i < n; i++) {
		json_error_t err;
		json_t *l = json_loads(remote(i), 0, &err);

		assert_non_null(l);
		/* NVML's own spelling: 8-digit domain, upper case */
		char id[32];

		snprintf(id, sizeof(id), "0000%s", bus8[i]);
		for (char *p = id; *p; p++)
			if (*p >= 'a' && *p <= 'f')
				*p = (char)(*p - 'a' + 'A');
		json_array_append_new(gpus, json_pack("{s:s, s:o}", "pci_bus_id", id,
						      "nvlink_remote", l));
	}
	return json_pack("{s:s, s:o}", "driver_version", "550.90.07", "gpus", gpus);
}

/* HGX H100: 18 links per GPU, 5/4/4/5 to four NVSwitches */
static const char *hgx(size_t i)
{
	(void)i;
	return "[\"00000000:05:00.0\",\"00000000:05:00.0\",\"00000000:05:00.0\","
	       "\"00000000:05:00.0\",\"00000000:05:00.0\",\"00000000:06:00.0\","
	       "\"00000000:06:00.0\",\"00000000:06:00.0\",\"00000000:06:00.0\","
	       "\"00000000:07:00.0\",\"00000000:07:00.0\",\"00000000:07:00.0\","
	       "\"00000000:07:00.0\",\"00000000:08:00.0\",\"00000000:08:00.0\","
	       "\"00000000:08:00.0\",\"00000000:08:00.0\",\"00000000:08:00.0\"]";
}

static const char *none(size_t i)
{
	(void)i;
	return "[]";
}

static json_t *entry(const char *json)
{
	json_error_t err;
	json_t *e = json_loads(json, 0, &err);

	assert_non_null(e);
	return e;
}

static char *lines(const struct nf_gres_topo *t, const char *ej,
		   unsigned ncores, int nvlink_required, int *rc)
{
	struct nf_buf b = { 0 };
	json_t *e = entry(ej);

	*rc = nf_gres_entry_lines(ctx, e, t, ncores, nvlink_required, &b);
	json_decref(e);
	if (*rc) {
		nf_buf_free(&b);
		return NULL;
	}
	return b.s ? b.s : strdup("");
}

#define AUTO "{\"name\":\"gpu\",\"type\":\"h100\",\"count\":8," \
	     "\"file\":\"/dev/nvidia[0-7]\",\"cores\":\"auto\",\"links\":\"auto\"}"

static void test_nvswitch_8gpu_2socket(void **s)
{
	struct nf_gres_topo *t = topo8();
	json_t *snap = snapshot(8, hgx);
	char *out;
	int rc;

	(void)s;
	assert_int_equal(nf_gres_topo_links(ctx, t, snap), 0);
	assert_true(t->nvlink_known);
	out = lines(t, AUTO, 128, 1, &rc);
	assert_int_equal(rc, 0);
	assert_string_equal(out,
		"Name=gpu Type=h100 File=/dev/nvidia0 Cores=0-63 Links=-1,18,18,18,18,18,18,18\n"
		"Name=gpu Type=h100 File=/dev/nvidia1 Cores=0-63 Links=18,-1,18,18,18,18,18,18\n"
		"Name=gpu Type=h100 File=/dev/nvidia2 Cores=0-63 Links=18,18,-1,18,18,18,18,18\n"
		"Name=gpu Type=h100 File=/dev/nvidia3 Cores=0-63 Links=18,18,18,-1,18,18,18,18\n"
		"Name=gpu Type=h100 File=/dev/nvidia4 Cores=64-127 Links=18,18,18,18,-1,18,18,18\n"
		"Name=gpu Type=h100 File=/dev/nvidia5 Cores=64-127 Links=18,18,18,18,18,-1,18,18\n"
		"Name=gpu Type=h100 File=/dev/nvidia6 Cores=64-127 Links=18,18,18,18,18,18,-1,18\n"
		"Name=gpu Type=h100 File=/dev/nvidia7 Cores=64-127 Links=18,18,18,18,18,18,18,-1\n");
	free(out);
	json_decref(snap);
	free(t);
}

static void test_pcie_only_links_omitted(void **s)
{
	struct nf_gres_topo *t = topo8();
	json_t *snap = snapshot(8, none);
	char *out;
	int rc;

	(void)s;
	t->n = 4;
	json_array_remove(json_object_get(snap, "gpus"), 7);
	json_array_remove(json_object_get(snap, "gpus"), 6);
	json_array_remove(json_object_get(snap, "gpus"), 5);
	json_array_remove(json_object_get(snap, "gpus"), 4);
	assert_int_equal(nf_gres_topo_links(ctx, t, snap), 0);
	assert_true(t->nvlink_known);
	out = lines(t, "{\"name\":\"gpu\",\"type\":\"l40s\",\"cores\":\"auto\","
		    "\"links\":\"auto\"}", 128, 0, &rc);
	assert_int_equal(rc, 0);
	assert_string_equal(out,
		"Name=gpu Type=l40s File=/dev/nvidia0 Cores=0-63\n"
		"Name=gpu Type=l40s File=/dev/nvidia1 Cores=0-63\n"
		"Name=gpu Type=l40s File=/dev/nvidia2 Cores=0-63\n"
		"Name=gpu Type=l40s File=/dev/nvidia3 Cores=0-63\n");
	free(out);
	/* a profile that says NVLink is refused rather than rendered */
	assert_null(lines(t, AUTO, 128, 1, &rc));
	assert_int_equal(rc, NF_E_CONFLICT);
	json_decref(snap);
	/* no NVML at all */
	memset(t->links, 0, sizeof(t->links));
	t->nvlink_known = 0;
	assert_null(lines(t, AUTO, 128, 1, &rc));
	assert_int_equal(rc, NF_E_NOHW);
	free(t);
}

/* Direct GPU-GPU links (no switch): 0-1 x4, 2-3 x4, 0-2 x2 */
static const char *pairs(size_t i)
{
	static const char *const v[] = {
		"[\"0000:2a:00.0\",\"0000:2a:00.0\",\"0000:2a:00.0\",\"0000:2a:00.0\","
		"\"0000:3a:00.0\",\"0000:3a:00.0\"]",
		"[\"0000:18:00.0\",\"0000:18:00.0\",\"0000:18:00.0\",\"0000:18:00.0\"]",
		"[\"0000:5d:00.0\",\"0000:5d:00.0\",\"0000:5d:00.0\",\"0000:5d:00.0\","
		"\"0000:18:00.0\",\"0000:18:00.0\"]",
		"[\"0000:3a:00.0\",\"0000:3a:00.0\",\"0000:3a:00.0\",\"0000:3a:00.0\"]",
	};
	return v[i];
}

static void test_direct_links_and_file_subset(void **s)
{
	struct nf_gres_topo *t = topo8();
	json_t *snap = snapshot(4, pairs);
	char *out;
	int rc;

	(void)s;
	t->n = 4;
	assert_int_equal(nf_gres_topo_links(ctx, t, snap), 0);
	out = lines(t, "{\"name\":\"gpu\",\"file\":\"/dev/nvidia[2-3]\","
		    "\"cores\":\"0-7\",\"links\":\"auto\"}", 128, 1, &rc);
	assert_int_equal(rc, 0);
	assert_string_equal(out,
		"Name=gpu File=/dev/nvidia2 Cores=0-7 Links=2,0,-1,4\n"
		"Name=gpu File=/dev/nvidia3 Cores=0-7 Links=0,0,4,-1\n");
	free(out);
	out = lines(t, "{\"name\":\"gpu\",\"file\":\"/dev/nvidia0\","
		    "\"cores\":\"auto\",\"links\":\"-1,4,2,0\"}", 64, 1, &rc);
	assert_int_equal(rc, 0);
	/* 64 cores: the second socket's CPUs fold onto 0-63 as well */
	assert_string_equal(out, "Name=gpu File=/dev/nvidia0 Cores=0-63 Links=-1,4,2,0\n");
	free(out);
	/* a device the node lacks; not a GPU device; not a gpu entry */
	assert_null(lines(t, "{\"name\":\"gpu\",\"file\":\"/dev/nvidia[3-4]\","
			  "\"links\":\"auto\"}", 128, 0, &rc));
	assert_int_equal(rc, NF_E_CONFLICT);
	assert_string_equal(nf_errmsg(ctx), "'/dev/nvidia4' (/etc/nodeforge/gres.auto.json) "
			    "is not a GPU of this node: nothing written");
	assert_null(lines(t, "{\"name\":\"gpu\",\"file\":\"/dev/nvme0n1\"}", 128, 0, &rc));
	assert_int_equal(rc, NF_E_INVALID);
	assert_null(lines(t, "{\"name\":\"nvme\",\"cores\":\"auto\"}", 128, 0, &rc));
	assert_int_equal(rc, NF_E_UNSUPPORTED);
	/* Cores=auto without the node's shape */
	assert_null(lines(t, AUTO, 0, 0, &rc));
	assert_int_equal(rc, NF_E_INVALID);
	json_decref(snap);
	free(t);
}

static void test_links_snapshot_mismatch(void **s)
{
	struct nf_gres_topo *t = topo8();
	json_t *snap = snapshot(8, hgx);

	(void)s;
	/* NVML sees a GPU the driver's list lacks */
	t->n = 7;
	assert_int_equal(nf_gres_topo_links(ctx, t, snap), NF_E_CONFLICT);
	/* the driver lists a GPU NVML lacks */
	t->n = 8;
	json_array_remove(json_object_get(snap, "gpus"), 3);
	assert_int_equal(nf_gres_topo_links(ctx, t, snap), NF_E_CONFLICT);
	assert_string_equal(nf_errmsg(ctx), "NVML does not report GPU '0000:5d:00.0' "
			    "(/dev/nvidia3): nothing written");
	json_decref(snap);
	/* an old driver without NVLink calls: nothing known, no error */
	snap = json_pack("{s:[{s:s}]}", "gpus", "name", "NVIDIA H100");
	assert_int_equal(nf_gres_topo_links(ctx, t, snap), 0);
	assert_false(t->nvlink_known);
	json_decref(snap);
	/* garbage where a PCI address belongs */
	snap = json_pack("{s:[{s:s, s:[s]}]}", "gpus", "pci_bus_id", "0000:18:00.0",
			 "nvlink_remote", "not-a-bus");
	t->n = 1;
	assert_int_equal(nf_gres_topo_links(ctx, t, snap), NF_E_INVALID);
	json_decref(snap);
	free(t);
}

static void test_information(void **s)
{
	char bus[NF_PCI_ADDR_LEN];
	int minor = -1;

	(void)s;
	assert_int_equal(nf_gres_parse_information(
		"Model: \t\t NVIDIA H100 80GB HBM3\nIRQ:   \t\t 212\n"
		"GPU UUID: \t GPU-6f2b3c1e\nBus Type: \t PCIe\n"
		"Bus Location: \t 0000:9A:00.0\nDevice Minor: \t 4\n"
		"GPU Excluded:\t No\n", &minor, bus), 0);
	assert_int_equal(minor, 4);
	assert_string_equal(bus, "0000:9a:00.0");
	assert_int_equal(nf_gres_parse_information("Bus Location: 0000:18:00.0\n",
						   &minor, bus), NF_E_PARSE);
	assert_int_equal(nf_gres_parse_information("Device Minor: 3\n", &minor, bus),
			 NF_E_PARSE);
	assert_int_equal(nf_gres_parse_information(
		"Device Minor: -1\nBus Location: 0000:18:00.0\n", &minor, bus), NF_E_PARSE);
	assert_int_equal(nf_gres_parse_information(
		"Device Minor: 256\nBus Location: 0000:18:00.0\n", &minor, bus), NF_E_PARSE);
	assert_int_equal(nf_gres_parse_information(
		"Device Minor: 1x\nBus Location: 0000:18:00.0\n", &minor, bus), NF_E_PARSE);
	assert_int_equal(nf_gres_parse_information(
		"Device Minor: 1\nBus Location: 18:00.0\n", &minor, bus), NF_E_PARSE);
	/* NVML's spelling and the kernel's give the same address */
	assert_int_equal(nf_pci_addr_norm("00000000:DB:00.0", bus), 0);
	assert_string_equal(bus, "0000:db:00.0");
	assert_int_equal(nf_pci_addr_norm("10000:01:00.0", bus), 0);
	assert_string_equal(bus, "10000:01:00.0");
	assert_int_equal(nf_pci_addr_norm("0000:18:20.0", bus), NF_E_PARSE);
	assert_int_equal(nf_pci_addr_norm("0000:18:00.8", bus), NF_E_PARSE);
	assert_int_equal(nf_pci_addr_norm("0000:118:00.0", bus), NF_E_PARSE);
	assert_int_equal(nf_pci_addr_norm("0000:18:00.0 x", bus), NF_E_PARSE);
	assert_int_equal(nf_pci_addr_norm("", bus), NF_E_PARSE);
}

static void test_auto_parse(void **s)
{
	static const char *const bad[] = {
		"{}",
		"[{\"type\":\"h100\"}]",
		"[{\"name\":\"gpu\",\"name\":\"gpu\"}]",
		"[{\"name\":\"gpu\",\"bogus\":1}]",
		"[{\"name\":\"gpu\",\"cores\":\"0-3 Links=1\"}]",
		"[{\"name\":\"gpu\",\"type\":\"h100#x\"}]",
		"[{\"name\":\"gpu\",\"type\":\"a\\nName=evil\"}]",
		"[{\"name\":\"gpu\",\"count\":-1}]",
		"[{\"name\":\"gpu\",\"count\":\"8\"}]",
		"[1]",
		"[",
	};
	json_t *out;

	(void)s;
	assert_int_equal(nf_gres_auto_parse(ctx, AUTO "]", 0, &out), NF_E_PARSE);
	{
		const char *ok = "[" AUTO "]";

		assert_int_equal(nf_gres_auto_parse(ctx, ok, strlen(ok), &out), 0);
		assert_int_equal(json_array_size(out), 1);
		json_decref(out);
	}
	for (size_t i = 0; i < NF_ARRAY_SIZE(bad); i++) {
		out = (json_t *)1;
		assert_int_not_equal(nf_gres_auto_parse(ctx, bad[i], strlen(bad[i]),
							&out), 0);
		assert_null(out);
	}
}

#define HEAD "# Written by nodeforge build (facet 'slurm') from the resolved profile.\n" \
	"# Name=gpu Type=h100 File=/dev/nvidia[0-7]: Cores=/Links= from this node's " \
	"topology at first boot (nodeforge gres render)\n"
#define BLOCK(l) "# BEGIN nodeforge gres render: this node's GPUs, from " \
	"/etc/nodeforge/gres.auto.json\n" l "# END nodeforge gres render\n"

static void test_merge(void **s)
{
	const char *img = HEAD "Name=nvme Type=local File=/dev/nvme0n1\n";
	char *a, *b;

	(void)s;
	assert_int_equal(nf_gres_merge(ctx, img, "Name=gpu File=/dev/nvidia0\n", &a), 0);
	assert_string_equal(a, HEAD BLOCK("Name=gpu File=/dev/nvidia0\n")
			    "Name=nvme Type=local File=/dev/nvme0n1\n");
	/* again: the block is replaced where it is, nothing else moves */
	assert_int_equal(nf_gres_merge(ctx, a, "Name=gpu File=/dev/nvidia0\n", &b), 0);
	assert_string_equal(a, b);
	free(b);
	assert_int_equal(nf_gres_merge(ctx, a, "Name=gpu File=/dev/nvidia1\n", &b), 0);
	assert_string_equal(b, HEAD BLOCK("Name=gpu File=/dev/nvidia1\n")
			    "Name=nvme Type=local File=/dev/nvme0n1\n");
	free(b);
	free(a);
	/* no placeholder, no newline at the end: appended */
	assert_int_equal(nf_gres_merge(ctx, "AutoDetect=off", "Name=gpu File=/dev/nvidia0\n",
				       &a), 0);
	assert_string_equal(a, "AutoDetect=off\n" BLOCK("Name=gpu File=/dev/nvidia0\n"));
	free(a);
	assert_int_equal(nf_gres_merge(ctx, NULL, "x\n", &a), 0);
	assert_string_equal(a, BLOCK("x\n"));
	free(a);
	/* refused: GPUs declared by hand, broken or doubled blocks */
	assert_int_equal(nf_gres_merge(ctx, HEAD "  name=gpu File=/dev/nvidia0\n", "x\n", &a),
			 NF_E_CONFLICT);
	assert_int_equal(nf_gres_merge(ctx, HEAD "# BEGIN nodeforge gres render\nx\n", "x\n",
				       &a), NF_E_PARSE);
	assert_int_equal(nf_gres_merge(ctx, "# END nodeforge gres render\n", "x\n", &a),
			 NF_E_PARSE);
	assert_int_equal(nf_gres_merge(ctx, BLOCK("x\n") BLOCK("y\n"), "x\n", &a),
			 NF_E_PARSE);
	/* a commented GPU line or another gres is not a conflict */
	assert_int_equal(nf_gres_merge(ctx, "#Name=gpu File=/dev/nvidia0\nName=gpus_x\n",
				       "x\n", &a), 0);
	free(a);
}

static void test_fold_cores(void **s)
{
	uint8_t set[NF_GRES_MAX_CPUS / 8] = { 0 };
	char *str;

	(void)s;
	assert_int_equal(nf_cpulist_fold_cores("64-127,192-255", 128, set,
					       NF_GRES_MAX_CPUS), 0);
	str = nf_cpulist_format(set, NF_GRES_MAX_CPUS);
	assert_string_equal(str, "64-127");
	free(str);
	memset(set, 0, sizeof(set));
	/* 8 cores, siblings numbered after all first threads */
	assert_int_equal(nf_cpulist_fold_cores("2-3,10-11", 8, set, NF_GRES_MAX_CPUS), 0);
	str = nf_cpulist_format(set, NF_GRES_MAX_CPUS);
	assert_string_equal(str, "2-3");
	free(str);
	assert_int_equal(nf_cpulist_fold_cores("0-3", 0, set, NF_GRES_MAX_CPUS), NF_E_USAGE);
	assert_int_equal(nf_cpulist_fold_cores("x", 8, set, NF_GRES_MAX_CPUS), NF_E_PARSE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nvswitch_8gpu_2socket),
		cmocka_unit_test(test_pcie_only_links_omitted),
		cmocka_unit_test(test_direct_links_and_file_subset),
		cmocka_unit_test(test_links_snapshot_mismatch),
		cmocka_unit_test(test_information),
		cmocka_unit_test(test_auto_parse),
		cmocka_unit_test(test_merge),
		cmocka_unit_test(test_fold_cores),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
