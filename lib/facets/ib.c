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

/* ---- end of check ---- */

const struct nf_facet nf_facet_ib = {
	.name = "ib",
	.summary = "InfiniBand HCAs and ports",
	.apply = apply,
	.schema = fields,
	.lint = lint,
	.checks = NULL,
};
