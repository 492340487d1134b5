/* SPDX-License-Identifier: MIT */
/* time: chrony, and the clock bound munge credentials depend on. */
#include "internal.h"

/* How long the first boot waits for chrony's first sync before the
 * verifier reads the clock: chrony-wait.service's own default, or the
 * profile's time.sync_wait_s (a site whose servers answer at once, or a
 * test VM that has none, waits less) */
#define NF_TIME_SYNC_WAIT_S 180
#define NF_TIME_SYNC_WAIT_MAX_S 3600

static int sync_wait_s(const json_t *sec)
{
	const json_t *w = json_object_get(sec, "sync_wait_s");

	return json_is_integer(w) ? (int)json_integer_value(w) : NF_TIME_SYNC_WAIT_S;
}

static const struct nf_field makestep[] = {
	{ "threshold", NF_T_NUM, .required = true },
	{ "limit", NF_T_INT, .required = true },
	{ 0 }
};

static const struct nf_field fields[] = {
	{ "servers", NF_T_STRLIST },
	{ "maxdistance", NF_T_NUM },
	{ "makestep", NF_T_OBJ, makestep },
	{ "rtcsync", NF_T_BOOL },
	{ "max_offset_ms", NF_T_NUM },
	{ "sync_wait_s", NF_T_INT },
	{ 0 }
};

static int lint(struct nf_facet_lint *l, const json_t *sec)
{
	const json_t *servers = json_object_get(sec, "servers");
	double off = json_number_value(json_object_get(sec, "max_offset_ms"));

	if (!json_array_size(servers))
		nf_lint_at(l, "time", NF_SEV_ERROR,
			   "no NTP servers: set 'ntp' in the site file or "
			   "time.servers in the profile");
	if (off > 300000.0)
		nf_lint_at(l, "time.max_offset_ms", NF_SEV_ERROR,
			   "max_offset_ms %.0f exceeds munge's default 300 s "
			   "credential lifetime", off);
	if (json_object_get(sec, "sync_wait_s")) {
		json_int_t w = json_integer_value(json_object_get(sec, "sync_wait_s"));

		if (w < 1 || w > NF_TIME_SYNC_WAIT_MAX_S)
			nf_lint_at(l, "time.sync_wait_s", NF_SEV_ERROR,
				   "sync_wait_s %lld is not 1 to %d seconds",
				   (long long)w, NF_TIME_SYNC_WAIT_MAX_S);
	}
	return 0;
}

/* ---- apply: what the image build writes (nodeforge build) ---- */

/* chronyd's default longest poll interval (maxpoll 10: the server lines
 * written here set none) and the kernel's worst-case frequency tolerance
 * (MAXFREQ) by which it grows its maxerror between chronyd's updates */
#define NF_TIME_MAXPOLL_S 1024
#define NF_TIME_TOLERANCE_PPM 500

/* chrony-wait.service (chrony's own unit, Debian and EL) holds
 * time-sync.target, and with it the verifier, until chronyd has synced
 * the clock, for at most sync_wait_s: the verifier's time.sync
 * reads the clock once, and right after chronyd started it is always
 * unsynchronised.  Its output goes nowhere; a timeout is said in the
 * journal here. */
static int apply_sync_wait(struct nf_apply *a, const json_t *sec)
{
	int wait = sync_wait_s(sec);
	struct nf_buf b = { 0 };
	int r;

	if ((r = nf_apply_enable(a, "chrony-wait")))
		return r;
	/* chrony-wait requires chronyd.service: on Debian the alias
	 * chrony.service's [Install] makes when it is enabled; a root whose
	 * chrony was never enabled through systemctl lacks it */
	if (!a->el && !nf_apply_exists(a, "/etc/systemd/system/chronyd.service") &&
	    (r = nf_apply_symlink(a, "/etc/systemd/system/chronyd.service",
				  nf_apply_exists(a, "/usr/lib/systemd/system/chrony.service")
				  ? "/usr/lib/systemd/system/chrony.service"
				  : "/lib/systemd/system/chrony.service")))
		return r;
	nf_apply_header(&b, "#", "time");
	nf_buf_printf(&b,
		"[Service]\n"
		"TimeoutStartSec=%d\n"
		"StandardError=journal\n"
		"ExecStopPost=/bin/sh -c 'if [ \"$$SERVICE_RESULT\" = timeout ]; then "
		"echo \"<4>chrony-wait: no time sync within %d s: the first-boot "
		"verifier fails time.sync (chronyc sources -v)\" >&2; fi'\n",
		wait, wait);
	return nf_apply_write_buf(a, "/etc/systemd/system/chrony-wait.service.d/"
				  "nodeforge.conf", &b, 0644, 0, 0);
}

