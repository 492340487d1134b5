/* SPDX-License-Identifier: MIT */
/*
 * Power and boot device through the nodes' BMCs: IPMI 2.0 (lanplus) by
 * running ipmitool, Redfish by libcurl.  A bounded pool of threads works
 * through the nodes; each node's outcome, failure included, lands in its
 * own result so one dead BMC never stops the others.
 *
 * ipmitool rather than FreeIPMI's or OpenIPMI's library: it is the tool
 * operators already debug their BMCs with (the same command line
 * reproduces what nodeforge did), it takes the password from its
 * environment (-E), and a BMC that hangs a session costs a child process
 * we can kill at a deadline, not a thread stuck inside a library.
 *
 * Credentials come from the site's secrets.bmc.path, a YAML file only its
 * owner may read:
 *
 *   default: { user: admin, password_file: /etc/nodeforge/secrets/bmc.pw }
 *   racks:   { r01: { user: root, password: ... } }
 *   nodes:   { gpu-01: { user: ..., password_file: ... } }
 *
 * The most specific entry wins: the node's, its rack's, the default.
 */
#include "internal.h"

#include <ctype.h>
#include <pthread.h>
#include <time.h>

#define BMC_SECRETS_MAX (1u << 20)
#define BMC_PASSWORD_MAX 256
#define BMC_ANSWER_MAX (1u << 20)
#define BMC_TIMEOUT_MS 20000L
#define BMC_POLL_MS 1000L

static const char *const action_names[] = {
	[NF_POWER_ON] = "on",       [NF_POWER_OFF] = "off",
	[NF_POWER_CYCLE] = "cycle", [NF_POWER_RESET] = "reset",
	[NF_POWER_STATUS] = "status", [NF_BOOTDEV_PXE] = "pxe",
	[NF_BOOTDEV_DISK] = "disk",
};

const char *nf_power_action_name(enum nf_power_action a)
{
	return (unsigned)a < NF_ARRAY_SIZE(action_names) ? action_names[a] : "?";
}

/* One node's BMC, everything a worker needs without touching shared
 * state */
struct target {
	const struct nf_node *nd;
	int proto;
	char addr[16];
	unsigned port;
	char *user;
	char *password; /* wiped and freed after the run */
	struct nf_power_result *res;
	enum nf_power_action act; /* what the next request asks */
	long tmo_ms;              /* and how long it may take */
};

struct pool {
	const struct nf_power_opts *o;
	struct target *t;
	size_t n, next;
	long timeout_ms;
	int cipher_suite; /* -1: ipmitool asks the BMC */
	const char *ca_file;
	int no_verify;
	pthread_mutex_t lock;
};

static void res_fail(struct nf_power_result *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void res_fail(struct nf_power_result *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->error, sizeof(r->error), fmt, ap);
	va_end(ap);
	r->ok = 0;
}

/* ------------------------------------------------------------- ipmitool */

/* The last non-empty line of a tool's output, printable, into out */
static void last_line(const char *s, char *out, size_t sz)
{
	const char *b = NULL, *e = NULL, *p = s ? s : "";
	size_t k = 0;

	while (*p) {
		const char *q = strchr(p, '\n');
		const char *end = q ? q : p + strlen(p);
		const char *t = p;

		while (t < end && isspace((unsigned char)*t))
			t++;
		if (t < end) {
			b = p;
			e = end;
		}
		p = q ? q + 1 : end;
	}
	for (; b && b < e && k + 1 < sz; b++)
		out[k++] = isprint((unsigned char)*b) ? *b : '?';
	out[k] = '\0';
}

