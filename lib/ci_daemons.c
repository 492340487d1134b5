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
 * Which programs run is each facet's to say (its daemon_checks hook:
 * slurm.conf, plugstack.conf and slurmdbd.conf in lib/facets/slurm_node.c,
 * chrony.conf in lib/facets/time.c, mariadb in lib/facets/mariadb.c);
 * this file runs them.
 */
#include "internal.h"

#include <ctype.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define RUN_MS 20000

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

/* ci's side of struct nf_daemon_ci: a case per program run */
static int run_cb(struct nf_daemon_ci *d, const char *host, const char *id,
		  const char *const *argv, long grace_ms, int rc_counts,
		  const char *want)
{
	return run_in(d->data, d->root, host, id, argv, grace_ms, rc_counts, want);
}

static int cluster_cb(struct nf_daemon_ci *d, char *host, size_t hsz)
{
	return cluster_conf(d->ctx, d->root, d->prof, d->inventory, d->site,
			    host, hsz);
}

int nf_ci_daemons_run(struct nf_ctx *ctx, const char *root, const char *inventory,
		      const struct nf_site *site,
		      int (*run)(struct nf_daemon_ci *d, const char *host,
				 const char *id, const char *const *argv,
				 long grace_ms, int rc_counts, const char *want),
		      void *data)
{
	struct nf_profile *p = NULL;
	struct nf_daemon_ci d = {
		.ctx = ctx, .root = root, .inventory = inventory, .site = site,
		.data = data, .run = run, .cluster_conf = cluster_cb,
	};
	const char *distro;
	char *path;
	int r;

	if (!(path = nf_asprintf("%s/etc/nodeforge/profile.json", root)))
		return -ENOMEM;
	r = nf_profile_load_json(ctx, path, &p);
	free(path);
	if (r)
		return r;
	d.prof = nf_profile_json(p);
	distro = json_string_value(json_object_get(json_object_get(d.prof, "site"),
						   "distro"));
	d.el = distro && nf_distro_is_el(distro);
	for (size_t i = 0; !r && i < nf_nfacets; i++) {
		const struct nf_facet *f = nf_facets[i];

		if (f->daemon_checks)
			r = f->daemon_checks(&d, json_object_get(d.prof, f->name));
	}
	nf_profile_free(p);
	return r;
}

int nf_ci_daemons(struct nf_ctx *ctx, const char *root, const char *inventory,
		  const struct nf_site *site, json_t **out)
{
	json_t *cases = json_array();
	int r = 0;

	*out = NULL;
	if (!cases)
		return -ENOMEM;
	if (geteuid() != 0)
		r = add(cases, "daemons", NF_V_SKIP, "needs root (chroot and "
			"namespaces to run the image's own programs)");
	else
		r = nf_ci_daemons_run(ctx, root, inventory, site, run_cb, cases);
	if (r) {
		json_decref(cases);
		return r;
	}
	*out = cases;
	return 0;
}
