/* SPDX-License-Identifier: MIT */
/*
 * What a node of a role with Slurm needs around its daemons: the
 * directories they write (tmpfiles.d), the first-boot gate each daemon
 * waits for, the state that must outlive a reboot, and the static checks
 * nodeforge ci runs with the image's own Slurm programs.
 */
#include "slurm_int.h"

/* The slurm daemons the verifier gates, where the role runs them */
static const char *const gated_daemons[] = { "slurmd", "slurmctld", "slurmdbd" };

/* The directories a role's slurm daemons write must exist, with their
 * owners, on every boot (a network-booted root is the image again each
 * time, and a profile may move them off the packages' paths): a
 * tmpfiles.d file from slurm.conf's own values.  A directory the system
 * owns is never handed to SlurmUser (a LogFile directly in /var/log). */
static const char *const system_dirs[] = {
	"/", "/etc", "/home", "/opt", "/run", "/srv", "/tmp", "/usr", "/var",
	"/var/lib", "/var/log", "/var/run", "/var/spool", "/var/tmp",
};

/* A user name tmpfiles.d and systemd take as it is */
static int user_ok(const char *u)
{
	return *u && strlen(u) < 32 && u[0] != '-' &&
	       strspn(u, "abcdefghijklmnopqrstuvwxyz"
		      "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") == strlen(u);
}

static int is_system_dir(const char *p)
{
	for (size_t i = 0; i < NF_ARRAY_SIZE(system_dirs); i++)
		if (!strcmp(p, system_dirs[i]))
			return 1;
	return 0;
}

/* One tmpfiles.d line: the first owner asked for a directory wins,
 * except that SlurmUser wins over root (root writes anywhere) */
static int slurm_dir(struct nf_apply *a, json_t *dirs, const char *key,
		     const char *path, int parent, const char *owner,
		     const char *mode)
{
	char buf[512];
	const char *p = path;
	json_t *have, *e;

	if (!path)
		return 0;
	if (!nf_apply_path_ok(path))
		return nf_fail(a->ctx, NF_E_INVALID, "slurm %s '%s' is not an "
			       "absolute path a tmpfiles.d line can hold", key,
			       path);
	if (parent) {
		snprintf(buf, sizeof(buf), "%s", path);
		*strrchr(buf, '/') = '\0';
		p = *buf ? buf : "/";
	}
	if (is_system_dir(p)) {
		if (parent)
			return 0;
		return nf_fail(a->ctx, NF_E_INVALID, "slurm %s '%s' is a "
			       "system directory: give the daemon its own",
			       key, path);
	}
	have = json_object_get(dirs, p);
	if (have && (strcmp(json_string_value(json_object_get(have, "owner")),
			    "root") || !strcmp(owner, "root")))
		return 0;
	e = json_pack("{s:s,s:s,s:s}", "owner", owner, "mode", mode, "key", key);
	if (!e || json_object_set_new(dirs, p, e))
		return -ENOMEM;
	return 0;
}

int nf_slurm_apply_dirs(struct nf_apply *a)
{
	const json_t *slurm = json_object_get(a->prof, "slurm");
	const json_t *conf = json_object_get(slurm, "conf");
	const json_t *dbd = json_object_get(slurm, "dbd");
	const char *user = json_string_value(json_object_get(conf, "SlurmUser"));
	const char *dbd_user = json_string_value(json_object_get(dbd, "SlurmUser"));
	json_t *dirs = json_object();
	struct nf_buf b = { 0 };
	const char *k;
	json_t *v;
	int r = 0;

	if (!dirs)
		return -ENOMEM;
	/* Slurm's own default SlurmUser is root */
	user = user ? user : "root";
	dbd_user = dbd_user ? dbd_user : user;
	if (!user_ok(user) || !user_ok(dbd_user)) {
		r = nf_fail(a->ctx, NF_E_INVALID, "SlurmUser '%s' is not a user "
			    "name", user_ok(user) ? dbd_user : user);
		goto out;
	}
#define STR(o, key) json_string_value(json_object_get((o), (key)))
	if (nf_apply_has_daemon(a, "slurmctld") &&
	    ((r = slurm_dir(a, dirs, "StateSaveLocation",
			    STR(conf, "StateSaveLocation"), 0, user, "0700")) ||
	     (r = slurm_dir(a, dirs, "SlurmctldLogFile",
			    STR(conf, "SlurmctldLogFile"), 1, user, "0755"))))
		goto out;
	if (nf_apply_has_daemon(a, "slurmd") &&
	    ((r = slurm_dir(a, dirs, "SlurmdSpoolDir",
			    STR(conf, "SlurmdSpoolDir"), 0, "root", "0755")) ||
	     (r = slurm_dir(a, dirs, "SlurmdLogFile",
			    STR(conf, "SlurmdLogFile"), 1, "root", "0755"))))
		goto out;
	if (nf_apply_has_daemon(a, "slurmdbd") &&
	    (r = slurm_dir(a, dirs, "LogFile", STR(dbd, "LogFile"), 1,
			   dbd_user, "0755")))
		goto out;
#undef STR
	if (!json_object_size(dirs))
		goto out;
	nf_apply_header(&b, "#", "slurm");
	nf_buf_printf(&b, "# The directories this role's slurm daemons write, "
		      "from slurm.conf\n");
	json_object_foreach(dirs, k, v) {
		const char *owner = json_string_value(json_object_get(v, "owner"));

		nf_buf_printf(&b, "# %s\nd %s %s %s %s -\n",
			      json_string_value(json_object_get(v, "key")), k,
			      json_string_value(json_object_get(v, "mode")),
			      owner, owner);
	}
	r = nf_apply_write_buf(a, "/etc/tmpfiles.d/nodeforge-slurm.conf", &b,
			       0644, 0, 0);
out:
	json_decref(dirs);
	return r;
}

