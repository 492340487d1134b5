/* SPDX-License-Identifier: MIT */
/*
 * limits: resource limits for jobs.  Applied both to limits.d (login
 * sessions) and to slurmd's unit (Limit*=), since slurmd's children inherit
 * the daemon's limits, not PAM's.
 */
#include "internal.h"

/*
 * The limits, one line each: profile key, systemd unit key, the name in
 * /proc/PID/limits.  The schema, what apply writes, the unit checks and
 * the running slurmd's check all come from this list: adding a ulimit is
 * one line here (and the profiles that set it).
 */
#define NF_LIMITS(X)                                        \
	X(nofile, "LimitNOFILE", "Max open files")          \
	X(memlock, "LimitMEMLOCK", "Max locked memory")     \
	X(stack, "LimitSTACK", "Max stack size")            \
	X(nproc, "LimitNPROC", "Max processes")             \
	X(core, "LimitCORE", "Max core file size")

#define LIMIT_FIELD(name, unit, proc) { #name, NF_T_LIMIT },
static const struct nf_field fields[] = {
	NF_LIMITS(LIMIT_FIELD)
	{ 0 }
};

static int lint(struct nf_facet_lint *l, const json_t *sec)
{
	const json_t *ml = json_object_get(sec, "memlock");
	const json_t *nofile = json_object_get(sec, "nofile");

	if (json_is_integer(ml))
		nf_lint_at(l, "limits.memlock", NF_SEV_WARNING,
			   "memlock %lld: RDMA (GPUDirect) needs memlock unlimited, "
			   "or ibv_reg_mr fails and NCCL falls back to host memory",
			   (long long)json_integer_value(ml));
	if (json_is_integer(nofile) && json_integer_value(nofile) > 1073741816)
		nf_lint_at(l, "limits.nofile", NF_SEV_ERROR,
			   "nofile %lld is above the kernel's nr_open maximum",
			   (long long)json_integer_value(nofile));
	return 0;
}

#define LIMIT_NAMES(name, unit, proc) { #name, unit, proc },
static const struct {
	const char *name, *unit_key, *proc_name;
} limit_names[] = {
	NF_LIMITS(LIMIT_NAMES)
};

/* ---- apply: what the image build writes (nodeforge build) ---- */

/* The same limits twice: limits.d for PAM sessions (ssh, adopted by
 * pam_slurm_adopt) and a slurmd drop-in, because slurmd is started by
 * systemd, not through PAM, and jobs inherit slurmd's own limits */

static int limit_value(const json_t *v, char *out, size_t outsz, int sysd)
{
	if (json_is_integer(v) && json_integer_value(v) >= 0)
		snprintf(out, outsz, "%lld", (long long)json_integer_value(v));
	else if (json_is_string(v) && !strcmp(json_string_value(v), "unlimited"))
		snprintf(out, outsz, "%s", sysd ? "infinity" : "unlimited");
	else
		return -1;
	return 0;
}

static int apply(struct nf_apply *a, const json_t *sec)
{
	struct nf_buf pam = { 0 }, unit = { 0 };
	char val[32];
	int r;

	nf_apply_header(&pam, "#", "limits");
	nf_apply_header(&unit, "#", "limits");
	nf_buf_printf(&unit, "[Service]\n");
	for (size_t i = 0; i < NF_ARRAY_SIZE(limit_names); i++) {
		const json_t *v = json_object_get(sec, limit_names[i].name);

		if (!v)
			continue;
		if (limit_value(v, val, sizeof(val), 0)) {
			nf_buf_free(&pam);
			nf_buf_free(&unit);
			return nf_fail(a->ctx, NF_E_INVALID,
				       "limits.%s must be a number or 'unlimited'",
				       limit_names[i].name);
		}
		nf_buf_printf(&pam, "*\tsoft\t%s\t%s\n*\thard\t%s\t%s\n",
			      limit_names[i].name, val, limit_names[i].name, val);
		limit_value(v, val, sizeof(val), 1);
		nf_buf_printf(&unit, "%s=%s\n", limit_names[i].unit_key, val);
	}
	r = nf_apply_write_buf(a, "/etc/security/limits.d/90-nodeforge.conf",
			       &pam, 0644, 0, 0);
	if (r || !nf_apply_has_daemon(a, "slurmd")) {
		nf_buf_free(&unit);
		return r;
	}
	/* numbered so that a site's own drop-in (60-local.conf) comes after
	 * it and takes effect, as systemd applies them in name order: the
	 * verifier then reports the difference from the profile, rather than
	 * a site file that silently does nothing */
	return nf_apply_write_buf(a, "/etc/systemd/system/slurmd.service.d/"
				  "50-nodeforge-limits.conf", &unit, 0644, 0, 0);
}

