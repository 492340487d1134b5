/* SPDX-License-Identifier: MIT */
/* pam: pam_slurm_adopt on compute nodes, so SSH sessions land in the
 * job's cgroup (or are refused when the user has no job there). */
#include "internal.h"

static const struct nf_field fields[] = {
	{ "slurm_adopt", NF_T_BOOL },
	{ "use_pam", NF_T_BOOL },
	{ 0 }
};

static int lint(struct nf_facet_lint *l, const json_t *sec)
{
	const json_t *daemons = json_object_get(
		json_object_get(nf_profile_json(l->profile), "slurm"), "daemons");
	int slurmd = 0;
	size_t i;
	json_t *d;

	json_array_foreach(daemons, i, d)
		slurmd |= !strcmp(json_string_value(d) ? json_string_value(d) : "",
				  "slurmd");
	if (json_is_true(json_object_get(sec, "slurm_adopt")) && !slurmd)
		nf_lint_at(l, "pam.slurm_adopt", NF_SEV_ERROR,
			   "pam_slurm_adopt on a node without slurmd would "
			   "refuse every SSH login");
	if (json_is_true(json_object_get(sec, "slurm_adopt")) &&
	    json_is_false(json_object_get(sec, "use_pam")))
		nf_lint_at(l, "pam.use_pam", NF_SEV_ERROR,
			   "pam_slurm_adopt needs 'UsePAM yes' in sshd_config");
	return 0;
}

/* ---- apply: what the image build writes (nodeforge build) ---- */

#define NF_PAM_MAX (256u << 10)

/* pam_slurm_adopt is an account module: it runs after the distro's own
 * account stack.  The distro file is kept (only the line is added) when
 * the image has one; a bare root gets a complete minimal stack. */
static const char pam_line[] = "account    required     pam_slurm_adopt.so\n";

static int apply_adopt(struct nf_apply *a)
{
	struct nf_buf b = { 0 };
	char *old = NULL;
	size_t len = 0;
	int r;

	r = nf_apply_read(a, "/etc/pam.d/sshd", NF_PAM_MAX, &old, &len);
	if (r && r != -ENOENT)
		return r;
	if (!r && strstr(old, "pam_slurm_adopt.so")) {
		free(old);
		return 0;
	}
	if (!r) {
		const char *anchor = a->el ? "account    include      password-auth\n"
					   : "@include common-account\n";
		char *at = strstr(old, anchor);

		if (!at) {
			anchor = a->el ? "account" : "@include common-account";
			at = strstr(old, anchor);
			if (at)
				at = strchr(at, '\n');
			else
				at = len ? old + len - 1 : NULL;
			anchor = "";
		}
		size_t cut = at ? (size_t)(at - old) + strlen(anchor) +
				 (*anchor ? 0 : 1) : len;

		if (cut > len)
			cut = len;
		nf_buf_printf(&b, "%.*s", (int)cut, old);
		if (cut && old[cut - 1] != '\n')
			nf_buf_printf(&b, "\n");
		nf_buf_printf(&b, "# nodeforge (facet 'pam'): SSH only into "
			      "nodes where the user has a job\n%s%s", pam_line,
			      old + cut);
		free(old);
	} else {
		nf_apply_header(&b, "#", "pam");
		if (a->el)
			nf_buf_printf(&b,
				"auth       substack     password-auth\n"
				"account    required     pam_nologin.so\n"
				"account    include      password-auth\n"
				"%s"
				"password   include      password-auth\n"
				"session    required     pam_limits.so\n"
				"session    include      password-auth\n",
				pam_line);
		else
			nf_buf_printf(&b,
				"@include common-auth\n"
				"account    required     pam_nologin.so\n"
				"@include common-account\n"
				"%s"
				"session    required     pam_limits.so\n"
				"@include common-session\n"
				"@include common-password\n",
				pam_line);
	}
	return nf_apply_write_buf(a, "/etc/pam.d/sshd", &b, 0644, 0, 0);
}

static int apply(struct nf_apply *a, const json_t *sec)
{
	int r;

	if (json_is_true(json_object_get(sec, "use_pam")) ||
	    json_is_true(json_object_get(sec, "slurm_adopt"))) {
		struct nf_buf b = { 0 };

		nf_apply_header(&b, "#", "pam");
		nf_buf_printf(&b, "UsePAM yes\n");
		if ((r = nf_apply_write_buf(a, "/etc/ssh/sshd_config.d/"
					    "90-nodeforge.conf", &b, 0644, 0, 0)))
			return r;
	}
	/* only where slurmd runs: elsewhere every login would be refused */
	if (json_is_true(json_object_get(sec, "slurm_adopt")) &&
	    nf_apply_has_daemon(a, "slurmd"))
		return apply_adopt(a);
	return 0;
}

/* ---- end of apply ---- */

/* ---- check: what the verifier checks (nodeforge verify) ---- */

/* ---- end of check ---- */

const struct nf_facet nf_facet_pam = {
	.name = "pam",
	.summary = "pam_slurm_adopt and sshd's UsePAM",
	.apply = apply,
	.schema = fields,
	.lint = lint,
	.checks = NULL,
};
