/* SPDX-License-Identifier: MIT */
/* MAC/IP parsing, address runs and inventory validation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "nodeforge.h"

static void test_mac(void **state)
{
	uint8_t m[6];
	char s[18];

	(void)state;
	assert_int_equal(nf_mac_parse("52:54:00:AB:cd:0f", m), 0);
	nf_mac_format(m, ':', s);
	assert_string_equal(s, "52:54:00:ab:cd:0f");
	nf_mac_format(m, '-', s);
	assert_string_equal(s, "52-54-00-ab-cd-0f");
	assert_int_equal(nf_mac_parse("52-54-00-ab-cd-0f", m), 0);
	assert_int_equal(nf_mac_parse("52:54-00:ab:cd:0f", m), NF_E_PARSE);
	assert_int_equal(nf_mac_parse("52:54:00:ab:cd", m), NF_E_PARSE);
	assert_int_equal(nf_mac_parse("52:54:00:ab:cd:0g", m), NF_E_PARSE);
	assert_int_equal(nf_mac_parse("52:54:00:ab:cd:0f:", m), NF_E_PARSE);
	assert_int_equal(nf_mac_parse("525400abcd0f", m), NF_E_PARSE);
	assert_int_equal(nf_mac_parse("00:00:00:00:00:00", m), NF_E_INVALID);
	assert_int_equal(nf_mac_parse("01:00:5e:00:00:01", m), NF_E_INVALID);
	assert_int_equal(nf_mac_parse(NULL, m), NF_E_PARSE);
}

static void test_ipv4(void **state)
{
	uint32_t ip, net;
	unsigned pl;
	char s[16];

	(void)state;
	assert_int_equal(nf_ipv4_parse("10.0.1.11", &ip), 0);
	assert_int_equal(ip, 0x0a00010b);
	nf_ipv4_format(ip, s);
	assert_string_equal(s, "10.0.1.11");
	assert_int_equal(nf_ipv4_parse("0.0.0.0", &ip), 0);
	assert_int_equal(nf_ipv4_parse("255.255.255.255", &ip), 0);
	static const char *const bad[] = {
		"10.0.1", "10.0.1.11.", "10.0.1.256", "10.0.01.1", "10..0.1",
		"a.b.c.d", "10.0.1.11 ", " 10.0.1.11", "1000.0.0.1", "",
		"10.0.1.-1",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		if (nf_ipv4_parse(bad[i], &ip) == 0)
			fail_msg("'%s' should not parse", bad[i]);
	assert_int_equal(nf_cidr_parse("10.0.0.0/16", &net, &pl), 0);
	assert_int_equal(pl, 16);
	assert_true(nf_cidr_contains(net, pl, 0x0a00ffff));
	assert_false(nf_cidr_contains(net, pl, 0x0a010000));
	assert_int_equal(nf_cidr_parse("10.0.0.1/16", &net, &pl), NF_E_INVALID);
	assert_int_equal(nf_cidr_parse("10.0.0.0/33", &net, &pl), NF_E_PARSE);
	assert_int_equal(nf_cidr_parse("10.0.0.0", &net, &pl), NF_E_PARSE);
	assert_int_equal(nf_cidr_parse("0.0.0.0/0", &net, &pl), 0);
	assert_true(nf_cidr_contains(net, pl, 0xdeadbeef));
}

static char tmpdir[64];

static int setup(void **state)
{
	(void)state;
	strcpy(tmpdir, "/tmp/nf-inv.XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd);
}

static int load(struct nf_ctx *ctx, const char *yaml,
		struct nf_inventory **inv, struct nf_diags *d)
{
	const char *src = getenv("NF_SRCDIR");
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/tests/fixtures/boot/profiles",
		 src ? src : ".");
	assert_int_equal(nf_ctx_set_profiles_dir(ctx, path), 0);

	snprintf(path, sizeof(path), "%s/racks.yaml", tmpdir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(yaml, f);
	fclose(f);
	nf_diags_init(d);
	return nf_inventory_load(ctx, path, NULL, inv, d);
}

static void test_ranges(void **state)
{
	struct nf_ctx *ctx;
	struct nf_inventory *inv = NULL;
	struct nf_diags d;
	const struct nf_node *n;
	char s[18];

	(void)state;
	assert_int_equal(nf_ctx_new(&ctx), 0);
	assert_int_equal(load(ctx,
			      "nodes:\n"
			      "  - name: r[1-2]n[08-09]\n"
			      "    mac: 52:54:00:00:00:ff+\n"
			      "    ip: 10.0.0.254+\n"
			      "    bmc: [10.1.0.1, 10.1.0.2, 10.1.0.3, 10.1.0.4]\n"
			      "    role: compute\n"
			      "    rack: 7\n",
			      &inv, &d), 0);
	assert_int_equal(nf_inventory_count(inv), 4);
	n = nf_inventory_node(inv, 3);
	assert_string_equal(n->name, "r2n09");
	nf_mac_format(n->mac, ':', s);
	assert_string_equal(s, "52:54:00:00:01:02"); /* carries into byte 5 */
	nf_ipv4_format(n->ip, s);
	assert_string_equal(s, "10.0.1.1");
	nf_ipv4_format(n->bmc, s);
	assert_string_equal(s, "10.1.0.4");
	assert_string_equal(n->rack, "7");
	assert_ptr_equal(nf_inventory_find(inv, "r1n09"),
			 nf_inventory_node(inv, 1));
	assert_null(nf_inventory_find(inv, "r3n01"));
	assert_int_equal(n->line, 2);

	/* network check: 10.0.1.1 is outside 10.0.0.0/24, .254 is inside */
	nf_diags_free(&d);
	assert_int_equal(nf_inventory_check_network(ctx, inv, "10.0.0.0/24", &d),
			 NF_E_INVALID);
	assert_int_equal(d.n, 3);
	assert_int_equal(d.v[0].line, 4);
	assert_non_null(strstr(d.v[0].message, "10.0.0.255 of node 'r1n09' is "
				"the network or broadcast"));
	assert_non_null(strstr(d.v[1].message, "outside"));
	nf_diags_free(&d);
	assert_int_equal(nf_inventory_check_network(ctx, inv, "10.0.0.0/16", &d),
			 0);
	nf_diags_free(&d);
	nf_inventory_free(inv);
	nf_ctx_free(ctx);
}