static void ipmi_run(struct pool *pl, struct target *t)
{
	struct nf_power_result *r = t->res;
	const char *sub[4] = { NULL };
	char port[8], retries[16], cs[16], why[256], *env0 = NULL;
	const char *env[2] = { NULL, NULL };
	const char *argv[24];
	struct timespec dl;
	struct nf_spawn sp = { 0 };
	size_t k = 0;
	int rc;

	switch (t->act) {
	case NF_POWER_STATUS:
		sub[0] = "power"; sub[1] = "status"; break;
	case NF_POWER_ON: case NF_POWER_OFF: case NF_POWER_CYCLE:
	case NF_POWER_RESET:
		sub[0] = "power"; sub[1] = nf_power_action_name(t->act);
		break;
	case NF_BOOTDEV_PXE: case NF_BOOTDEV_DISK:
		sub[0] = "bootdev";
		sub[1] = t->act == NF_BOOTDEV_PXE ? "pxe" : "disk";
		if (!pl->o->once)
			sub[2] = "options=persistent";
		break;
	}
	snprintf(port, sizeof(port), "%u", t->port);
	/* a lost datagram is sent again after a second, as often as fits in
	 * the deadline (a session takes a few round trips), at most 4 times */
	snprintf(retries, sizeof(retries), "%ld",
		 t->tmo_ms / 4000 < 1 ? 1 : t->tmo_ms / 4000 > 4 ? 4
		 : t->tmo_ms / 4000);
	snprintf(cs, sizeof(cs), "%d", pl->cipher_suite);
	argv[k++] = "ipmitool";
	argv[k++] = "-I"; argv[k++] = "lanplus";
	argv[k++] = "-H"; argv[k++] = t->addr;
	argv[k++] = "-p"; argv[k++] = port;
	argv[k++] = "-U"; argv[k++] = t->user;
	argv[k++] = "-E"; /* the password from IPMI_PASSWORD, never argv */
	argv[k++] = "-N"; argv[k++] = "1";
	argv[k++] = "-R"; argv[k++] = retries;
	if (pl->cipher_suite >= 0) {
		argv[k++] = "-C";
		argv[k++] = cs;
	}
	argv[k++] = "chassis";
	for (size_t i = 0; sub[i]; i++)
		argv[k++] = sub[i];
	argv[k] = NULL;
	if (!(env0 = nf_asprintf("IPMI_PASSWORD=%s", t->password))) {
		res_fail(r, "out of memory");
		return;
	}
	env[0] = env0;
	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_sec += t->tmo_ms / 1000;
	dl.tv_nsec += (t->tmo_ms % 1000) * 1000000L;
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	sp.argv = argv;
	sp.env = env;
	sp.out = NF_SPAWN_CAPTURE;
	sp.err = NF_SPAWN_CAPTURE;
	sp.deadline = &dl;
	sp.flags = NF_SPAWN_PGROUP | NF_SPAWN_PARENT_DEATH;
	rc = nf_spawn_run(&sp);
	nf_wipe(env0, strlen(env0));
	free(env0);
	if (rc == NF_E_TIMEOUT) {
		res_fail(r, "no answer from the BMC in %ld s", t->tmo_ms / 1000);
	} else if (rc && sp.exec_errno == ENOENT) {
		res_fail(r, "cannot run 'ipmitool': not installed (Debian and "
			 "RHEL package ipmitool)");
	} else if (rc) {
		res_fail(r, "cannot run 'ipmitool': %s", strerror(-rc));
	} else if (!WIFEXITED(sp.status) || WEXITSTATUS(sp.status)) {
		last_line(sp.cap, why, sizeof(why));
		/* a BMC that refuses says so in the RAKP exchange; one that
		 * drops a wrong password, like one that is down, does not */
		if (sp.cap && (strstr(sp.cap, "RAKP") || strstr(sp.cap, "nauthorized")))
			res_fail(r, "the BMC refused the user or password (ipmitool: "
				 "%s)", why);
		else
			res_fail(r, "ipmitool: %s%s", *why ? why : "failed",
				 strstr(why, "Unable to establish")
				 ? " (no answer, or the user or password was "
				   "refused)" : "");
	} else if (t->act == NF_POWER_STATUS) {
		/* "Chassis Power is on" */
		const char *p = sp.cap ? strstr(sp.cap, "Chassis Power is ") : NULL;

		if (p && !strncmp(p + 17, "on", 2))
			snprintf(r->state, sizeof(r->state), "on");
		else if (p && !strncmp(p + 17, "off", 3))
			snprintf(r->state, sizeof(r->state), "off");
		else {
			last_line(sp.cap, why, sizeof(why));
			res_fail(r, "unexpected answer from ipmitool: '%s'", why);
			goto out;
		}
		r->ok = 1;
	} else {
		r->ok = 1;
	}
out:
	free(sp.cap);
}

