/* SPDX-License-Identifier: MIT */
/*
 * The image's own daemons read what nodeforge wrote into it (nodeforge ci,
 * static stage).  Each program runs inside the unpacked root: chroot, in
 * its own mount, UTS and PID namespaces (util-linux unshare) with /proc
 * mounted and the host name of a node of the role.  Any "error:" or
 * "fatal:" line fails the case with the program's own words, except those
 * that say only that no daemon answers (no munged, no slurmctld: nothing
 * runs in a static check).  slurmd -G, which would parse gres.conf, needs
 * a running munged: gres.conf is checked by the verifier's slurm.gres.*
 * and by slurmd itself at boot.
 *
 *   slurm.conf      scontrol show config  (every role with Slurm)
 *   plugstack.conf  srun --help           (SPANK plugins load; pyxis:
 *                                         its --container-image)
 *   slurmdbd.conf   slurmdbd -D, 3 s      (roles that run slurmdbd)
 *   chrony.conf     chronyd -p
 *   mariadb         mariadbd --help --verbose
 */
#include "internal.h"

#include <ctype.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define RUN_MS 20000

static int exists(const char *root, const char *rel)
{
	char p[PATH_MAX];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	return lstat(p, &st) == 0;
}

/* lines a static run prints because no daemon answers it */
static int benign(const char *l)
{
	static const char *const words[] = {
		"munge", "auth", "unable to contact", "slurm_load_",
		"connection refused", "communication", NULL,
	};
	char low[512];
	size_t i;

	for (i = 0; l[i] && i < sizeof(low) - 1; i++)
		low[i] = (char)tolower((unsigned char)l[i]);
	low[i] = '\0';
	for (const char *const *w = words; *w; w++)
		if (strstr(low, *w))
			return 1;
	return 0;
}

/* The first line that says error or fatal and is not benign, or NULL */
static char *first_error(char *out)
{
	for (char *l = out, *nl; l && *l; l = nl ? nl + 1 : NULL) {
		if ((nl = strchr(l, '\n')))
			*nl = '\0';
		if ((strstr(l, "error:") || strstr(l, "fatal:") ||
		     strstr(l, "[ERROR]") || strstr(l, "unknown variable") ||
		     strstr(l, "unknown option")) && !benign(l))
			return l;
		if (nl)
			*nl = '\n';
	}
	return NULL;
}

static int add(json_t *cases, const char *id, int verdict, const char *msg)
{
	return json_array_append_new(cases, json_pack("{s:s, s:i, s:s?}", "id", id,
						      "verdict", verdict,
						      "message", msg)) ? -ENOMEM : 0;
}

/* Run `cmd` in the root as node `host`; `grace_ms` > 0: a program still
 * running then has read its configuration (a daemon in the foreground);
 * `rc_counts`: a non-zero exit fails too (Slurm's clients exit 1 when no
 * controller answers: their lines decide) */
static int run_in(json_t *cases, const char *root, const char *host,
		  const char *id, const char *const *cmd, long grace_ms,
		  int rc_counts, const char *want)
{
	const char *argv[24];
	char proc[PATH_MAX + 16], *out = NULL, *bad, msg[600];
	struct timespec dl;
	size_t n = 0;
	int st = 0, r;

	snprintf(proc, sizeof(proc), "--mount-proc=%s/proc", root);
	argv[n++] = "unshare";
	argv[n++] = "--mount";
	argv[n++] = "--uts";
	argv[n++] = "--pid";
	argv[n++] = "--fork";
	argv[n++] = proc;
	argv[n++] = "sh";
	argv[n++] = "-c";
	/* the image's temporary directory, not the host's TMPDIR */
	argv[n++] = "h=$1; r=$2; shift 2; hostname \"$h\" && TMPDIR=/tmp exec chroot \"$r\" \"$@\"";
	argv[n++] = "sh";
	argv[n++] = host;
	argv[n++] = root;
	for (size_t i = 0; cmd[i] && n < NF_ARRAY_SIZE(argv) - 1; i++)
		argv[n++] = cmd[i];
	argv[n] = NULL;
	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_sec += (grace_ms > 0 ? grace_ms : RUN_MS) / 1000;
	r = nf_spawn_capture(argv, NULL, &dl, &out, &st);
	if (r == NF_E_TIMEOUT && grace_ms > 0) {
		/* still running at the end of its grace time (killed now):
		 * it read its configuration without a fatal error */
		return add(cases, id, NF_V_PASS, "read its configuration and kept running");
	}
	if (r) {
		snprintf(msg, sizeof(msg), "could not run %s in the image: %s",
			 cmd[0], nf_strerror(r));
		free(out);
		return add(cases, id, NF_V_FAIL, msg);
	}
	if ((bad = first_error(out))) {
		snprintf(msg, sizeof(msg), "%s: %.500s", cmd[0], bad);
		r = add(cases, id, NF_V_FAIL, msg);
	} else if (st && grace_ms <= 0 && rc_counts) {
		snprintf(msg, sizeof(msg), "%s exited %d: %.400s", cmd[0], st, out);
		r = add(cases, id, NF_V_FAIL, msg);
	} else if (want && !strstr(out ? out : "", want)) {
		snprintf(msg, sizeof(msg), "%s ran but never says '%s': a plugin "
			 "the image lists did not load", cmd[0], want);
		r = add(cases, id, NF_V_FAIL, msg);
	} else {
		r = add(cases, id, NF_V_PASS, NULL);
	}
	free(out);
	return r;
}