/* ---- end of apply ---- */

/* ---- check: what the verifier checks (nodeforge verify) ---- */


/* "infinity", "unlimited", "64M", "1048576" -> canonical text */
static void norm_limit(const char *in, char *out, size_t sz)
{
	unsigned long long v;
	char s[64];

	snprintf(s, sizeof(s), "%s", in);
	for (char *p = s; *p == ' ';)
		memmove(p, p + 1, strlen(p));
	if (!strncasecmp(s, "infinity", 8) || !strncasecmp(s, "unlimited", 9))
		snprintf(out, sz, "unlimited");
	else if (nf_parse_size(s, &v) == 0)
		snprintf(out, sz, "%llu", v);
	else
		snprintf(out, sz, "%.*s", (int)strcspn(s, " \n"), s);
}

static int limit_index(const char *id)
{
	const char *last = strrchr(id, '.');

	for (size_t i = 0; last && i < NF_ARRAY_SIZE(limit_names); i++)
		if (!strcmp(last + 1, limit_names[i].name))
			return (int)i;
	return -1;
}

/* slurmd.service and its drop-ins as systemd reads them: the unit file of
 * the first directory that has one, then every drop-in by name (/etc
 * overrides /run overrides /usr/lib for the same name); last value wins */
static char *unit_value(struct nf_vcheck *c, const char *key, char *from, size_t fromsz)
{
	static const char *const dirs[] = { "/etc/systemd/system", "/run/systemd/system",
					    "/usr/lib/systemd/system", "/lib/systemd/system" };
	char path[512], *buf = NULL, *val = NULL;
	char *seen[64];
	size_t nseen = 0;

	*from = '\0';
	for (size_t i = 0; i < NF_ARRAY_SIZE(dirs); i++) {
		snprintf(path, sizeof(path), "%s/slurmd.service", dirs[i]);
		if (!nf_v_read(c, NF_VROOT, path, 256 * 1024, &buf, NULL)) {
			val = nf_v_conf_get(buf, key, "= \t");
			if (val)
				snprintf(from, fromsz, "%s", path);
			free(buf);
			break;
		}
	}
	/* drop-ins: collect names, each from its highest-priority dir */
	for (size_t i = 0; i < NF_ARRAY_SIZE(dirs); i++) {
		char **names;
		int n;

		snprintf(path, sizeof(path), "%s/slurmd.service.d", dirs[i]);
		n = nf_v_list(c, NF_VROOT, path, &names, 64);
		for (int j = 0; j < n; j++) {
			int dup = 0;

			for (size_t k = 0; k < nseen; k++)
				dup |= !strcmp(strchr(seen[k], '\t') + 1, names[j]);
			if (dup || nseen >= NF_ARRAY_SIZE(seen) ||
			    strlen(names[j]) < 6 || strcmp(names[j] + strlen(names[j]) - 5, ".conf"))
				continue;
			seen[nseen++] = nf_asprintf("%s\t%s", path, names[j]);
		}
		if (n > 0)
			nf_strv_free(names, (size_t)n);
	}
	/* sort by drop-in name */
	for (size_t i = 1; i < nseen; i++)
		for (size_t j = i; j > 0 && strcmp(strchr(seen[j - 1], '\t') + 1,
						   strchr(seen[j], '\t') + 1) > 0; j--) {
			char *t = seen[j];

			seen[j] = seen[j - 1];
			seen[j - 1] = t;
		}
	for (size_t i = 0; i < nseen; i++) {
		char *tab = strchr(seen[i], '\t');

		*tab = '/';
		if (!nf_v_read(c, NF_VROOT, seen[i], 64 * 1024, &buf, NULL)) {
			char *v = nf_v_conf_get(buf, key, "= \t");

			if (v) {
				free(val);
				val = v;
				snprintf(from, fromsz, "%s", seen[i]);
			}
			free(buf);
		}
		free(seen[i]);
	}
	return val;
}

/* Jobs inherit slurmd's limits: the unit checks only mean something
 * where slurmd runs (limits.d still serves login sessions elsewhere) */
static int runs_slurmd(const json_t *profile)
{
	return nf_profile_runs(profile, "slurmd");
}

/* Set KEY=WANT for slurmd: in the site's own drop-in FROM (under /etc)
 * where that is what sets it, else in a drop-in of its own for this key,
 * which neither edits the packaged unit in /usr/lib nor overwrites another
 * drop-in */
