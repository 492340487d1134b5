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
	int slurmd = nf_profile_runs(nf_profile_json(l->profile), "slurmd");
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
	.apply = apply,
	.schema = fields,
	.lint = lint,
	.checks = &checks,
};