/* -------------------------------------------------------------- Redfish */

/* One request to the Redfish service; the answer as JSON (NULL for an
 * empty body), or a failure in the result */
static int rf_call(struct pool *pl, struct nf_ctx *ctx, struct target *t,
		   const char *method, const char *path, json_t *body,
		   json_t **out)
{
	struct nf_http_req rq = { 0 };
	char *url, *ans = NULL, *b = NULL;
	size_t len = 0;
	long status = 0;
	unsigned m;
	int r;

	*out = NULL;
	url = nf_asprintf("%s://%s:%u%s", t->nd->bmc_http ? "http" : "https",
			  t->addr, t->port, path);
	if (!url || (body && !(b = json_dumps(body, JSON_COMPACT)))) {
		free(url);
		res_fail(t->res, "out of memory");
		return -ENOMEM;
	}
	rq.url = url;
	rq.method = method;
	rq.body = b;
	rq.body_len = b ? strlen(b) : 0;
	rq.content_type = "application/json";
	rq.max_bytes = BMC_ANSWER_MAX;
	rq.timeout_ms = t->tmo_ms;
	rq.user = t->user;
	rq.password = t->password;
	rq.ca_file = pl->ca_file;
	rq.no_verify = pl->no_verify;
	m = nf_err_mark(ctx);
	r = nf_http_request(ctx, &rq, &ans, &len, &status);
	if (r) {
		if (status == 401 || status == 403)
			res_fail(t->res, "the BMC refused the credentials (HTTP "
				 "%ld from %s %s)", status, method, path);
		else
			res_fail(t->res, "%s", nf_err_since(ctx, m) ? nf_errmsg(ctx)
							  : nf_strerror(r));
	} else if (len) {
		*out = json_loadb(ans, len, 0, NULL);
		if (!*out) {
			res_fail(t->res, "%s %s: the answer is not JSON", method,
				 path);
			r = NF_E_PARSE;
		}
	}
	free(ans);
	free(b);
	free(url);
	return r;
}

/* A resource path the service gave: below /redfish/v1/, plain characters
 * only (it goes into a URL) */
static int rf_path_ok(const char *p)
{
	if (!p || strncmp(p, "/redfish/v1/", 12) || strlen(p) > 256 ||
	    strstr(p, ".."))
		return 0;
	for (; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("/._-#", *p))
			return 0;
	return 1;
}

static void redfish_run(struct pool *pl, struct nf_ctx *ctx, struct target *t)
{
	static const char *const reset_types[] = {
		[NF_POWER_ON] = "On", [NF_POWER_OFF] = "ForceOff",
		[NF_POWER_CYCLE] = "PowerCycle", [NF_POWER_RESET] = "ForceRestart",
	};
	struct nf_power_result *r = t->res;
	json_t *coll = NULL, *sys = NULL, *ans = NULL, *body = NULL;
	const char *sp, *st;
	char *syspath = NULL;

	/* the first (on a server, the only) ComputerSystem */
	if (rf_call(pl, ctx, t, "GET", "/redfish/v1/Systems", NULL, &coll))
		goto out;
	sp = json_string_value(json_object_get(
		json_array_get(json_object_get(coll, "Members"), 0), "@odata.id"));
	if (!rf_path_ok(sp)) {
		res_fail(r, "the Redfish service lists no usable ComputerSystem "
			 "in /redfish/v1/Systems");
		goto out;
	}
	if (!(syspath = nf_strdup(sp))) {
		res_fail(r, "out of memory");
		goto out;
	}
	switch (t->act) {
	case NF_POWER_STATUS:
		if (rf_call(pl, ctx, t, "GET", syspath, NULL, &sys))
			goto out;
		st = json_string_value(json_object_get(sys, "PowerState"));
		if (!st) {
			res_fail(r, "%s has no PowerState", syspath);
			goto out;
		}
		/* On, Off, PoweringOn, PoweringOff, Paused */
		snprintf(r->state, sizeof(r->state), "%s",
			 !strcmp(st, "On") ? "on" : !strcmp(st, "Off") ? "off"
			 : !strcmp(st, "PoweringOn") ? "powering-on"
			 : !strcmp(st, "PoweringOff") ? "powering-off" : "other");
		r->ok = 1;
		break;
	case NF_POWER_ON: case NF_POWER_OFF: case NF_POWER_CYCLE:
	case NF_POWER_RESET: {
		char *act = nf_asprintf("%s/Actions/ComputerSystem.Reset", syspath);

		body = json_pack("{s:s}", "ResetType", reset_types[t->act]);
		if (!act || !body) {
			free(act);
			res_fail(r, "out of memory");
			goto out;
		}
		if (!rf_call(pl, ctx, t, "POST", act, body, &ans))
			r->ok = 1;
		free(act);
		break;
	}
	case NF_BOOTDEV_PXE: case NF_BOOTDEV_DISK:
		body = json_pack("{s:{s:s, s:s}}", "Boot",
				 "BootSourceOverrideTarget",
				 t->act == NF_BOOTDEV_PXE ? "Pxe" : "Hdd",
				 "BootSourceOverrideEnabled",
				 pl->o->once ? "Once" : "Continuous");
		if (!body) {
			res_fail(r, "out of memory");
			goto out;
		}
		if (!rf_call(pl, ctx, t, "PATCH", syspath, body, &ans))
			r->ok = 1;
		break;
	}
out:
	json_decref(coll);
	json_decref(sys);
	json_decref(ans);
	json_decref(body);
	free(syspath);
}

