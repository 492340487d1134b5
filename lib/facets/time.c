/* SPDX-License-Identifier: MIT */
/* time: chrony, and the clock bound munge credentials depend on. */
#include "internal.h"

static const struct nf_field makestep[] = {
	{ "threshold", NF_T_NUM, .required = true },
	{ "limit", NF_T_INT, .required = true },
	{ 0 }
};

static const struct nf_field fields[] = {
	{ "servers", NF_T_STRLIST },
	{ "maxdistance", NF_T_NUM },
	{ "makestep", NF_T_OBJ, makestep },
	{ "rtcsync", NF_T_BOOL },
	{ "max_offset_ms", NF_T_NUM },
	{ 0 }
};

static int lint(struct nf_facet_lint *l, const json_t *sec)
{
	const json_t *servers = json_object_get(sec, "servers");
	double off = json_number_value(json_object_get(sec, "max_offset_ms"));

	if (!json_array_size(servers))
		nf_lint_at(l, "time", NF_SEV_ERROR,
			   "no NTP servers: set 'ntp' in the site file or "
			   "time.servers in the profile");
	if (off > 300000.0)
		nf_lint_at(l, "time.max_offset_ms", NF_SEV_ERROR,
			   "max_offset_ms %.0f exceeds munge's default 300 s "
			   "credential lifetime", off);
	return 0;
}

/* ---- apply: what the image build writes (nodeforge build) ---- */

/* ---- end of apply ---- */

/* ---- check: what the verifier checks (nodeforge verify) ---- */

/* ---- end of check ---- */

const struct nf_facet nf_facet_time = {
	.name = "time",
	.summary = "time synchronisation (chrony)",
	.apply = NULL,
	.schema = fields,
	.lint = lint,
	.checks = NULL,
};
