/* SPDX-License-Identifier: MIT */
/*
 * slurm: slurm.conf, gres.conf (typed GRES, NVLink Links=), slurmdbd.conf
 * settings and the node's hardware shape.  The cluster name comes from the
 * site; the controllers, the accounting host and the node names from the
 * inventory (lib/cluster.c), never from a role profile.
 */
#include "internal.h"
#include "slurm_int.h"

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

static const struct nf_field fields[] = {
	{ "daemons", NF_T_STRLIST },
	{ "conf", NF_T_MAP },
	{ "dbd", NF_T_MAP },
	{ "node", NF_T_OBJ, node_fields },
	{ "gres", NF_T_OBJLIST, gres_fields },
	{ "plugstack", NF_T_OBJLIST, plugstack_fields },
	{ "partitions", NF_T_OBJLIST, nf_partition_fields },
	{ "partition_defaults", NF_T_MAP },
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

/* Does slurmdbd archive anything (an Archive* key set to yes)? */
static int dbd_archives(const json_t *dbd)
{
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)dbd, k, v)
		if (!strncmp(k, "Archive", 7) && strcmp(k, "ArchiveDir") &&
		    strcmp(k, "ArchiveScript") &&
		    (json_is_true(v) || (json_is_string(v) &&
		     !strcasecmp(json_string_value(v), "yes"))))
			return 1;
	return 0;
}

