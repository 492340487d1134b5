/* SPDX-License-Identifier: MIT */
/*
 * slurm: slurm.conf, gres.conf (typed GRES, NVLink Links=), slurmdbd.conf
 * settings and the node's hardware shape.  The cluster name, controller
 * hosts and accounting host come from the site, never from a role profile.
 */
#include "internal.h"

#include <stdlib.h>

static const struct nf_field node_fields[] = {
	{ "sockets", NF_T_INT, .required = true },
	{ "cores_per_socket", NF_T_INT, .required = true },
	{ "threads_per_core", NF_T_INT, .required = true },
	{ "real_memory_mb", NF_T_INT, .required = true },
	{ "features", NF_T_STRLIST },
	{ 0 }
};

static const struct nf_field gres_fields[] = {
	{ "name", NF_T_STR, .required = true },
	{ "type", NF_T_STR },
	{ "count", NF_T_INT },
	{ "file", NF_T_STR },
	{ "cores", NF_T_STR },
	{ "links", NF_T_STR },
	{ 0 }
};

static const struct nf_field plugstack_fields[] = {
	{ "name", NF_T_STR, .required = true },
	{ "control", NF_T_STR, .choices = (const char *const[]){ "required", "optional", NULL } },
	{ "path", NF_T_PATH, .required = true },
	{ "args", NF_T_MAP },
	{ 0 }
};

static const struct nf_field partition_fields[] = {
	{ "name", NF_T_STR, .required = true },
	{ "nodes", NF_T_STR, .required = true },
	{ "options", NF_T_MAP },
	{ 0 }
};

static const struct nf_field fields[] = {
	{ "daemons", NF_T_STRLIST },
	{ "conf", NF_T_MAP },
	{ "dbd", NF_T_MAP },
	{ "node", NF_T_OBJ, node_fields },
	{ "gres", NF_T_OBJLIST, gres_fields },
	{ "plugstack", NF_T_OBJLIST, plugstack_fields },
	{ "partitions", NF_T_OBJLIST, partition_fields },
	{ 0 }
};

static const char *conf_str(const json_t *conf, const char *key)
{
	return json_string_value(json_object_get(conf, key));
}

/* Does the comma-separated `list` contain `word`? */
static int has_word(const char *list, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = list; p && *p;) {
		const char *c = strchr(p, ',');
		size_t len = c ? (size_t)(c - p) : strlen(p);

		if (len == n && !strncasecmp(p, word, n))
			return 1;
		p = c ? c + 1 : NULL;
	}
	return 0;
}

static void want(struct nf_facet_lint *l, const json_t *conf, const char *key,
		 const char *value, const char *why)
{
	const char *v = conf_str(conf, key);
	char path[128];

	snprintf(path, sizeof(path), "slurm.conf.%s", key);
	if (!v)
		nf_lint_at(l, "slurm.conf", NF_SEV_ERROR,
			   "%s is not set: use %s=%s (%s)", key, key, value, why);
	else if (strcmp(v, value))
		nf_lint_at(l, path, NF_SEV_ERROR, "%s=%s: use %s=%s (%s)", key,
			   v, key, value, why);
}

/* Slurm's Links= is one integer per GPU of the node: -1 for the GPU
 * itself, else the number of NVLink connections to that peer (0: none). */
static int check_links(struct nf_facet_lint *l, const char *path,
		       const char *links, long ngpu, long self)
{
	long n = 0, selfs = 0, selfpos = -1;
	const char *p = links;

	while (*p) {
		char *end;
		long v = strtol(p, &end, 10);

		if (end == p || v < -1 || (*end && *end != ',')) {
			nf_lint_at(l, path, NF_SEV_ERROR,
				   "Links '%s' must be comma-separated integers "
				   "(-1 for the GPU itself, else its NVLink count to "
				   "each peer), as 'nvidia-smi topo -m' shows", links);
			return 1;
		}
		if (v == -1) {
			selfs++;
			selfpos = n;
		}
		n++;
		p = *end == ',' ? end + 1 : end;
	}
	if (n != ngpu && ngpu > 0)
		return nf_lint_at(l, path, NF_SEV_ERROR,
				  "Links '%s' has %ld entries but the node has %ld GPUs",
				  links, n, ngpu), 1;
	if (selfs != 1 || (self >= 0 && selfpos != self))
		return nf_lint_at(l, path, NF_SEV_ERROR,
				  "Links '%s' must hold exactly one -1, at the "
				  "GPU's own index", links), 1;
	return 0;
}

