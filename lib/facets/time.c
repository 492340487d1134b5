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

/* chrony.conf from the site's NTP servers; Debian keeps it under
 * /etc/chrony/, EL at /etc/chrony.conf */
static int apply(struct nf_apply *a, const json_t *sec)
{
	const json_t *servers = json_object_get(sec, "servers");
	const json_t *ms = json_object_get(sec, "makestep");
	const json_t *md = json_object_get(sec, "maxdistance");
	struct nf_buf b = { 0 };
	size_t i;
	json_t *v;

	if (!json_array_size(servers))
		servers = json_object_get(a->site, "ntp");
	nf_apply_header(&b, "#", "time");
	json_array_foreach(servers, i, v) {
		const char *s = json_string_value(v);

		if (!s || !*s || strpbrk(s, " \t\n#")) {
			nf_buf_free(&b);
			return nf_fail(a->ctx, NF_E_INVALID,
				       "NTP server '%s' is not a host name or "
				       "address", s ? s : "(not a string)");
		}
		nf_buf_printf(&b, "server %s iburst\n", s);
	}
	if (json_is_number(md))
		nf_buf_printf(&b, "maxdistance %g\n", json_number_value(md));
	if (ms)
		nf_buf_printf(&b, "makestep %g %lld\n",
			      json_number_value(json_object_get(ms, "threshold")),
			      (long long)json_integer_value(json_object_get(ms, "limit")));
	if (json_is_true(json_object_get(sec, "rtcsync")))
		nf_buf_printf(&b, "rtcsync\n");
	nf_buf_printf(&b, "driftfile /var/lib/chrony/%s\n",
		      a->el ? "drift" : "chrony.drift");
	nf_buf_printf(&b, "keyfile /etc/%s\n", a->el ? "chrony.keys"
						      : "chrony/chrony.keys");
	nf_buf_printf(&b, "logdir /var/log/chrony\n");
	return nf_apply_write_buf(a, a->el ? "/etc/chrony.conf"
					   : "/etc/chrony/chrony.conf",
				  &b, 0644, 0, 0);
}

/* ---- end of apply ---- */

/* ---- check: what the verifier checks (nodeforge verify) ---- */

/* ---- end of check ---- */

const struct nf_facet nf_facet_time = {
	.name = "time",
	.summary = "time synchronisation (chrony)",
	.apply = apply,
	.schema = fields,
	.lint = lint,
	.checks = NULL,
};