/* chrony.conf from the site's NTP servers; Debian keeps it under
 * /etc/chrony/, EL at /etc/chrony.conf */
static int apply(struct nf_apply *a, const json_t *sec)
{
	const json_t *servers = json_object_get(sec, "servers");
	const json_t *ms = json_object_get(sec, "makestep");
	const json_t *md = json_object_get(sec, "maxdistance");
	struct nf_buf b = { 0 };
	size_t i;
	json_t *v;
	int r;

	if (!json_array_size(servers))
		servers = json_object_get(a->site, "ntp");
	nf_apply_header(&b, "#", "time");
	json_array_foreach(servers, i, v) {
		const char *s = json_string_value(v);

		if (!s || !*s || strpbrk(s, " \t\n#")) {
			nf_buf_free(&b);
			return nf_fail(a->ctx, NF_E_INVALID,
				       "NTP server '%s' is not a host name or "
				       "address", s ? s : "(not a string)");
		}
		nf_buf_printf(&b, "server %s iburst\n", s);
	}
	if (json_is_number(md))
		nf_buf_printf(&b, "maxdistance %g\n", json_number_value(md));
	if (ms)
		nf_buf_printf(&b, "makestep %g %lld\n",
			      json_number_value(json_object_get(ms, "threshold")),
			      (long long)json_integer_value(json_object_get(ms, "limit")));
	if (json_is_true(json_object_get(sec, "rtcsync")))
		nf_buf_printf(&b, "rtcsync\n");
	nf_buf_printf(&b, "driftfile /var/lib/chrony/%s\n",
		      a->el ? "drift" : "chrony.drift");
	nf_buf_printf(&b, "keyfile /etc/%s\n", a->el ? "chrony.keys"
						      : "chrony/chrony.keys");
	nf_buf_printf(&b, "logdir /var/log/chrony\n");
	if ((r = nf_apply_write_buf(a, a->el ? "/etc/chrony.conf"
					     : "/etc/chrony/chrony.conf",
				    &b, 0644, 0, 0)))
		return r;
	return apply_sync_wait(a, sec);
}

/* ---- end of apply ---- */

/* ---- check: what the verifier checks (nodeforge verify) ---- */

/* Append one finding to `bad` (at most four, comma-separated) */
static void conf_bad(char *bad, size_t sz, int *n, const char *fmt, const char *arg)
{
	if ((*n)++ >= 4)
		return;
	if (*bad)
		snprintf(bad + strlen(bad), sz - strlen(bad), ", ");
	snprintf(bad + strlen(bad), sz - strlen(bad), fmt, arg);
}

/* The profile's servers, each on a server or pool line with iburst (the
 * first sync in seconds, not after four polls: chrony-wait's bounded
 * wait holds the first boot until it) */
static void conf_servers(const char *buf, const json_t *sec, char *bad,
			 size_t sz, int *n)
{
	size_t i;
	json_t *s;

	json_array_foreach(json_object_get(sec, "servers"), i, s) {
		const char *name = json_string_value(s);
		int found = 0, burst = 0;

		for (const char *l = buf; name && l && *l && !found;) {
			const char *e = strchr(l, '\n');
			char line[512];

			snprintf(line, sizeof(line), "%.*s", (int)(e ? e - l : (long)strlen(l)), l);
			if ((!strncmp(line, "server ", 7) || !strncmp(line, "pool ", 5)) &&
			    strstr(line, name)) {
				const char *w = strstr(line, name) + strlen(name);
				const char *ib = strstr(w, " iburst");

				found = !*w || *w == ' ';
				burst = found && ib && (!ib[7] || ib[7] == ' ');
			}
			l = e ? e + 1 : NULL;
		}
		if (name && !found)
			conf_bad(bad, sz, n, "server %s missing", name);
		else if (name && !burst)
			conf_bad(bad, sz, n, "server %s without iburst", name);
	}
}

