/* SPDX-License-Identifier: MIT */
/* ib: InfiniBand HCAs present, ports ACTIVE at the expected rate. */
#include "internal.h"

static const struct nf_field fields[] = {
	{ "hcas", NF_T_STRLIST },
	{ "rate_gbps", NF_T_INT },
	{ "link_layer", NF_T_STR, .choices = (const char *const[]){ "InfiniBand", "Ethernet", NULL } },
	{ 0 }
};

static int lint(struct nf_facet_lint *l, const json_t *sec)
{
	json_int_t rate = json_integer_value(json_object_get(sec, "rate_gbps"));
	static const int rates[] = { 10, 20, 40, 56, 100, 200, 400, 800 };
	int ok = !json_object_get(sec, "rate_gbps");

	for (size_t i = 0; i < NF_ARRAY_SIZE(rates); i++)
		ok |= rate == rates[i];
	if (!ok)
		nf_lint_at(l, "ib.rate_gbps", NF_SEV_ERROR,
			   "rate_gbps %lld is not an InfiniBand port rate "
			   "(100, 200, 400, 800, ...)", (long long)rate);
	return 0;
}

/* ---- apply: what the image build writes (nodeforge build) ---- */

/* The verbs and management modules load at boot, before slurmd, so jobs
 * see /dev/infiniband/uverbs* and umad */
static int apply(struct nf_apply *a, const json_t *sec)
{
	const char *ll = json_string_value(json_object_get(sec, "link_layer"));
	struct nf_buf b = { 0 };

	if (!json_array_size(json_object_get(sec, "hcas")))
		return 0;
	nf_apply_header(&b, "#", "ib");
	nf_buf_printf(&b, "mlx5_ib\nib_uverbs\nib_umad\n%s",
		      ll && !strcmp(ll, "Ethernet") ? "" : "ib_ipoib\n");
	return nf_apply_write_buf(a, "/etc/modules-load.d/nodeforge-ib.conf", &b,
				  0644, 0, 0);
}

/* ---- end of apply ---- */

/* ---- check: what the verifier checks (nodeforge verify) ---- */

static int check_hcas(struct nf_vcheck *c, const json_t *sec)
{
	char missing[256] = "", path[256];
	struct stat st;
	size_t i;
	json_t *h;
	int n = 0;

	nf_v_expect(c, "%zu HCAs", json_array_size(json_object_get(sec, "hcas")));
	json_array_foreach(json_object_get(sec, "hcas"), i, h) {
		snprintf(path, sizeof(path), "/sys/class/infiniband/%.64s", json_string_value(h));
		if (nf_v_stat(c, NF_VSYS, path, &st) && n++ < 8)
			snprintf(missing + strlen(missing), sizeof(missing) - strlen(missing),
				 "%s%s", *missing ? " " : "", json_string_value(h));
	}
	if (!n) {
		nf_v_seen(c, "all present");
		return NF_V_PASS;
	}
	nf_v_seen(c, "missing: %s", missing);
	nf_v_remedy(c, "ibstat; lspci | grep -i mellanox; modprobe mlx5_ib");
	return NF_V_FAIL;
}

/* For each port of each HCA: "mlx5_0/1: <file contents>" of bad ones */
static int check_ports(struct nf_vcheck *c, const json_t *sec)
{
	const char *id = nf_v_id(c);
	int is_rate = !strcmp(id, "ib.port.rate"), is_ll = !strcmp(id, "ib.port.link_layer");
	json_int_t rate = json_integer_value(json_object_get(sec, "rate_gbps"));
	const char *ll = json_string_value(json_object_get(sec, "link_layer"));
	char bad[512] = "", path[256], *buf;
	size_t i;
	json_t *h;
	int n = 0, ports = 0;

	if (is_rate && !rate)
		return nf_v_skip(c, "the profile sets no rate");
	if (is_ll && !ll)
		return nf_v_skip(c, "the profile sets no link layer");
	if (is_rate)
		nf_v_expect(c, "every port at %lld Gb/sec", (long long)rate);
	else if (is_ll)
		nf_v_expect(c, "every port's link layer %s", ll);
	else
		nf_v_expect(c, "every port ACTIVE");
	json_array_foreach(json_object_get(sec, "hcas"), i, h) {
		char **names, dir[160];
		int np;

		snprintf(dir, sizeof(dir), "/sys/class/infiniband/%.64s/ports", json_string_value(h));
		np = nf_v_list(c, NF_VSYS, dir, &names, 64);
		for (int j = 0; j < np; j++) {
			int ok;

			snprintf(path, sizeof(path), "%s/%.16s/%s", dir, names[j],
				 is_rate ? "rate" : is_ll ? "link_layer" : "state");
			if (nf_v_read(c, NF_VSYS, path, 256, &buf, NULL))
				continue;
			ports++;
			buf[strcspn(buf, "\n")] = '\0';
			if (is_rate)
				ok = strtoll(buf, NULL, 10) == rate;
			else if (is_ll)
				ok = !strcmp(buf, ll);
			else
				ok = strstr(buf, "ACTIVE") != NULL;
			if (!ok && n++ < 6)
				snprintf(bad + strlen(bad), sizeof(bad) - strlen(bad), "%s%s/%s: %.40s",
					 *bad ? ", " : "", json_string_value(h), names[j], buf);
			free(buf);
		}
		if (np > 0)
			nf_strv_free(names, (size_t)np);
	}
	if (!n) {
		nf_v_seen(c, "%d ports ok", ports);
		return NF_V_PASS;
	}
	nf_v_seen(c, "%s", bad);
	nf_v_remedy(c, is_rate ? "ibstat; check the cable and the switch port speed"
		    : is_ll ? "mlxconfig -d DEVICE set LINK_TYPE_P1=1   # IB; then reboot"
		    : "ibstat; check the cable and that a subnet manager runs (sminfo)");
	return NF_V_FAIL;
}

static const struct nf_check_def defs[] = {
	{ "ib.hca.present", "the expected InfiniBand HCAs exist", NULL, 0, 0, check_hcas,
	  .needs = "ib" },
	{ "ib.port.state", "every port is ACTIVE", "ib.hca.present", 0, 0, check_ports,
	  .needs = "ib" },
	{ "ib.port.rate", "every port runs at the expected rate", "ib.port.state", 0, 0,
	  check_ports,
	  .needs = "ib" },
	{ "ib.port.link_layer", "every port has the expected link layer", "ib.hca.present", 0, 0,
	  check_ports,
	  .needs = "ib" },
};

static const struct nf_checkset checks = NF_CHECKSET(defs);

/* ---- end of check ---- */

const struct nf_facet nf_facet_ib = {
	.name = "ib",
	.summary = "InfiniBand HCAs and ports",
	.apply = apply,
	.schema = fields,
	.lint = lint,
	.checks = &checks,
};