static int lint(struct nf_facet_lint *l, const json_t *sec)
{
	const json_t *prof = nf_profile_json(l->profile);
	const json_t *conf = json_object_get(sec, "conf");
	const json_t *gpu = json_object_get(prof, "gpu");
	const json_t *pam = json_object_get(prof, "pam");
	const char *v;
	json_t *g;
	size_t i;
	long ngpu = (long)json_integer_value(json_object_get(gpu, "count"));
	int nvlink = json_is_true(json_object_get(gpu, "nvswitch")) ||
		     json_is_true(json_object_get(gpu, "nvlink"));

	if (!conf)
		return 0;
	want(l, conf, "SelectType", "select/cons_tres",
	     "GRES-aware, topology-aware packing; cons_res is legacy");
	want(l, conf, "ProctrackType", "proctrack/cgroup",
	     "cgroups track every process of a job");
	v = conf_str(conf, "TaskPlugin");
	if (!v || !has_word(v, "task/affinity") || !has_word(v, "task/cgroup"))
		nf_lint_at(l, v ? "slurm.conf.TaskPlugin" : "slurm.conf",
			   NF_SEV_ERROR,
			   "TaskPlugin=%s: use task/affinity,task/cgroup (affinity "
			   "binds to NUMA-local cores, cgroup enforces it)",
			   v ? v : "(unset)");
	v = conf_str(conf, "AccountingStorageType");
	if (v && !strcmp(v, "accounting_storage/slurmdbd")) {
		const char *e = conf_str(conf, "AccountingStorageEnforce");

		if (!e || !has_word(e, "safe"))
			nf_lint_at(l, e ? "slurm.conf.AccountingStorageEnforce"
				   : "slurm.conf", NF_SEV_ERROR,
				   "AccountingStorageEnforce=%s lacks 'safe': jobs "
				   "could run without being billed", e ? e : "(unset)");
	}
	if (json_is_true(json_object_get(pam, "slurm_adopt"))) {
		v = conf_str(conf, "PrologFlags");
		if (!v || !has_word(v, "contain"))
			nf_lint_at(l, v ? "slurm.conf.PrologFlags" : "slurm.conf",
				   NF_SEV_ERROR,
				   "PrologFlags=%s lacks 'contain', which pam_slurm_adopt "
				   "needs to adopt SSH sessions", v ? v : "(unset)");
	}
	if (conf_str(conf, "CryptoType"))
		nf_lint_at(l, "slurm.conf.CryptoType", NF_SEV_WARNING,
			   "CryptoType was removed in Slurm 23.11: use "
			   "CredType=cred/munge");
	for (const char *const *k = (const char *const[]){ "ClusterName",
		     "SlurmctldHost", "AccountingStorageHost", NULL }; *k; k++) {
		char path[96];

		snprintf(path, sizeof(path), "slurm.conf.%s", *k);
		if (json_object_get(conf, *k))
			nf_lint_at(l, path, NF_SEV_ERROR,
				   "%s comes from the site file, not a role profile",
				   *k);
	}
	/* GRES: typed, declared in GresTypes, NVLink links on NVLink nodes */
	v = conf_str(conf, "GresTypes");
	json_array_foreach(json_object_get(sec, "gres"), i, g) {
		const char *name = json_string_value(json_object_get(g, "name"));
		const char *links = json_string_value(json_object_get(g, "links"));
		char path[96];

		if (!name)
			continue;
		snprintf(path, sizeof(path), "slurm.gres[%zu]", i);
		if (!json_object_get(g, "type"))
			nf_lint_at(l, path, NF_SEV_ERROR,
				   "GRES '%s' has no type: untyped GRES cannot be "
				   "requested as --gres=%s:TYPE:N", name, name);
		if (!v || !has_word(v, name))
			nf_lint_at(l, path, NF_SEV_ERROR,
				   "GRES '%s' is not in slurm.conf GresTypes=%s", name,
				   v ? v : "(unset)");
		if (!strcmp(name, "gpu") && nvlink && !links)
			nf_lint_at(l, path, NF_SEV_ERROR,
				   "GPU GRES without Links= on an NVLink node: Slurm "
				   "may split a job across NVSwitch domains; set links "
				   "(or 'auto' to take them from NVML at first boot)");
		if (links && strcmp(links, "auto")) {
			char lp[128];

			snprintf(lp, sizeof(lp), "%s.links", path);
			check_links(l, lp, links, ngpu, -1);
		}
	}
	return 0;
}

/* ---- apply: what the image build writes (nodeforge build) ---- */

/* ---- end of apply ---- */

/* ---- check: what the verifier checks (nodeforge verify) ---- */

/* ---- end of check ---- */

const struct nf_facet nf_facet_slurm = {
	.name = "slurm",
	.summary = "slurm.conf, gres.conf, plugstack.conf, slurmdbd.conf",
	.apply = NULL,
	.schema = fields,
	.lint = lint,
	.checks = NULL,
};