/* The lines apply writes for the step and distance bounds and the RTC,
 * each a line of its own */
static void conf_lines(const char *buf, const json_t *sec, char *bad,
		       size_t sz, int *n)
{
	const json_t *ms = json_object_get(sec, "makestep");
	const json_t *md = json_object_get(sec, "maxdistance");
	char want[3][96] = { "", "", "" };

	if (json_is_number(md))
		snprintf(want[0], sizeof(want[0]), "maxdistance %g", json_number_value(md));
	if (ms)
		snprintf(want[1], sizeof(want[1]), "makestep %g %lld",
			 json_number_value(json_object_get(ms, "threshold")),
			 (long long)json_integer_value(json_object_get(ms, "limit")));
	if (json_is_true(json_object_get(sec, "rtcsync")))
		snprintf(want[2], sizeof(want[2]), "rtcsync");
	for (size_t i = 0; i < NF_ARRAY_SIZE(want); i++) {
		const char *f = *want[i] ? strstr(buf, want[i]) : NULL;
		size_t len = strlen(want[i]);

		while (f && ((f != buf && f[-1] != '\n') ||
			     (f[len] && f[len] != '\n' && f[len] != ' ')))
			f = strstr(f + 1, want[i]);
		if (*want[i] && !f)
			conf_bad(bad, sz, n, "'%s' missing", want[i]);
	}
}

static int check_conf(struct nf_vcheck *c, const json_t *sec)
{
	static const char *const paths[] = { "/etc/chrony/chrony.conf", "/etc/chrony.conf" };
	const char *path = NULL;
	char *buf = NULL, bad[512] = "";
	int n = 0;

	for (size_t i = 0; i < NF_ARRAY_SIZE(paths) && !path; i++)
		if (!nf_v_read(c, NF_VROOT, paths[i], 256 * 1024, &buf, NULL))
			path = paths[i];
	nf_v_expect(c, "chrony.conf names the profile's servers (iburst), maxdistance, "
		    "makestep and rtcsync");
	if (!path) {
		nf_v_seen(c, "no chrony.conf");
		nf_v_remedy(c, "apt-get install chrony   # or dnf install chrony; then rebuild the image");
		return NF_V_FAIL;
	}
	conf_servers(buf, sec, bad, sizeof(bad), &n);
	conf_lines(buf, sec, bad, sizeof(bad), &n);
	free(buf);
	if (!n) {
		nf_v_seen(c, "%s names every server, maxdistance, makestep and rtcsync", path);
		return NF_V_PASS;
	}
	nf_v_seen(c, "%s: %s", path, bad);
	nf_v_remedy(c, "install the chrony.conf built for this role (nodeforge build %s) or "
		    "add the missing lines to %s, and systemctl restart chrony",
		    nf_v_role(c), path);
	return NF_V_FAIL;
}

static int check_chronyd(struct nf_vcheck *c, const json_t *sec)
{
	char state[64] = "";
	int r;

	(void)sec;
	nf_v_expect(c, "chrony active");
	r = nf_v_service_active(c, "chrony", state, sizeof(state));
	if (r == 0)
		r = nf_v_service_active(c, "chronyd", state, sizeof(state));
	if (r == NF_E_TIMEOUT)
		return NF_V_HUNG;
	if (r == 1) {
		nf_v_seen(c, "active");
		return NF_V_PASS;
	}
	nf_v_seen(c, r < 0 ? "cannot ask systemctl" : "chrony %s", state);
	nf_v_remedy(c, "systemctl enable --now chrony");
	return NF_V_FAIL;
}

static int check_sync(struct nf_vcheck *c, const json_t *sec)
{
	char state[64] = "";
	struct nf_timex t;
	int r = nf_v_adjtimex(c, &t);

	nf_v_expect(c, "the kernel clock is synchronised");
	if (r) {
		nf_v_seen(c, "adjtimex: %s", r < 0 ? strerror(-r) : nf_strerror(r));
		return NF_V_FAIL;
	}
	if (t.synced) {
		nf_v_seen(c, "synchronised");
		return NF_V_PASS;
	}
	/* the first boot waited for a sync (chrony-wait.service): say
	 * whether that wait gave up */
	if (nf_v_service_active(c, "chrony-wait", state, sizeof(state)) == 0 &&
	    !strcmp(state, "failed")) {
		nf_v_seen(c, "unsynchronised: chrony-wait.service gave up "
			  "(no sync within %d s)", sync_wait_s(sec));
		nf_v_remedy(c, "journalctl -u chrony-wait -u chrony; chronyc sources -v; "
			    "check that the NTP servers answer from this node");
		return NF_V_FAIL;
	}
	nf_v_seen(c, "unsynchronised");
	nf_v_remedy(c, "chronyc sources -v; chronyc makestep");
	return NF_V_FAIL;
}