/* plugstack.conf: the profile's SPANK plugins, pyxis among them */
int nf_slurm_apply_plugstack(struct nf_apply *a, const json_t *sec)
{
	const json_t *ps = json_object_get(sec, "plugstack");
	const json_t *px = json_object_get(json_object_get(a->prof, "containers"),
					   "pyxis");
	struct nf_buf b = { 0 };
	size_t i;
	json_t *p;

	if (!json_array_size(ps) && !px)
		return 0;
	nf_apply_header(&b, "#", "slurm");
	json_array_foreach(ps, i, p) {
		const char *c = json_string_value(json_object_get(p, "control"));
		const char *k;
		json_t *v;

		nf_buf_printf(&b, "%s %s", c ? c : "required",
			      json_string_value(json_object_get(p, "path")));
		json_object_foreach(json_object_get(p, "args"), k, v) {
			if (json_is_string(v))
				nf_buf_printf(&b, " %s=%s", k, json_string_value(v));
			else if (json_is_integer(v))
				nf_buf_printf(&b, " %s=%lld", k,
					      (long long)json_integer_value(v));
		}
		nf_buf_printf(&b, "\n");
	}
	nf_buf_printf(&b, "include /etc/slurm/plugstack.conf.d/*.conf\n");
	return nf_apply_write_buf(a, "/etc/slurm/plugstack.conf", &b, 0644, 0, 0);
}

size_t nf_slurm_gate_units(const struct nf_apply *a, const json_t *sec,
			   struct nf_gate_unit *out, size_t max)
{
	size_t n = 0;

	(void)sec;
	for (size_t i = 0; i < NF_ARRAY_SIZE(gated_daemons) && n < max; i++)
		if (nf_apply_has_daemon(a, gated_daemons[i]))
			out[n++] = (struct nf_gate_unit){ gated_daemons[i],
							  NF_GATE_GUARDS };
	return n;
}

/* slurmctld's StateSaveLocation: its queue and job state */
size_t nf_slurm_durable_dirs(const struct nf_apply *a, const json_t *sec,
			     const char **out, size_t max)
{
	const char *state = json_string_value(json_object_get(
		json_object_get(sec, "conf"), "StateSaveLocation"));

	if (!max || !nf_apply_has_daemon(a, "slurmctld") ||
	    !nf_apply_path_ok(state))
		return 0;
	out[0] = state;
	return 1;
}

/* slurm.conf (scontrol show config, every role with Slurm, with the
 * cluster part ci writes), plugstack.conf (srun --help: the SPANK plugins
 * load; with pyxis, its --container-image) and slurmdbd.conf (slurmdbd
 * -D for 3 s, roles that run slurmdbd) */
int nf_slurm_daemon_checks(struct nf_daemon_ci *d, const json_t *sec)
{
	char host[128];
	int r;

	(void)sec;
	if (nf_daemon_ci_has(d, "etc/slurm/slurm.conf") &&
	    nf_daemon_ci_has(d, "usr/bin/scontrol")) {
		if ((r = d->cluster_conf(d, host, sizeof(host))))
			return r;
		if ((r = d->run(d, host, "slurm.conf",
				(const char *const[]){ "scontrol", "show", "config",
						       NULL }, 0, 0, NULL)))
			return r;
		if (nf_daemon_ci_has(d, "etc/slurm/plugstack.conf") &&
		    nf_daemon_ci_has(d, "usr/bin/srun") &&
		    (r = d->run(d, host, "plugstack.conf",
				(const char *const[]){ "srun", "--help", NULL }, 0, 1,
				json_object_get(json_object_get(d->prof, "containers"),
						"pyxis") ? "--container-image" : NULL)))
			return r;
	}
	if (nf_profile_runs(d->prof, "slurmdbd") &&
	    nf_daemon_ci_has(d, "usr/sbin/slurmdbd") &&
	    nf_daemon_ci_has(d, "etc/slurm/slurmdbd.conf"))
		return d->run(d, "localhost", "slurmdbd.conf",
			      (const char *const[]){ "slurmdbd", "-D", NULL }, 3000,
			      1, NULL);
	return 0;
}