/* Where files do not outlive a reboot (Debian 13 mounts /tmp as tmpfs) */
static int volatile_dir(const char *d)
{
	static const char *const v[] = { "/tmp", "/run", "/dev/shm", "/var/run" };

	for (size_t i = 0; i < NF_ARRAY_SIZE(v); i++)
		if (!strncmp(d, v[i], strlen(v[i])) &&
		    (!d[strlen(v[i])] || d[strlen(v[i])] == '/'))
			return 1;
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
	{
		const json_t *dbd = json_object_get(sec, "dbd");
		const char *dir = json_string_value(json_object_get(dbd, "ArchiveDir"));

		if (dbd_archives(dbd) && (!dir || volatile_dir(dir)))
			nf_lint_at(l, dir ? "slurm.dbd.ArchiveDir" : "slurm.dbd",
				   NF_SEV_WARNING,
				   "slurmdbd archives to ArchiveDir=%s%s, which does "
				   "not outlive a reboot (/tmp is a tmpfs on Debian "
				   "13): set slurm.dbd.ArchiveDir on persistent storage "
				   "(/var/lib/slurm/archive) or turn the Archive* "
				   "settings off", dir ? dir : "/tmp",
				   dir ? "" : " (slurmdbd's default)");
	}
	/* keys the reference material gets wrong; the real Slurm of the
	 * image refuses them (nodeforge ci, static.daemons) */
	if (json_object_get(conf, "MungeSocketPath"))
		nf_lint_at(l, "slurm.conf.MungeSocketPath", NF_SEV_ERROR,
			   "MungeSocketPath is not a slurm.conf key: the socket is "
			   "AuthInfo=socket=PATH (the default is munge's own)");
	if (json_object_get(conf, "TRESBillingWeights"))
		nf_lint_at(l, "slurm.conf.TRESBillingWeights", NF_SEV_ERROR,
			   "TRESBillingWeights is a partition option: put it in "
			   "slurm.partition_defaults (PartitionName=DEFAULT)");
	v = conf_str(conf, "PrologFlags");
	if (v && has_word(v, "nohold") && (has_word(v, "contain") || has_word(v, "x11")))
		nf_lint_at(l, "slurm.conf.PrologFlags", NF_SEV_ERROR,
			   "PrologFlags=%s: Slurm refuses NoHold with Contain or X11", v);
	if (json_is_integer(json_object_get(conf, "EpilogMsgTime")) &&
	    json_integer_value(json_object_get(conf, "EpilogMsgTime")) < 1000)
		nf_lint_at(l, "slurm.conf.EpilogMsgTime", NF_SEV_WARNING,
			   "EpilogMsgTime=%lld is in microseconds (default 2000)",
			   (long long)json_integer_value(json_object_get(conf, "EpilogMsgTime")));
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

/* One Slurm "Key=Value": quoted when the value has blanks */
static void conf_kv(struct nf_buf *b, const char *k, const json_t *v)
{
	if (json_is_boolean(v)) {
		nf_buf_printf(b, "%s=%s\n", k, json_is_true(v) ? "yes" : "no");
	} else if (json_is_integer(v)) {
		nf_buf_printf(b, "%s=%lld\n", k, (long long)json_integer_value(v));
	} else if (json_is_real(v)) {
		nf_buf_printf(b, "%s=%g\n", k, json_real_value(v));
	} else if (json_is_string(v)) {
		const char *s = json_string_value(v);

		nf_buf_printf(b, strpbrk(s, " \t") ? "%s=\"%s\"\n" : "%s=%s\n",
			      k, s);
	}
}

static int conf_ok(struct nf_apply *a, const char *where, const char *k,
		   const json_t *v)
{
	const char *s = json_string_value(v);

	if (strpbrk(k, "= \t\n#") || (s && strpbrk(s, "\n\"#")) ||
	    !(json_is_string(v) || json_is_number(v) || json_is_boolean(v)))
		return nf_fail(a->ctx, NF_E_INVALID,
			       "%s.%s has a value Slurm's config syntax cannot "
			       "hold", where, k);
	return 0;
}

/* Every node's slurm.conf is the same file: the profiles' settings, what
 * every partition gets, and the cluster part (controllers, nodes,
 * partitions) included from cluster.conf, which comes from the inventory
 * (nodeforge pxe renders it into the boot tree; nodeforge-cluster.service
 * fetches it at boot; build --inventory bakes a copy) */
static int write_slurm_conf(struct nf_apply *a, const json_t *sec)
{
	const json_t *conf = json_object_get(sec, "conf");
	const json_t *pdef = json_object_get(sec, "partition_defaults");
	const char *cluster = json_string_value(json_object_get(a->site, "cluster"));
	struct nf_buf b = { 0 };
	const char *k;
	json_t *v;
	int r;

	if (cluster && (r = nf_render_check(a->ctx, "slurm.conf", "cluster name",
					     cluster, NF_CHARS_NAME)))
		return r;
	nf_apply_header(&b, "#", "slurm");
	if (cluster)
		nf_buf_printf(&b, "ClusterName=%s\n", cluster);
	json_object_foreach((json_t *)conf, k, v) {
		if (conf_ok(a, "slurm.conf", k, v)) {
			nf_buf_free(&b);
			return NF_E_INVALID;
		}
		conf_kv(&b, k, v);
	}
	if (json_object_size(pdef)) {
		nf_buf_printf(&b, "PartitionName=DEFAULT");
		json_object_foreach((json_t *)pdef, k, v) {
			if (conf_ok(a, "slurm.partition_defaults", k, v)) {
				nf_buf_free(&b);
				return NF_E_INVALID;
			}
			nf_buf_printf(&b, " ");
			conf_kv(&b, k, v);
			b.len--; /* conf_kv ends the line */
		}
		nf_buf_printf(&b, "\n");
	}
	nf_buf_printf(&b, "# controllers, nodes and partitions: from the "
		      "inventory, fetched at boot\nInclude " NF_CLUSTER_CONF "\n");
	if ((r = nf_apply_write_buf(a, "/etc/slurm/slurm.conf", &b, 0644, 0, 0)))
		return r;
	if (a->cluster && a->cluster_slurm_conf) {
		if ((r = a->cluster_slurm_conf(a->ctx, a->cluster, &b)) ||
		    (r = nf_apply_write_buf(a, NF_CLUSTER_CONF, &b, 0644, 0, 0))) {
			nf_buf_free(&b);
			return r;
		}
	}
	return 0;
}

/* Every boot, before the Slurm daemons and the verifier: the cluster part
 * of slurm.conf and the hosts from the boot server (nodeforge pxe renders
 * them from the inventory).  A node booted from its disk without
 * nodeforge.server= keeps the copy it has. */
static int write_cluster_unit(struct nf_apply *a)
{
	struct nf_buf b = { 0 };

	nf_apply_header(&b, "#", "slurm");
	nf_buf_printf(&b,
		"[Unit]\n"
		"Description=nodeforge: the cluster's controllers, nodes and hosts "
		"from the boot server\n"
		"Documentation=man:nodeforge-cluster(1)\n"
		"Wants=network-online.target\n"
		"After=network-online.target\n"
		"Before=nodeforge-verify.service slurmd.service slurmctld.service "
		"slurmdbd.service\n"
		"ConditionKernelCommandLine=nodeforge.server\n"
		"\n"
		"[Service]\n"
		"Type=oneshot\n"
		"RemainAfterExit=yes\n"
		"ExecStart=/usr/bin/nodeforge cluster fetch --wait 120\n"
		"TimeoutStartSec=180\n"
		"\n"
		"[Install]\n"
		"WantedBy=multi-user.target\n");
	return nf_apply_unit(a, "nodeforge-cluster.service", &b);
}

/* The first-boot unit that renders gres.auto.json into gres.conf: after
 * the services that bring the GPUs and their NVLink fabric up and the
 * one that fetches cluster.conf, before anything that reads gres.conf */
static int write_gres_unit(struct nf_apply *a)
{
	const char *fm = nf_fabric_manager_unit(a->prof);
	struct nf_buf b = { 0 };

	nf_apply_header(&b, "#", "slurm");
	nf_buf_printf(&b,
		"[Unit]\n"
		"Description=nodeforge first-boot rendering of gres.conf from this "
		"node's GPU topology\n"
		"Documentation=man:nodeforge-gres(1)\n"
		"ConditionPathExists=/etc/nodeforge/gres.auto.json\n"
		"Before=nodeforge-verify.service slurmd.service\n"
		/* the node's line in cluster.conf may give its GPUs' type */
		"After=nodeforge-cluster.service\n");
	if (nf_gpu_persistence_unit(a->prof))
		nf_buf_printf(&b, "After=%s.service\n", nf_gpu_persistence_unit(a->prof));
	if (fm)
		nf_buf_printf(&b, "After=%s.service\n", fm);
	nf_buf_printf(&b,
		"\n"
		"[Service]\n"
		"Type=oneshot\n"
		"RemainAfterExit=yes\n"
		"ExecStart=/usr/bin/nodeforge gres render\n"
		"TimeoutStartSec=120\n"
		"\n"
		"[Install]\n"
		"WantedBy=multi-user.target\n");
	return nf_apply_unit(a, "nodeforge-gres.service", &b);
}

/* gres.conf: explicit entries now.  Entries whose Cores= or Links= say
 * "auto" depend on the node's own topology: they are kept in
 * /etc/nodeforge/gres.auto.json and rendered into gres.conf at first boot
 * by 'nodeforge gres render' (nodeforge-gres.service, ordered before
 * slurmd and the verifier); the comment lines tell an operator where they
 * come from */
static int write_gres_conf(struct nf_apply *a, const json_t *sec)
{
	const json_t *gres = json_object_get(sec, "gres");
	json_t *autos = json_array();
	struct nf_buf b = { 0 };
	json_t *g;
	size_t i;
	int r;

	if (!autos)
		return -ENOMEM;
	nf_apply_header(&b, "#", "slurm");
	json_array_foreach(gres, i, g) {
		const char *name = json_string_value(json_object_get(g, "name"));
		const char *type = json_string_value(json_object_get(g, "type"));
		const char *file = json_string_value(json_object_get(g, "file"));
		const char *cores = json_string_value(json_object_get(g, "cores"));
		const char *links = json_string_value(json_object_get(g, "links"));
		json_int_t n = json_integer_value(json_object_get(g, "count"));

		if ((cores && !strcmp(cores, "auto")) ||
		    (links && !strcmp(links, "auto"))) {
			json_array_append(autos, g);
			nf_buf_printf(&b, "# Name=%s%s%s File=%s: Cores=/Links= "
				      "from this node's topology at first boot "
				      "(nodeforge gres render)\n",
				      name, type ? " Type=" : "", type ? type : "",
				      file ? file : "-");
			continue;
		}
		nf_buf_printf(&b, "Name=%s", name);
		if (type)
			nf_buf_printf(&b, " Type=%s", type);
		if (file)
			nf_buf_printf(&b, " File=%s", file);
		else if (n)
			nf_buf_printf(&b, " Count=%lld", (long long)n);
		if (cores)
			nf_buf_printf(&b, " Cores=%s", cores);
		if (links)
			nf_buf_printf(&b, " Links=%s", links);
		nf_buf_printf(&b, "\n");
	}
	if (json_array_size(autos)) {
		char *doc = json_dumps(autos, JSON_INDENT(2));
		struct nf_buf d = { 0 };

		nf_buf_printf(&d, "%s\n", doc ? doc : "[]");
		free(doc);
		if ((r = nf_apply_write_buf(a, "/etc/nodeforge/gres.auto.json", &d,
					    0644, 0, 0)) ||
		    (r = write_gres_unit(a)))
			goto out;
	}
	r = nf_apply_write_buf(a, "/etc/slurm/gres.conf", &b, 0644, 0, 0);
out:
	nf_buf_free(&b);
	json_decref(autos);
	return r;
}

/* slurmdbd.conf: must be owned by SlurmUser and 0600.  StoragePass is a
 * secret: it arrives at first boot, never in the image. */
static int write_dbd_conf(struct nf_apply *a, const json_t *dbd)
{
	const char *user = json_string_value(json_object_get(dbd, "SlurmUser"));
	struct nf_buf b = { 0 };
	uid_t uid = 0;
	gid_t gid = 0;
	const char *k, *dir;
	unsigned m = nf_err_mark(a->ctx);
	json_t *v;
	int r;

	if (user && nf_apply_user(a, user, &uid, &gid))
		uid = 0, gid = 0;
	nf_err_drop(a->ctx, m);
	nf_apply_header(&b, "#", "slurm");
	/* slurmdbd runs where this file is: "localhost" is the name slurmdbd
	 * accepts whatever the node is called; slurm.conf's
	 * AccountingStorageHost names the node (cluster.conf) */
	if (!json_object_get(dbd, "DbdHost"))
		nf_buf_printf(&b, "DbdHost=localhost\n");
	json_object_foreach((json_t *)dbd, k, v) {
		if (conf_ok(a, "slurm.dbd", k, v)) {
			nf_buf_free(&b);
			return NF_E_INVALID;
		}
		if (!strcmp(k, "StoragePass"))
			continue;
		conf_kv(&b, k, v);
	}
	nf_buf_printf(&b, "# StoragePass is a secret: nodeforge delivers it "
		      "at first boot, never in the image\n");
	if ((r = nf_apply_write_buf(a, "/etc/slurm/slurmdbd.conf", &b, 0600,
				    uid, gid)))
		return r;
	/* slurmdbd writes its archives there as SlurmUser; it does not
	 * create the directory */
	dir = json_string_value(json_object_get(dbd, "ArchiveDir"));
	if (!dir || !dbd_archives(dbd))
		return 0;
	if (*dir != '/' || strpbrk(dir, " \t\n"))
		return nf_fail(a->ctx, NF_E_INVALID, "slurm.dbd.ArchiveDir '%s' "
			       "is not an absolute path", dir);
	nf_apply_header(&b, "#", "slurm");
	nf_buf_printf(&b, "d %s 0700 %s %s -\n", dir, user ? user : "root",
		      user ? user : "root");
	if ((r = nf_apply_write_buf(a, "/etc/tmpfiles.d/nodeforge-slurmdbd.conf",
				    &b, 0644, 0, 0)))
		return r;
	/* and in the image itself: slurmdbd refuses to start (and to read
	 * its configuration) when the directory is not there, before
	 * tmpfiles runs on a copy that skipped it */
	return nf_apply_mkdir(a, dir, 0700, uid, gid);
}

/* systemd's unit name of a mount point: "/var/lib/slurm/slurmctld" ->
 * "var-lib-slurm-slurmctld"; -1 for a path this does not escape */
static int mount_unit_name(const char *path, char *out, size_t outsz)
{
	size_t n = 0;

	if (*path != '/' || strstr(path, "//") || strstr(path, "/.") ||
	    path[strlen(path) - 1] == '/')
		return -1;
	for (const char *p = path + 1; *p; p++) {
		const char *add = NULL;
		char one[2] = { *p, 0 };

		if (*p == '/')
			add = "-";
		else if (*p == '-')
			add = "\\x2d";
		else if (strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.", *p))
			add = one;
		else
			return -1;
		if (n + strlen(add) + 1 > outsz)
			return -1;
		memcpy(out + n, add, strlen(add));
		n += strlen(add);
	}
	out[n] = '\0';
	return n ? 0 : -1;
}

/* Two controllers share StateSaveLocation on the site's NFS export: the
 * controller image mounts it there before slurmctld starts */
static int write_state_mount(struct nf_apply *a, const json_t *sec)
{
	const json_t *ss = json_object_get(json_object_get(a->site, "slurm"), "state_save");
	const char *nfs = json_string_value(json_object_get(ss, "nfs"));
	const char *opts = json_string_value(json_object_get(ss, "options"));
	const char *dir = conf_str(json_object_get(sec, "conf"), "StateSaveLocation");
	char unit[256], path[300];
	struct nf_buf b = { 0 };
	int r;

	if (!nfs || !nf_apply_has_daemon(a, "slurmctld"))
		return 0;
	if (!dir || mount_unit_name(dir, unit, sizeof(unit)) ||
	    !strchr(nfs, ':') || strpbrk(nfs, " \t\n") || (opts && strpbrk(opts, " \t\n")))
		return nf_fail(a->ctx, NF_E_INVALID, "site slurm.state_save: cannot "
			       "mount '%s' on StateSaveLocation '%s' (an NFS "
			       "SERVER:/EXPORT and an absolute path are needed)",
			       nfs, dir ? dir : "(unset)");
	nf_apply_header(&b, "#", "slurm");
	nf_buf_printf(&b, "[Unit]\nDescription=Slurm StateSaveLocation shared by "
		      "the controllers\nBefore=slurmctld.service\n"
		      "[Mount]\nWhat=%s\nWhere=%s\nType=nfs\nOptions=%s\n"
		      "[Install]\nRequiredBy=slurmctld.service\n", nfs, dir,
		      opts ? opts : "_netdev,hard,noatime");
	snprintf(path, sizeof(path), "/etc/systemd/system/%s.mount", unit);
	if ((r = nf_apply_write_buf(a, path, &b, 0644, 0, 0)))
		return r;
	/* the export's root is the directory slurmctld writes: tmpfiles
	 * gives it to SlurmUser once it is mounted (where the server squashes
	 * root, that fails harmlessly and the site owns the export as
	 * SlurmUser's uid) */
	nf_apply_header(&b, "#", "slurm");
	nf_buf_printf(&b, "[Unit]\nRequiresMountsFor=%s\n[Service]\n"
		      "ExecStartPre=-+/usr/bin/systemd-tmpfiles --create "
		      "/etc/tmpfiles.d/nodeforge-slurm.conf\n", dir);
	return nf_apply_write_buf(a, "/etc/systemd/system/slurmctld.service.d/"
				  "50-nodeforge-state.conf", &b, 0644, 0, 0);
}

static int apply(struct nf_apply *a, const json_t *sec)
{
	const json_t *dbd = json_object_get(sec, "dbd");
	int r;

	if ((r = write_slurm_conf(a, sec)) || (r = write_cluster_unit(a)) ||
	    (r = write_state_mount(a, sec)))
		return r;
	if (json_array_size(json_object_get(sec, "gres")) &&
	    (r = write_gres_conf(a, sec)))
		return r;
	if (dbd && nf_apply_has_daemon(a, "slurmdbd") &&
	    (r = write_dbd_conf(a, dbd)))
		return r;
	if ((r = nf_slurm_apply_plugstack(a, sec)))
		return r;
	return nf_slurm_apply_dirs(a);
}

/* ---- end of apply ---- */

/* ---- check: what the verifier checks (nodeforge verify) ---- */

static int check_conf_present(struct nf_vcheck *c, const json_t *sec)
{
	struct stat st;

	(void)sec;
	nf_v_expect(c, "/etc/slurm/slurm.conf");
	if (nf_v_stat(c, NF_VROOT, "/etc/slurm/slurm.conf", &st) == 0 && S_ISREG(st.st_mode)) {
		nf_v_seen(c, "present");
		return NF_V_PASS;
	}
	nf_v_seen(c, "missing");
	nf_v_remedy(c, "on the build host: nodeforge build %s, then boot this node from "
		    "the new image", nf_v_role(c));
	return NF_V_FAIL;
}

/* How many keys of `map` (but `skip`) the Key=Value text `buf` has
 * otherwise; the first four in `bad` */
static int conf_diff(const char *buf, const json_t *map, const char *skip,
		     char *bad, size_t badsz)
{
	char want[1024];
	const char *k;
	json_t *x;
	int n = 0;

	json_object_foreach((json_t *)map, k, x) {
		char *have = nf_v_conf_get(buf, k, "=");

		nf_v_json_str(x, want, sizeof(want));
		if ((!skip || strcmp(k, skip)) && (!have || strcasecmp(have, want)) &&
		    n++ < 4)
			snprintf(bad + strlen(bad), badsz - strlen(bad), "%s%s=%.60s",
				 *bad ? ", " : "", k, have ? have : "(unset)");
		free(have);
	}
	return n;
}

static int check_conf_values(struct nf_vcheck *c, const json_t *sec)
{
	const json_t *conf = json_object_get(sec, "conf");
	const char *cluster = json_string_value(json_object_get(
		json_object_get(nf_v_profile(c), "site"), "cluster"));
	char *buf = NULL, bad[768] = "";
	int n = 0;

	if (nf_v_read(c, NF_VROOT, "/etc/slurm/slurm.conf", 1 << 20, &buf, NULL))
		return NF_V_FAIL;
	nf_v_expect(c, "slurm.conf as the profile says");
	n = conf_diff(buf, conf, NULL, bad, sizeof(bad));
	if (cluster) {
		char *have = nf_v_conf_get(buf, "ClusterName", "=");

		if (!have || strcmp(have, cluster)) {
			if (n++ < 4)
				snprintf(bad + strlen(bad), sizeof(bad) - strlen(bad),
					 "%sClusterName=%s (site: %s)", *bad ? ", " : "",
					 have ? have : "(unset)", cluster);
		}
		free(have);
	}
	free(buf);
	if (!n) {
		nf_v_seen(c, "%zu settings match", json_object_size(conf));
		return NF_V_PASS;
	}
	nf_v_seen(c, "%s%s", bad, n > 4 ? " ..." : "");
	nf_v_remedy(c, "install the slurm.conf built for this cluster and scontrol reconfigure");
	return NF_V_FAIL;
}

/* On a live node: the cluster part slurm.conf includes is there and
 * names a controller; a node that runs slurmd is one of its nodes */
static int check_cluster(struct nf_vcheck *c, const json_t *sec)
{
	char *buf = NULL, host[256] = "", *hp = NULL;
	int slurmd = 0, found = 0;
	size_t i, len;
	json_t *v;

	json_array_foreach(json_object_get(sec, "daemons"), i, v)
		slurmd |= !strcmp(json_string_value(v) ?: "", "slurmd");
	nf_v_expect(c, "%s naming the controllers%s", NF_CLUSTER_CONF,
		    slurmd ? " and this node" : "");
	if (nf_v_read(c, NF_VROOT, NF_CLUSTER_CONF, 16 << 20, &buf, NULL)) {
		nf_v_remedy(c, "systemctl restart nodeforge-cluster (it fetches "
			    "cluster/slurm.conf from the boot server; render it "
			    "there with nodeforge pxe --inventory)");
		return NF_V_FAIL;
	}
	if (!strstr(buf, "SlurmctldHost=")) {
		free(buf);
		nf_v_seen(c, "no SlurmctldHost= line");
		nf_v_remedy(c, "give the inventory a node whose role runs slurmctld, "
			    "run nodeforge pxe, then systemctl restart nodeforge-cluster");
		return NF_V_FAIL;
	}
	if (slurmd && (hp = nf_v_node(c))) {
		snprintf(host, sizeof(host), "%s", hp);
		free(hp);
		found = nf_cluster_conf_node_line(buf, host, &len) != NULL;
		if (!found) {
			free(buf);
			nf_v_seen(c, "no NodeName= line names this node (%s)", host);
			nf_v_remedy(c, "add %s to the inventory with a role that runs "
				    "slurmd, run nodeforge pxe, then systemctl restart "
				    "nodeforge-cluster", host);
			return NF_V_FAIL;
		}
	}
	free(buf);
	nf_v_seen(c, found ? "present; names %s" : "present", host);
	return NF_V_PASS;
}

/* slurmdbd.conf as the profile says (StoragePass aside: a secret, never
 * in the profile), and its archives on storage that outlives a reboot */
static int check_dbd_conf(struct nf_vcheck *c, const json_t *sec)
{
	const json_t *dbd = json_object_get(sec, "dbd");
	char *buf = NULL, bad[512] = "";
	int n = 0;

	if (!json_object_size(dbd) || !nf_profile_runs(nf_v_profile(c), "slurmdbd"))
		return nf_v_skip(c, "this role runs no slurmdbd");
	nf_v_expect(c, "/etc/slurm/slurmdbd.conf as the profile says, archives "
		    "not on /tmp");
	if (nf_v_read(c, NF_VROOT, "/etc/slurm/slurmdbd.conf", 1 << 20, &buf, NULL)) {
		nf_v_remedy(c, "on the build host: nodeforge build %s, then boot this "
			    "node from the new image", nf_v_role(c));
		return NF_V_FAIL;
	}
	n = conf_diff(buf, dbd, "StoragePass", bad, sizeof(bad));
	if (!n && dbd_archives(dbd)) {
		char *dir = nf_v_conf_get(buf, "ArchiveDir", "=");

		if (!dir || volatile_dir(dir)) {
			n++;
			snprintf(bad, sizeof(bad), "archives to ArchiveDir=%s, lost "
				 "at reboot", dir ? dir : "/tmp (the default)");
		}
		free(dir);
	}
	free(buf);
	if (!n) {
		nf_v_seen(c, "%zu settings match", json_object_size(dbd));
		return NF_V_PASS;
	}
	nf_v_seen(c, "%s%s", bad, n > 4 ? " ..." : "");
	nf_v_remedy(c, "install the slurmdbd.conf built for this role (nodeforge "
		    "build %s) and systemctl restart slurmdbd", nf_v_role(c));
	return NF_V_FAIL;
}

/* srun and sbatch send the submitting shell's limits with the job, and
 * slurmd sets them in the job, over its own (the profile's, from its
 * unit): only NONE (or Except=ALL) leaves a job the node's limits */
static int check_conf_limits(struct nf_vcheck *c, const json_t *sec)
{
	char *buf = NULL, *all, *except;
	int ok;

	(void)sec;
	if (nf_v_read(c, NF_VROOT, "/etc/slurm/slurm.conf", 1 << 20, &buf, NULL))
		return NF_V_FAIL;
	all = nf_v_conf_get(buf, "PropagateResourceLimits", "=");
	except = nf_v_conf_get(buf, "PropagateResourceLimitsExcept", "=");
	free(buf);
	nf_v_expect(c, "PropagateResourceLimits=NONE: a job gets this node's "
		    "limits, not the submitting shell's");
	ok = (all && !strcasecmp(all, "NONE") && !except) ||
	     (!all && except && !strcasecmp(except, "ALL"));
	if (ok)
		nf_v_seen(c, "%s=%s", all ? "PropagateResourceLimits" :
			  "PropagateResourceLimitsExcept", all ? all : except);
	else if (!all && !except)
		nf_v_seen(c, "unset: Slurm propagates ALL of the submitting "
			  "shell's limits");
	else
		nf_v_seen(c, "%s%s%s%s%s: the submitting shell's other limits "
			  "replace the node's in every job",
			  all ? "PropagateResourceLimits=" : "", all ? all : "",
			  all && except ? ", " : "",
			  except ? "PropagateResourceLimitsExcept=" : "",
			  except ? except : "");
	free(all);
	free(except);
	if (ok)
		return NF_V_PASS;
	nf_v_remedy(c, "set PropagateResourceLimits=NONE (and no "
		    "PropagateResourceLimitsExcept) in /etc/slurm/slurm.conf, "
		    "then scontrol reconfigure");
	return NF_V_FAIL;
}

static const struct nf_check_def defs[] = {
	{ "slurm.conf.present", "slurm.conf is installed", NULL, NF_CHECK_STATIC, 0,
	  check_conf_present },
	{ "slurm.conf.values", "slurm.conf as the profile and site say", "slurm.conf.present",
	  NF_CHECK_STATIC, 0, check_conf_values },
	{ "slurm.dbd.conf", "slurmdbd.conf as the profile says, archives kept",
	  NULL, NF_CHECK_STATIC, 0, check_dbd_conf },
	{ "slurm.conf.limits", "jobs get the node's limits, not the submitting shell's",
	  "slurm.conf.present", NF_CHECK_STATIC, 0, check_conf_limits },
	{ "slurm.prolog", "the prolog and epilog slurm.conf names can run",
	  "slurm.conf.present", NF_CHECK_STATIC, 0, nf_slurm_check_scripts },
	{ "slurm.cluster", "the cluster's controllers and nodes are known (cluster.conf)",
	  "slurm.conf.present", 0, 0, check_cluster,
	  .needs = "controller" },
	{ "slurm.node.shape", "the node has the CPUs and memory its NodeName= line declares",
	  "slurm.cluster", 0, 0, nf_slurm_check_shape, .needs = "controller" },
	{ "slurm.gres.conf", "gres.conf declares the profile's GPUs", NULL, NF_CHECK_STATIC, 0,
	  nf_slurm_check_gres,
	  .needs = "gpu" },
	{ "slurm.gres.hardware", "the GPUs of gres.conf are on the PCI bus", "slurm.gres.conf",
	  0, 0, nf_slurm_check_hardware,
	  .needs = "gpu" },
	{ "slurm.gres.cores", "gres.conf Cores= match the GPUs' NUMA-local CPUs",
	  "slurm.gres.hardware", 0, 0, nf_slurm_check_cores,
	  .needs = "gpu" },
};

static const struct nf_checkset checks = NF_CHECKSET(defs);

/* ---- end of check ---- */

const struct nf_facet nf_facet_slurm = {
	.name = "slurm",
	.summary = "slurm.conf, gres.conf, plugstack.conf, slurmdbd.conf",
	.apply = apply,
	.schema = fields,
	.lint = lint,
	.checks = &checks,
	.gate_units = nf_slurm_gate_units,
	.durable_dirs = nf_slurm_durable_dirs,
	.daemon_checks = nf_slurm_daemon_checks,
};