static int check_offset(struct nf_vcheck *c, const json_t *sec)
{
	double max = json_number_value(json_object_get(sec, "max_offset_ms"));
	double dist = json_number_value(json_object_get(sec, "maxdistance"));
	struct nf_timex t;

	if (nf_v_adjtimex(c, &t))
		return NF_V_FAIL;
	double bound;

	if (max <= 0)
		max = 100;
	if (dist <= 0)
		dist = 3;
	/* the kernel's maxerror is chronyd's root distance at its last clock
	 * update (chronyd selects no source farther than maxdistance) plus
	 * the kernel's worst-case 500 ppm since then, and chronyd updates at
	 * least every maxpoll (default 2^10 s): a node whose chronyd keeps a
	 * source stays below maxdistance + 512 ms */
	bound = dist * 1000 + NF_TIME_TOLERANCE_PPM * 1e-3 * NF_TIME_MAXPOLL_S;
	nf_v_expect(c, "|offset| <= %g ms, max error <= %g ms", max, bound);
	nf_v_seen(c, "offset %.3f ms, max error %.3f ms", t.offset_ms, t.maxerror_ms);
	if ((t.offset_ms < 0 ? -t.offset_ms : t.offset_ms) <= max && t.maxerror_ms <= bound)
		return NF_V_PASS;
	nf_v_remedy(c, "chronyc tracking; chronyc makestep");
	return NF_V_FAIL;
}

static const struct nf_check_def defs[] = {
	{ "time.chrony.conf", "chrony.conf names the profile's servers", NULL, NF_CHECK_STATIC, 0,
	  check_conf },
	{ "time.chronyd", "chronyd runs", NULL, NF_CHECK_PROBE, 2000, check_chronyd,
	  "system.init" },
	{ "time.sync", "the clock is synchronised", "time.chronyd", 0, 0, check_sync,
	  .needs = "ntp" },
	{ "time.offset", "offset and error within the profile's bound", "time.sync", 0, 0,
	  check_offset,
	  .needs = "ntp" },
};

static const struct nf_checkset checks = NF_CHECKSET(defs);

/* ---- end of check ---- */

/* The site's time servers, where the profile names none */
static void from_site(json_t *section, const json_t *site)
{
	json_t *ntp = json_object_get(site, "ntp");

	if (ntp && !json_object_get(section, "servers"))
		json_object_set_new(section, "servers", json_deep_copy(ntp));
}

/* time.sync reads the clock once: after chrony's first sync (or its
 * bounded wait giving up), not right after chronyd started */
static size_t gate_units(const struct nf_apply *a, const json_t *sec,
			 struct nf_gate_unit *out, size_t max)
{
	(void)a;
	if (!sec || !max)
		return 0;
	out[0] = (struct nf_gate_unit){ "chrony-wait", NF_GATE_WANTS };
	return 1;
}

/* chronyd parses the chrony.conf apply wrote, where this distribution
 * keeps it */
static int daemon_checks(struct nf_daemon_ci *d, const json_t *sec)
{
	const char *conf = d->el ? "/etc/chrony.conf" : "/etc/chrony/chrony.conf";

	(void)sec;
	if (!nf_daemon_ci_has(d, "usr/sbin/chronyd") || !nf_daemon_ci_has(d, conf + 1))
		return 0;
	return d->run(d, "localhost", "chrony.conf",
		      (const char *const[]){ "chronyd", "-p", "-f", conf, NULL },
		      0, 1, NULL);
}

const struct nf_facet nf_facet_time = {
	.name = "time",
	.summary = "time synchronisation (chrony)",
	.apply = apply,
	.from_site = from_site,
	.schema = fields,
	.lint = lint,
	.checks = &checks,
	.gate_units = gate_units,
	.daemon_checks = daemon_checks,
};