static void remedy_unit(struct nf_vcheck *c, const char *key, const char *want,
			const char *from)
{
	const char *val = !strcmp(want, "unlimited") ? "infinity" : want;

	if (from && !strncmp(from, "/etc/", 5) && !strpbrk(from, " '\"\\"))
		nf_v_remedy(c, "sed -i 's/^%s=.*/%s=%s/' %s && systemctl daemon-reload && "
			    "systemctl restart slurmd", key, key, val, from);
	else
		nf_v_remedy(c, "mkdir -p /etc/systemd/system/slurmd.service.d && printf "
			    "'[Service]\\n%s=%s\\n' > /etc/systemd/system/slurmd.service.d/"
			    "nodeforge-%s.conf && systemctl daemon-reload && systemctl "
			    "restart slurmd", key, val, key);
}

static int check_unit(struct nf_vcheck *c, const json_t *sec)
{
	int i = limit_index(nf_v_id(c));
	const json_t *w = i >= 0 ? json_object_get(sec, limit_names[i].name) : NULL;
	char want[64], have[64], from[512], *v;

	if (!w)
		return nf_v_skip(c, "the profile does not set it");
	if (!runs_slurmd(nf_v_profile(c)))
		return nf_v_skip(c, "this role runs no slurmd");
	nf_v_json_str(w, want, sizeof(want));
	norm_limit(want, want, sizeof(want));
	nf_v_expect(c, "%s=%s", limit_names[i].unit_key, want);
	v = unit_value(c, limit_names[i].unit_key, from, sizeof(from));
	if (!v) {
		nf_v_seen(c, "not set in slurmd.service or its drop-ins");
		remedy_unit(c, limit_names[i].unit_key, want, NULL);
		return NF_V_FAIL;
	}
	norm_limit(v, have, sizeof(have));
	free(v);
	nf_v_seen(c, "%s=%s (%s)", limit_names[i].unit_key, have, from);
	if (!strcmp(have, want))
		return NF_V_PASS;
	remedy_unit(c, limit_names[i].unit_key, want, from);
	return NF_V_FAIL;
}

/* The pid of a running slurmd in the (sys)root's /proc, or 0 */
static long slurmd_pid(struct nf_vcheck *c)
{
	char **names, path[64], *comm;
	long pid = 0;
	int n = nf_v_list(c, NF_VSYS, "/proc", &names, 1 << 20);

	for (int i = 0; i < n && !pid; i++) {
		if (!strchr("123456789", names[i][0]))
			continue;
		snprintf(path, sizeof(path), "/proc/%.20s/comm", names[i]);
		if (nf_v_read(c, NF_VSYS, path, 64, &comm, NULL))
			continue;
		if (!strcmp(comm, "slurmd\n") || !strcmp(comm, "slurmd"))
			pid = strtol(names[i], NULL, 10);
		free(comm);
	}
	if (n > 0)
		nf_strv_free(names, (size_t)n);
	return pid;
}

static int check_process(struct nf_vcheck *c, const json_t *sec)
{
	char path[64], *buf = NULL, bad[512] = "";
	long pid = slurmd_pid(c);
	int nbad = 0;

	if (!pid)
		return nf_v_skip(c, "slurmd is not running");
	snprintf(path, sizeof(path), "/proc/%ld/limits", pid);
	if (nf_v_read(c, NF_VSYS, path, 16 * 1024, &buf, NULL))
		return nf_v_skip(c, "slurmd exited");
	nf_v_expect(c, "slurmd (pid %ld) runs with the profile's limits", pid);
	for (size_t i = 0; i < NF_ARRAY_SIZE(limit_names); i++) {
		const json_t *w = json_object_get(sec, limit_names[i].name);
		const char *l = strstr(buf, limit_names[i].proc_name);
		char want[64], soft[64];

		if (!w || !l)
			continue;
		nf_v_json_str(w, want, sizeof(want));
		norm_limit(want, want, sizeof(want));
		l += strlen(limit_names[i].proc_name);
		norm_limit(l, soft, sizeof(soft));
		if (strcmp(soft, want) && nbad++ < 5)
			snprintf(bad + strlen(bad), sizeof(bad) - strlen(bad), "%s%s=%s",
				 *bad ? ", " : "", limit_names[i].name, soft);
	}
	free(buf);
	if (!nbad) {
		nf_v_seen(c, "all limits match");
		return NF_V_PASS;
	}
	nf_v_seen(c, "%s", bad);
	nf_v_remedy(c, "systemctl restart slurmd   # picks up the unit's Limit* values");
	return NF_V_FAIL;
}

/* What pam_limits gives every SSH session (the wildcard domain): each
 * limit's soft and hard value, the last line winning, from limits.conf
 * and then the .conf files of limits.d in name order, as pam_limits reads
 * them; the file that set each into from[] */
struct pam_limits {
	char soft[NF_ARRAY_SIZE(limit_names)][64], hard[NF_ARRAY_SIZE(limit_names)][64];
	char from[NF_ARRAY_SIZE(limit_names)][128];
};

