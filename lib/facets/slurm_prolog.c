/* SPDX-License-Identifier: MIT */
/*
 * The prolog and epilog slurm.conf names: slurmd runs them as root around
 * every job on the node, and one that is missing or not executable fails
 * the job and drains the node ("Prolog error") at its first job, long
 * after the node came up looking healthy.
 */
#include "slurm_int.h"

#include <stdlib.h>
#include <sys/stat.h>

/* One script of KEY: "" when it can run, else what is wrong */
static void script_state(struct nf_vcheck *c, const char *path, char *why, size_t sz)
{
	struct stat st;
	int r;

	*why = '\0';
	if (*path != '/')
		snprintf(why, sz, "not an absolute path");
	else if ((r = nf_v_stat(c, NF_VROOT, path, &st)))
		snprintf(why, sz, "%s", strerror(-r));
	else if (!S_ISREG(st.st_mode))
		snprintf(why, sz, "not a regular file");
	else if (!(st.st_mode & 0100))
		snprintf(why, sz, "mode %04o, not executable", (unsigned)st.st_mode & 07777);
}

/* Each path of KEY's value (Slurm takes a comma-separated list; a glob is
 * left to slurmd) into bad; the number checked */
static int check_key(struct nf_vcheck *c, const char *conf, const char *key,
		     char *bad, size_t sz, int *nbad)
{
	char *v = nf_v_conf_get(conf, key, "="), *save = NULL;
	int n = 0;

	for (char *p = v ? strtok_r(v, ",", &save) : NULL; p; p = strtok_r(NULL, ",", &save)) {
		char why[128];

		if (strpbrk(p, "*?["))
			continue;
		n++;
		script_state(c, p, why, sizeof(why));
		if (*why && (*nbad)++ < 4)
			snprintf(bad + strlen(bad), sz - strlen(bad), "%s%s=%s: %s",
				 *bad ? ", " : "", key, p, why);
	}
	free(v);
	return n;
}

int nf_slurm_check_scripts(struct nf_vcheck *c, const json_t *sec)
{
	static const char *const keys[] = { "Prolog", "Epilog" };
	char *conf = NULL, bad[512] = "";
	int n = 0, nbad = 0;

	(void)sec;
	if (!nf_profile_runs(nf_v_profile(c), "slurmd"))
		return nf_v_skip(c, "this role runs no slurmd");
	if (nf_v_read(c, NF_VROOT, "/etc/slurm/slurm.conf", 1 << 20, &conf, NULL))
		return NF_V_FAIL;
	for (size_t i = 0; i < NF_ARRAY_SIZE(keys); i++)
		n += check_key(c, conf, keys[i], bad, sizeof(bad), &nbad);
	free(conf);
	if (!n)
		return nf_v_skip(c, "slurm.conf names no Prolog or Epilog");
	nf_v_expect(c, "the Prolog and Epilog slurm.conf names are executable files");
	if (!nbad) {
		nf_v_seen(c, "%d script%s, each executable", n, n == 1 ? "" : "s");
		return NF_V_PASS;
	}
	nf_v_seen(c, "%s", bad);
	nf_v_remedy(c, "boot this node from an image built with the role's overlays "
		    "(nodeforge build %s), or chmod 0755 the script; slurmd fails every "
		    "job here until then", nf_v_role(c));
	return NF_V_FAIL;
}