static void test_errors_collected(void **state)
{
	struct nf_ctx *ctx;
	struct nf_inventory *inv = NULL;
	struct nf_diags d;

	(void)state;
	assert_int_equal(nf_ctx_new(&ctx), 0);
	assert_int_equal(load(ctx,
			      "nodes:\n"
			      "  - name: a-[1-3]\n"
			      "    mac: 52:54:00:00:00:01\n"
			      "    ip: [10.0.0.1, 10.0.0.2]\n"
			      "    role: compute\n"
			      "  - name: b\n"
			      "    mac: 52:54:00:00:00:0x\n"
			      "    ip: 10.0.0.9\n"
			      "    role: x/y\n",
			      &inv, &d), NF_E_INVALID);
	assert_null(inv);
	assert_int_equal(nf_diags_errors(&d), 4);
	assert_non_null(strstr(nf_errmsg(ctx), "racks.yaml:3:5: 'a-[1-3]' has 3"));
	nf_diags_free(&d);

	/* MAC runs must not carry into the multicast bit of the first byte */
	assert_int_equal(load(ctx,
			      "nodes:\n"
			      "  - name: a-[1-3]\n"
			      "    mac: fe:ff:ff:ff:ff:ff+\n"
			      "    ip: 10.0.0.1+\n"
			      "    role: compute\n",
			      &inv, &d), NF_E_INVALID);
	nf_diags_free(&d);
	nf_ctx_free(ctx);
}

/* bmc: as a mapping: the address forms of the string, and how to reach it */
static void test_bmc_mapping(void **state)
{
	struct nf_ctx *ctx;
	struct nf_inventory *inv = NULL;
	struct nf_diags d;
	const struct nf_node *n;
	char s[16];

	(void)state;
	assert_int_equal(nf_ctx_new(&ctx), 0);
	assert_int_equal(load(ctx,
			      "nodes:\n"
			      "  - name: gpu-[01-02]\n"
			      "    mac: 52:54:00:00:01:01+\n"
			      "    ip: 10.0.1.11+\n"
			      "    role: compute\n"
			      "    bmc: { address: 10.1.1.11+, protocol: redfish,"
			      " port: 8443 }\n"
			      "  - name: cpu-01\n"
			      "    mac: 52:54:00:00:02:01\n"
			      "    ip: 10.0.2.1\n"
			      "    role: compute\n"
			      "    bmc: 10.1.2.1\n",
			      &inv, &d), 0);
	n = nf_inventory_find(inv, "gpu-02");
	assert_non_null(n);
	nf_ipv4_format(n->bmc, s);
	assert_string_equal(s, "10.1.1.12");
	assert_int_equal(n->bmc_protocol, NF_BMC_REDFISH);
	assert_int_equal(n->bmc_port, 8443);
	assert_int_equal(n->bmc_http, 0);
	n = nf_inventory_find(inv, "cpu-01");
	assert_int_equal(n->bmc_protocol, NF_BMC_DEFAULT);
	assert_int_equal(n->bmc_port, 0);
	nf_diags_free(&d);
	nf_inventory_free(inv);
	inv = NULL;

	/* no address, an unknown key, scheme on IPMI */
	assert_int_equal(load(ctx,
			      "nodes:\n"
			      "  - name: a\n"
			      "    mac: 52:54:00:00:00:01\n"
			      "    ip: 10.0.0.1\n"
			      "    role: compute\n"
			      "    bmc: { protocol: ipmi, vendor: x }\n"
			      "  - name: b\n"
			      "    mac: 52:54:00:00:00:02\n"
			      "    ip: 10.0.0.2\n"
			      "    role: compute\n"
			      "    bmc: { address: 10.1.0.2, scheme: http }\n",
			      &inv, &d), NF_E_INVALID);
	assert_null(inv);
	assert_int_equal(nf_diags_errors(&d), 3);
	nf_diags_free(&d);
	nf_ctx_free(ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mac),
		cmocka_unit_test(test_ipv4),
		cmocka_unit_test(test_ranges),
		cmocka_unit_test(test_errors_collected),
		cmocka_unit_test(test_bmc_mapping),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