/* --------------------------------------------------------------- workers */

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* The power state an action leaves the node in; NULL: none to wait for */
static const char *state_after(enum nf_power_action a)
{
	return a == NF_POWER_OFF ? "off"
	       : a == NF_POWER_ON || a == NF_POWER_CYCLE || a == NF_POWER_RESET
	       ? "on" : NULL;
}

/* The BMC took the action: ask its power state until it is the one the
 * action leads to or o->wait_ms passed.  A BMC that answers a status
 * badly in the middle of a cycle is asked again; only the deadline ends
 * the wait */
static void wait_state(struct pool *pl, struct nf_ctx *ctx, struct target *t)
{
	const char *want = state_after(pl->o->action);
	struct nf_power_result *r = t->res, probe;
	long long start = now_ms(), left;
	char last[sizeof(r->error)] = "";

	/* right after a cycle or reset the BMC may still say on: the power
	 * has not dropped yet */
	if (pl->o->action == NF_POWER_CYCLE || pl->o->action == NF_POWER_RESET)
		sleep_ms(BMC_POLL_MS < pl->o->wait_ms ? BMC_POLL_MS
						       : pl->o->wait_ms);
	for (;;) {
		left = pl->o->wait_ms - (now_ms() - start);
		memset(&probe, 0, sizeof(probe));
		t->res = &probe;
		t->act = NF_POWER_STATUS;
		/* the last status may not outlast the wait by a whole timeout */
		t->tmo_ms = left < 1000 ? 1000 : left < pl->timeout_ms ? left
			    : pl->timeout_ms;
		if (t->proto == NF_BMC_REDFISH)
			redfish_run(pl, ctx, t);
		else
			ipmi_run(pl, t);
		t->res = r;
		if (probe.ok) {
			snprintf(r->state, sizeof(r->state), "%s", probe.state);
			if (!strcmp(probe.state, want))
				return;
			*last = '\0';
		} else {
			snprintf(last, sizeof(last), "%s", probe.error);
		}
		left = pl->o->wait_ms - (now_ms() - start);
		if (left <= 0)
			break;
		sleep_ms(left < BMC_POLL_MS ? left : BMC_POLL_MS);
	}
	if (*last)
		res_fail(r, "not %s after %ld s: the BMC's power status failed: "
			 "%s", want, pl->o->wait_ms / 1000, last);
	else
		res_fail(r, "not %s after %ld s: the BMC says %s", want,
			 pl->o->wait_ms / 1000, r->state);
}