/* The cluster part a static check parses: the inventory's, or a stand-in
 * of one node of this role.  *host: a node of this role */
static int cluster_conf(struct nf_ctx *ctx, const char *root, const json_t *prof,
			const char *inventory, const struct nf_site *site,
			char *host, size_t hsz)
{
	const char *role = json_string_value(json_object_get(prof, "role"));
	const json_t *slurm = json_object_get(prof, "slurm");
	struct nf_buf b = { 0 };
	json_t *cl = NULL, *e;
	char *path;
	size_t i;
	int r;

	snprintf(host, hsz, "%s-check", role ? role : "node");
	if (inventory) {
		if ((r = nf_cluster_load(ctx, inventory, site, &cl)))
			return r;
		json_array_foreach(json_object_get(cl, "roles"), i, e) {
			char **names = NULL;
			size_t nn = 0;

			if (strcmp(json_string_value(json_object_get(e, "role")), role ?: ""))
				continue;
			if (!nf_hostlist_expand(json_string_value(json_object_get(e, "nodes")),
						&names, &nn, 0) && nn)
				snprintf(host, hsz, "%s", names[0]);
			nf_strv_free(names, nn);
		}
		r = nf_cluster_slurm_conf(ctx, cl, &b);
		json_decref(cl);
		if (r) {
			nf_buf_free(&b);
			return r;
		}
	} else {
		json_t *one = json_pack("{s:[{s:s,s:s}], s:[{s:s, s:s, s:O?, s:O?, s:b}]}",
					"controllers", "name", "nodeforge-check",
					"ip", "127.0.0.1", "roles", "role", role ?: "node",
					"nodes", host, "node", json_object_get(slurm, "node"),
					"gres", json_object_get(slurm, "gres"), "slurmd", 1);

		if (!one)
			return -ENOMEM;
		r = nf_cluster_slurm_conf(ctx, one, &b);
		json_decref(one);
		if (r) {
			nf_buf_free(&b);
			return r;
		}
	}
	if (!(path = nf_asprintf("%s" NF_CLUSTER_CONF, root))) {
		nf_buf_free(&b);
		return -ENOMEM;
	}
	r = b.err ? -ENOMEM : nf_write_atomic(ctx, path, b.s ? b.s : "", b.len, 0644);
	free(path);
	nf_buf_free(&b);
	return r;
}

int nf_ci_daemons(struct nf_ctx *ctx, const char *root, const char *inventory,
		  const struct nf_site *site, json_t **out)
{
	struct nf_profile *p = NULL;
	const json_t *prof;
	json_t *cases = json_array();
	char *path, host[128];
	int r = 0, slurmdbd = 0;

	*out = NULL;
	if (!cases)
		return -ENOMEM;
	if (geteuid() != 0) {
		r = add(cases, "daemons", NF_V_SKIP, "needs root (chroot and "
			"namespaces to run the image's own programs)");
		goto done;
	}
	if (!(path = nf_asprintf("%s/etc/nodeforge/profile.json", root)))
		goto nomem;
	r = nf_profile_load_json(ctx, path, &p);
	free(path);
	if (r)
		goto fail;
	prof = nf_profile_json(p);
	slurmdbd = nf_profile_runs(prof, "slurmdbd");
	if (exists(root, "etc/slurm/slurm.conf") && exists(root, "usr/bin/scontrol")) {
		if ((r = cluster_conf(ctx, root, prof, inventory, site, host,
				      sizeof(host))))
			goto fail;
		if ((r = run_in(cases, root, host, "slurm.conf",
				(const char *const[]){ "scontrol", "show", "config",
						       NULL }, 0, 0, NULL)))
			goto fail;
		/* with pyxis listed, srun --help must show its options */
		if (exists(root, "etc/slurm/plugstack.conf") &&
		    exists(root, "usr/bin/srun") &&
		    (r = run_in(cases, root, host, "plugstack.conf",
				(const char *const[]){ "srun", "--help", NULL }, 0, 1,
				json_object_get(json_object_get(prof, "containers"),
						"pyxis") ? "--container-image" : NULL)))
			goto fail;
	}
	if (slurmdbd && exists(root, "usr/sbin/slurmdbd") &&
	    exists(root, "etc/slurm/slurmdbd.conf") &&
	    (r = run_in(cases, root, "localhost", "slurmdbd.conf",
			(const char *const[]){ "slurmdbd", "-D", NULL }, 3000, 1, NULL)))
		goto fail;
	if (exists(root, "usr/sbin/chronyd") && exists(root, "etc/chrony/chrony.conf") &&
	    (r = run_in(cases, root, "localhost", "chrony.conf",
			(const char *const[]){ "chronyd", "-p", "-f",
					       "/etc/chrony/chrony.conf", NULL }, 0, 1, NULL)))
		goto fail;
	if (exists(root, "usr/sbin/mariadbd") &&
	    (r = run_in(cases, root, "localhost", "mariadb",
			(const char *const[]){ "mariadbd", "--help", "--verbose",
					       "--user=mysql", NULL }, 0, 1, NULL)))
		goto fail;
	goto done;
nomem:
	r = -ENOMEM;
fail:
	json_decref(cases);
	nf_profile_free(p);
	return r;
done:
	nf_profile_free(p);
	*out = cases;
	return r;
}
