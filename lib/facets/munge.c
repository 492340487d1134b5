/* SPDX-License-Identifier: MIT */
/*
 * munge: the key's place, owner, mode and size.  The key itself never
 * enters an image; its sha256 fingerprint comes from the site.
 */
#include "internal.h"

static const struct nf_field fields[] = {
	{ "key_path", NF_T_PATH },
	{ "key_size", NF_T_INT },
	{ "owner", NF_T_STR },
	{ "mode", NF_T_MODE },
	{ "max_ttl", NF_T_INT },
	{ "socket", NF_T_PATH },
	{ 0 }
};

static int lint(struct nf_facet_lint *l, const json_t *sec)
{
	const char *mode = json_string_value(json_object_get(sec, "mode"));
	json_int_t size = json_integer_value(json_object_get(sec, "key_size"));

	if (mode && strcmp(mode, "0400") && strcmp(mode, "0600"))
		nf_lint_at(l, "munge.mode", NF_SEV_ERROR,
			   "munge key mode %s: munged refuses a key readable by "
			   "group or others; use 0400", mode);
	if (json_object_get(sec, "key_size") && (size < 32 || size > 1024))
		nf_lint_at(l, "munge.key_size", NF_SEV_ERROR,
			   "munge key size %lld: munged accepts 32 to 1024 bytes",
			   (long long)size);
	return 0;
}

/* ---- apply: what the image build writes (nodeforge build) ---- */

/* ---- end of apply ---- */

/* ---- check: what the verifier checks (nodeforge verify) ---- */

/* ---- end of check ---- */

const struct nf_facet nf_facet_munge = {
	.name = "munge",
	.summary = "munge key and daemon",
	.apply = NULL,
	.schema = fields,
	.lint = lint,
	.checks = NULL,
};