static void *worker(void *data)
{
	struct pool *pl = data;
	struct nf_ctx *ctx = NULL;

	if (nf_ctx_new(&ctx))
		ctx = NULL;
	for (;;) {
		struct target *t;

		pthread_mutex_lock(&pl->lock);
		t = pl->next < pl->n ? &pl->t[pl->next++] : NULL;
		pthread_mutex_unlock(&pl->lock);
		if (!t)
			break;
		if (t->res->ok || *t->res->error)
			continue; /* settled before the run: no BMC, no password */
		t->act = pl->o->action;
		t->tmo_ms = pl->timeout_ms;
		if (!ctx)
			res_fail(t->res, "out of memory");
		else if (t->proto == NF_BMC_REDFISH)
			redfish_run(pl, ctx, t);
		else
			ipmi_run(pl, t);
		if (ctx && t->res->ok && pl->o->wait_ms > 0 &&
		    state_after(pl->o->action))
			wait_state(pl, ctx, t);
		if (t->res->ok && pl->o->action >= NF_BOOTDEV_PXE)
			snprintf(t->res->state, sizeof(t->res->state), "%s %s",
				 nf_power_action_name(pl->o->action),
				 pl->o->once ? "once" : "persistent");
	}
	nf_ctx_free(ctx);
	return NULL;
}

/* ----------------------------------------------------------- credentials */

/* The credentials entry for a node: nodes.NAME, racks.RACK, default */
static const json_t *creds_for(const json_t *doc, const struct nf_node *nd)
{
	const json_t *c = json_object_get(json_object_get(doc, "nodes"),
					  nd->name);

	if (!c && nd->rack && *nd->rack)
		c = json_object_get(json_object_get(doc, "racks"), nd->rack);
	return c ? c : json_object_get(doc, "default");
}

/* user and password of one entry into t; 0, or the reason in t->res */
static void creds_take(struct nf_ctx *ctx, const char *file, const json_t *c,
		       struct target *t)
{
	const char *user = json_string_value(json_object_get(c, "user"));
	const char *pw = json_string_value(json_object_get(c, "password"));
	const char *pwf = json_string_value(json_object_get(c, "password_file"));
	uint8_t *buf = NULL;
	size_t len = 0;

	if (!c) {
		res_fail(t->res, "no BMC credentials for node '%s' in '%s' "
			 "(nodes.%s, racks.%s or default)", t->nd->name, file,
			 t->nd->name, *t->nd->rack ? t->nd->rack : "RACK");
		return;
	}
	if (!user || (!pw && !pwf)) {
		res_fail(t->res, "the BMC credentials of node '%s' in '%s' need "
			 "'user' and 'password' or 'password_file'", t->nd->name,
			 file);
		return;
	}
	if (!(t->user = nf_strdup(user))) {
		res_fail(t->res, "out of memory");
		return;
	}
	if (pw) {
		t->password = nf_strdup(pw);
	} else if (nf_secret_read(ctx, pwf, BMC_PASSWORD_MAX, &buf, &len)) {
		res_fail(t->res, "%s", nf_errmsg(ctx));
		return;
	} else {
		/* one line: the newline an editor adds is not the password */
		while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
			len--;
		buf[len] = '\0';
		t->password = nf_strdup((char *)buf);
		nf_wipe_free(buf, len + 1);
	}
	if (!t->password)
		res_fail(t->res, "out of memory");
}

static int creds_load(struct nf_ctx *ctx, const json_t *site, json_t **doc,
		      const char **file)
{
	const json_t *sec = json_object_get(json_object_get(site, "secrets"),
					    "bmc");
	uint8_t *buf = NULL;
	size_t len = 0;
	int r;

	*file = json_string_value(json_object_get(sec, "path"));
	if (!*file)
		return nf_fail(ctx, NF_E_INVALID, "the site names no BMC "
			       "credentials: add secrets.bmc.path, a file "
			       "with the BMC users and passwords "
			       "(docs/nodeforge-power.md)");
	if ((r = nf_secret_read(ctx, *file, BMC_SECRETS_MAX, &buf, &len)))
		return r;
	r = nf_yaml_load_buf(ctx, *file, (char *)buf, len, doc, NULL, NULL);
	nf_wipe_free(buf, len + 1);
	if (!r && !json_is_object(*doc)) {
		json_decref(*doc);
		*doc = NULL;
		r = nf_fail(ctx, NF_E_INVALID, "'%s' is not a mapping of default, "
			    "racks and nodes", *file);
	}
	return r;
}

/* ------------------------------------------------------------------ run */

