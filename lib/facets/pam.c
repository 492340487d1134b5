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

/* ---- end of apply ---- */

/* ---- check: what the verifier checks (nodeforge verify) ---- */

/* ---- end of check ---- */

const struct nf_facet nf_facet_pam = {
	.name = "pam",
	.summary = "pam_slurm_adopt and sshd's UsePAM",
	.apply = NULL,
	.schema = fields,
	.lint = lint,
	.checks = NULL,
};
