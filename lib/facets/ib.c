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

/* ---- end of apply ---- */

/* ---- check: what the verifier checks (nodeforge verify) ---- */

/* ---- end of check ---- */

const struct nf_facet nf_facet_ib = {
	.name = "ib",
	.summary = "InfiniBand HCAs and ports",
	.apply = NULL,
	.schema = fields,
	.lint = lint,
	.checks = NULL,
};
