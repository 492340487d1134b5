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

static int check_adopt(struct nf_vcheck *c, const json_t *sec)
{
	char *buf = NULL;
	int found = 0;

	if (!json_is_true(json_object_get(sec, "slurm_adopt")))
		return nf_v_skip(c, "the profile does not use pam_slurm_adopt");
	nf_v_expect(c, "an 'account ... pam_slurm_adopt.so' line in /etc/pam.d/sshd");
	if (nf_v_read(c, NF_VROOT, "/etc/pam.d/sshd", 64 * 1024, &buf, NULL)) {
		nf_v_seen(c, "no /etc/pam.d/sshd");
		nf_v_remedy(c, "apt-get install openssh-server libpam-slurm-adopt");
		return NF_V_FAIL;
	}
	for (const char *l = buf; l && *l && !found;) {
		const char *e = strchr(l, '\n');
		char line[512];
		const char *p;

		snprintf(line, sizeof(line), "%.*s", (int)(e ? e - l : (long)strlen(l)), l);
		p = line + strspn(line, " \t");
		found = !strncmp(p, "account", 7) && strstr(p, "pam_slurm_adopt.so");
		l = e ? e + 1 : NULL;
	}
	free(buf);
	nf_v_seen(c, found ? "present" : "absent");
	if (found)
		return NF_V_PASS;
	nf_v_remedy(c, "echo 'account required pam_slurm_adopt.so' >> /etc/pam.d/sshd");
	return NF_V_FAIL;
}

/* sshd keeps the first value it reads: the drop-ins (included first on
 * Debian and EL) before sshd_config itself */
static int check_usepam(struct nf_vcheck *c, const json_t *sec)
{
	char **names = NULL, path[512], *buf, *v = NULL;
	int n;

	if (json_is_false(json_object_get(sec, "use_pam")))
		return nf_v_skip(c, "the profile does not need UsePAM");
	nf_v_expect(c, "UsePAM yes");
	n = nf_v_list(c, NF_VROOT, "/etc/ssh/sshd_config.d", &names, 256);
	for (int i = 0; i < n && !v; i++) {
		snprintf(path, sizeof(path), "/etc/ssh/sshd_config.d/%.200s", names[i]);
		if (!nf_v_read(c, NF_VROOT, path, 64 * 1024, &buf, NULL)) {
			v = nf_v_conf_get(buf, "UsePAM", " \t");
			free(buf);
		}
	}
	if (n > 0)
		nf_strv_free(names, (size_t)n);
	if (!v && !nf_v_read(c, NF_VROOT, "/etc/ssh/sshd_config", 256 * 1024, &buf, NULL)) {
		/* here the first uncommented value counts; conf_get keeps the last */
		for (const char *l = buf; l && *l && !v;) {
			const char *e = strchr(l, '\n');
			char line[256];

			snprintf(line, sizeof(line), "%.*s", (int)(e ? e - l : (long)strlen(l)), l);
			v = nf_v_conf_get(line, "UsePAM", " \t");
			l = e ? e + 1 : NULL;
		}
		free(buf);
	}
	nf_v_seen(c, "UsePAM %s", v ? v : "(unset: no)");
	n = v && !strcasecmp(v, "yes");
	free(v);
	if (n)
		return NF_V_PASS;
	nf_v_remedy(c, "echo 'UsePAM yes' > /etc/ssh/sshd_config.d/00-nodeforge.conf && "
		    "systemctl reload ssh");
	return NF_V_FAIL;
}

static const struct nf_check_def defs[] = {
	{ "pam.slurm_adopt", "sshd adopts sessions into jobs (pam_slurm_adopt)", NULL,
	  NF_CHECK_STATIC, 0, check_adopt },
	{ "pam.sshd.usepam", "sshd uses PAM", NULL, NF_CHECK_STATIC, 0, check_usepam },
};

static const struct nf_checkset checks = NF_CHECKSET(defs);

/* ---- end of check ---- */

const struct nf_facet nf_facet_pam = {
	.name = "pam",
	.summary = "pam_slurm_adopt and sshd's UsePAM",
	.apply = NULL,
	.schema = fields,
	.lint = lint,
	.checks = &checks,
};