static void pam_limits_file(struct nf_vcheck *c, const char *path, struct pam_limits *pl)
{
	char *buf = NULL, *save = NULL;

	if (nf_v_read(c, NF_VROOT, path, 256 * 1024, &buf, NULL))
		return;
	for (char *l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char dom[64], type[16], item[32], val[64];

		l[strcspn(l, "#")] = '\0';
		if (sscanf(l, "%63s %15s %31s %63s", dom, type, item, val) != 4 ||
		    strcmp(dom, "*"))
			continue;
		for (size_t i = 0; i < NF_ARRAY_SIZE(limit_names); i++) {
			if (strcmp(item, limit_names[i].name))
				continue;
			if (!strcmp(type, "soft") || !strcmp(type, "-"))
				norm_limit(val, pl->soft[i], sizeof(pl->soft[i]));
			if (!strcmp(type, "hard") || !strcmp(type, "-"))
				norm_limit(val, pl->hard[i], sizeof(pl->hard[i]));
			snprintf(pl->from[i], sizeof(pl->from[i]), "%s", path);
		}
	}
	free(buf);
}

static void pam_limits_read(struct nf_vcheck *c, struct pam_limits *pl)
{
	char **names = NULL, path[160];
	int n;

	memset(pl, 0, sizeof(*pl));
	pam_limits_file(c, "/etc/security/limits.conf", pl);
	n = nf_v_list(c, NF_VROOT, "/etc/security/limits.d", &names, 256);
	for (int i = 0; i < n; i++) {
		size_t len = strlen(names[i]);

		if (len < 6 || strcmp(names[i] + len - 5, ".conf"))
			continue;
		snprintf(path, sizeof(path), "/etc/security/limits.d/%s", names[i]);
		pam_limits_file(c, path, pl);
	}
	if (n > 0)
		nf_strv_free(names, (size_t)n);
}

static int check_pam(struct nf_vcheck *c, const json_t *sec)
{
	char bad[512] = "";
	struct pam_limits pl;
	int nset = 0, nbad = 0;

	pam_limits_read(c, &pl);
	nf_v_expect(c, "every profile limit, soft and hard, for * in limits.conf and "
		    "limits.d (pam_limits: SSH sessions)");
	for (size_t i = 0; i < NF_ARRAY_SIZE(limit_names); i++) {
		const json_t *w = json_object_get(sec, limit_names[i].name);
		char want[64];

		if (!w)
			continue;
		nset++;
		nf_v_json_str(w, want, sizeof(want));
		norm_limit(want, want, sizeof(want));
		if ((strcmp(pl.soft[i], want) || strcmp(pl.hard[i], want)) && nbad++ < 4)
			snprintf(bad + strlen(bad), sizeof(bad) - strlen(bad),
				 "%s%s soft %s hard %s%s%s%s", *bad ? ", " : "",
				 limit_names[i].name, *pl.soft[i] ? pl.soft[i] : "unset",
				 *pl.hard[i] ? pl.hard[i] : "unset", *pl.from[i] ? " (" : "",
				 pl.from[i], *pl.from[i] ? ")" : "");
	}
	if (!nset)
		return nf_v_skip(c, "the profile sets no limits");
	if (!nbad) {
		nf_v_seen(c, "all %d limits match", nset);
		return NF_V_PASS;
	}
	nf_v_seen(c, "%s", bad);
	nf_v_remedy(c, "restore /etc/security/limits.d/90-nodeforge.conf from the image "
		    "(nodeforge build %s) and remove the lines that override it; new SSH "
		    "sessions get the limits", nf_v_role(c));
	return NF_V_FAIL;
}

/* the running slurmd's limits come from its unit: a wrong unit value is
 * the root cause, the process check its consequence */
#define LIMIT_CHECK(name, unit, proc) \
	{ "limits.unit." #name, "slurmd.service " unit, NULL, NF_CHECK_STATIC, 0, check_unit },
#define LIMIT_DEP(name, unit, proc) "limits.unit." #name " "
static const struct nf_check_def defs[] = {
	NF_LIMITS(LIMIT_CHECK)
	{ "limits.process", "the running slurmd has the limits",
	  NF_LIMITS(LIMIT_DEP), 0, 0, check_process },
	{ "limits.pam", "SSH sessions get the limits (limits.conf, limits.d)", NULL,
	  NF_CHECK_STATIC, 0, check_pam },
};

static const struct nf_checkset checks = NF_CHECKSET(defs);

/* ---- end of check ---- */

const struct nf_facet nf_facet_limits = {
	.name = "limits",
	.summary = "ulimits for jobs: limits.d and slurmd's Limit* values",
	.apply = apply,
	.schema = fields,
	.lint = lint,
	.checks = &checks,
};