int nf_power_run(struct nf_ctx *ctx, const struct nf_site *site,
		 const struct nf_inventory *inv, char *const *names, size_t n,
		 const struct nf_power_opts *o, struct nf_power_result **out)
{
	const json_t *sj = site ? nf_site_json(site) : NULL;
	const json_t *bmc = json_object_get(sj, "bmc");
	const char *defproto = json_string_value(json_object_get(bmc, "protocol"));
	const char *file = NULL;
	struct pool pl = { .o = o, .n = n };
	struct nf_power_result *res = NULL;
	pthread_t *th = NULL;
	json_t *creds = NULL;
	size_t nth = 0, i;
	unsigned m;
	int r = 0;

	*out = NULL;
	for (i = 0; i < n; i++)
		if (!nf_inventory_find(inv, names[i]))
			return nf_fail(ctx, NF_E_NOTFOUND, "no node '%s' in '%s'",
				       names[i], nf_inventory_path(inv));
	pl.timeout_ms = o->timeout_ms;
	if (!pl.timeout_ms && json_integer_value(json_object_get(bmc, "timeout")) > 0)
		pl.timeout_ms = (long)json_integer_value(json_object_get(bmc, "timeout")) * 1000;
	if (!pl.timeout_ms)
		pl.timeout_ms = BMC_TIMEOUT_MS;
	pl.cipher_suite = json_is_integer(json_object_get(bmc, "cipher_suite"))
		? (int)json_integer_value(json_object_get(bmc, "cipher_suite")) : -1;
	if (pl.cipher_suite > 255)
		pl.cipher_suite = -1;
	pl.ca_file = json_string_value(json_object_get(bmc, "ca"));
	pl.no_verify = json_is_false(json_object_get(bmc, "tls_verify"));
	if ((r = creds_load(ctx, sj, &creds, &file)))
		return r;
	res = calloc(n ? n : 1, sizeof(*res));
	pl.t = calloc(n ? n : 1, sizeof(*pl.t));
	if (!res || !pl.t) {
		r = -ENOMEM;
		goto out;
	}
	m = nf_err_mark(ctx);
	for (i = 0; i < n; i++) {
		struct target *t = &pl.t[i];
		const struct nf_node *nd = nf_inventory_find(inv, names[i]);

		t->nd = nd;
		t->res = &res[i];
		res[i].name = nd->name;
		t->proto = nd->bmc_protocol ? nd->bmc_protocol
			 : defproto && !strcmp(defproto, "redfish") ? NF_BMC_REDFISH
			 : NF_BMC_IPMI;
		res[i].protocol = t->proto == NF_BMC_REDFISH ? "redfish" : "ipmi";
		t->port = nd->bmc_port ? nd->bmc_port
			: t->proto == NF_BMC_IPMI ? 623 : nd->bmc_http ? 80 : 443;
		if (!nd->bmc) {
			res_fail(&res[i], "no BMC address in the inventory "
				 "(bmc: of node '%s')", nd->name);
			continue;
		}
		nf_ipv4_format(nd->bmc, t->addr);
		snprintf(res[i].bmc, sizeof(res[i].bmc), "%s:%u", t->addr, t->port);
		creds_take(ctx, file, creds_for(creds, nd), t);
	}
	/* a node without credentials failed in its result */
	nf_err_drop(ctx, m);
	if (pthread_mutex_init(&pl.lock, NULL)) {
		r = -ENOMEM;
		goto out;
	}
	nth = o->fanout ? o->fanout : NF_POWER_FANOUT;
	if (nth > n)
		nth = n;
	if (nth && !(th = calloc(nth, sizeof(*th))))
		nth = 0;
	for (i = 0; i < nth; i++)
		if (pthread_create(&th[i], NULL, worker, &pl))
			break;
	if (!i) /* no thread at all: this one does the work */
		worker(&pl);
	nth = i;
	for (i = 0; i < nth; i++)
		pthread_join(th[i], NULL);
	pthread_mutex_destroy(&pl.lock);
out:
	for (i = 0; pl.t && i < n; i++) {
		free(pl.t[i].user);
		if (pl.t[i].password)
			nf_wipe_free(pl.t[i].password, strlen(pl.t[i].password));
	}
	free(pl.t);
	free(th);
	json_decref(creds);
	if (r) {
		free(res);
		return r;
	}
	*out = res;
	return 0;
}
