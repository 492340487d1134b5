/* SPDX-License-Identifier: MIT */
/* system: what the image is made of: packages, repos, pinned artifacts,
 * services and overlays. */
#include "internal.h"

static const struct nf_field packages[] = {
	{ "install", NF_T_STRLIST },
	{ "remove", NF_T_STRLIST },
	{ 0 }
};

static const struct nf_field repo_fields[] = {
	{ "name", NF_T_STR, .required = true },
	{ "url", NF_T_STR, .required = true },
	{ "suite", NF_T_STR },
	{ "components", NF_T_STRLIST },
	{ "key", NF_T_STR },
	{ "distro", NF_T_STR },
	{ 0 }
};

static const struct nf_field artifact_fields[] = {
	{ "name", NF_T_STR, .required = true },
	{ "kind", NF_T_STR, .required = true,
	  .choices = (const char *const[]){ "deb", "rpm", "tarball", "source", NULL } },
	{ "url", NF_T_STR, .required = true },
	{ "sha256", NF_T_STR, .required = true },
	{ "version", NF_T_STR },
	{ "dest", NF_T_PATH },
	{ "build", NF_T_STR },
	{ "distro", NF_T_STR },
	{ 0 }
};

static const struct nf_field services[] = {
	{ "enable", NF_T_STRLIST },
	{ "disable", NF_T_STRLIST },
	{ 0 }
};

static const struct nf_field fields[] = {
	{ "packages", NF_T_OBJ, packages },
	{ "repos", NF_T_OBJLIST, repo_fields },
	{ "artifacts", NF_T_OBJLIST, artifact_fields },
	{ "services", NF_T_OBJ, services },
	{ "overlays", NF_T_STRLIST },
	{ 0 }
};

static int lint(struct nf_facet_lint *l, const json_t *sec)
{
	size_t i;
	json_t *a;

	json_array_foreach(json_object_get(sec, "artifacts"), i, a) {
		const char *sha = json_string_value(json_object_get(a, "sha256"));
		char path[96];
		size_t n = 0;

		snprintf(path, sizeof(path), "system.artifacts[%zu].sha256", i);
		while (sha && ((sha[n] >= '0' && sha[n] <= '9') ||
			       (sha[n] >= 'a' && sha[n] <= 'f')))
			n++;
		if (sha && (n != 64 || sha[n]))
			nf_lint_at(l, path, NF_SEV_ERROR,
				   "sha256 '%s' is not 64 lowercase hex digits", sha);
	}
	return 0;
}

/* ---- apply: what the image build writes (nodeforge build) ---- */

/* ---- end of apply ---- */

/* ---- check: what the verifier checks (nodeforge verify) ---- */

/* Services the profile enables that must run before slurmd starts (slurmd
 * itself waits for the verdict) */
static int check_services(struct nf_vcheck *c, const json_t *sec)
{
	char bad[512] = "", state[64];
	size_t i;
	json_t *s;
	int n = 0, total = 0;

	nf_v_expect(c, "every enabled service active");
	json_array_foreach(json_object_get(json_object_get(sec, "services"), "enable"), i, s) {
		const char *name = json_string_value(s);
		int r;

		if (!name || !strncmp(name, "slurm", 5) || !strcmp(name, "nvidia-fabricmanager") ||
		    !strncmp(name, "chrony", 6))
			continue; /* slurm* are gated; the others have their own checks */
		total++;
		r = nf_v_service_active(c, name, state, sizeof(state));
		if (r == NF_E_TIMEOUT)
			return NF_V_HUNG;
		if (r != 1 && n++ < 6)
			snprintf(bad + strlen(bad), sizeof(bad) - strlen(bad), "%s%s %s",
				 *bad ? ", " : "", name, r < 0 ? "unknown" : state);
	}
	if (!n) {
		nf_v_seen(c, "%d active", total);
		return NF_V_PASS;
	}
	nf_v_seen(c, "%s", bad);
	nf_v_remedy(c, "systemctl --failed; systemctl start UNIT; journalctl -u UNIT -n 30");
	return NF_V_FAIL;
}

static const struct nf_check_def defs[] = {
	{ "system.services", "the profile's services are active", NULL, NF_CHECK_PROBE, 3000,
	  check_services },
};

static const struct nf_checkset checks = NF_CHECKSET(defs);

/* ---- end of check ---- */

const struct nf_facet nf_facet_system = {
	.name = "system",
	.summary = "packages, repos, artifacts, services, overlays",
	.apply = NULL,
	.schema = fields,
	.lint = lint,
	.checks = &checks,
};
