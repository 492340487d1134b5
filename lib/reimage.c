/* SPDX-License-Identifier: MIT */
/*
 * Rolling reimage of Slurm nodes (docs/nodeforge-reimage.md).  Each node
 * walks these steps, and the run's state file records the last one done:
 *
 *   pending -> draining -> idle -> pointed -> cycled -> verified -> done
 *                                                (any step) -> failed
 *
 * draining: `scontrol update state=DRAIN` was asked; idle: Slurm says
 * IDLE+DRAIN (no job left, none killed); pointed: the boot entry names
 * the new image; cycled: the node's enrollment opened again (the caller's
 * before_cycle), boot device PXE once and a power cycle (or power on)
 * went through, at cycled_at; verified: the server holds a passing
 * verdict dated after cycled_at; done: slurmd registered after the cycle
 * and the node was resumed.  A step is done again after an interruption
 * only when it had not been recorded, and each is harmless to repeat.
 */
#include "internal.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define RUN_MAX (16u << 20)
#define NODE_DOC_MAX (1u << 20)
#define REASON_MAX 200

static const char *const steps[] = { "pending", "draining", "idle", "pointed",
				     "cycled", "verified", "done", "failed" };
enum step { PENDING, DRAINING, IDLE, POINTED, CYCLED, VERIFIED, DONE, FAILED };

struct run {
	struct nf_ctx *ctx;
	const struct nf_site *site;
	const struct nf_inventory *inv;
	const struct nf_reimage_opts *o;
	json_t *doc;          /* the state file's content */
	json_t *nodes;        /* borrowed: doc.nodes */
	char path[4096];
	int *locks;           /* one fd per node, -1 when not held */
	size_t n;
};

static void iso(time_t t, char out[32])
{
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static enum step step_of(json_t *nd)
{
	const char *s = json_string_value(json_object_get(nd, "step"));

	for (size_t i = 0; s && i < NF_ARRAY_SIZE(steps); i++)
		if (!strcmp(s, steps[i]))
			return (enum step)i;
	return PENDING;
}

static const char *name_of(json_t *nd)
{
	return json_string_value(json_object_get(nd, "name"));
}

static void event(struct run *r, const char *what, json_t *nd, json_t *extra)
{
	char when[32];
	json_t *ev;

	if (!r->o->event) {
		json_decref(extra);
		return;
	}
	iso(time(NULL), when);
	ev = json_pack("{s:s, s:s}", "event", what, "time", when);
	if (ev && nd)
		json_object_set_new(ev, "node", json_string(name_of(nd)));
	if (ev && extra)
		json_object_update(ev, extra);
	json_decref(extra);
	if (ev)
		r->o->event(r->o->userdata, ev);
	json_decref(ev);
}

static int save(struct run *r)
{
	char when[32], *s;
	int e;

	iso(time(NULL), when);
	json_object_set_new(r->doc, "updated_at", json_string(when));
	s = json_dumps(r->doc, JSON_INDENT(2) | JSON_SORT_KEYS);
	if (!s)
		return -ENOMEM;
	e = nf_write_atomic(r->ctx, r->path, s, strlen(s), 0644);
	free(s);
	return e;
}

static int set_step(struct run *r, json_t *nd, enum step st)
{
	json_object_set_new(nd, "step", json_string(steps[st]));
	return save(r);
}

/* ---- Slurm, through scontrol */

static int scontrol(struct run *r, const char *const *argv, char **out)
{
	struct timespec dl;
	char *cap = NULL;
	int st = 0, e;

	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_sec += 60;
	e = nf_spawn_capture(argv, NULL, &dl, &cap, &st);
	if (e == -ENOENT || e == -EACCES) {
		free(cap);
		return nf_fail(r->ctx, NF_E_EXTERNAL, "cannot run 'scontrol': %s "
			       "(Debian package slurm-client)", strerror(-e));
	}
	if (e || st) {
		size_t k;

		if (cap)
			for (k = strlen(cap); k && (cap[k - 1] == '\n'); k--)
				cap[k - 1] = '\0';
		e = nf_fail(r->ctx, e ? e : NF_E_EXTERNAL, "'scontrol %s %s' %s%s%s",
			    argv[1], argv[2] ? argv[2] : "",
			    e ? "did not finish: " : "failed: ",
			    e ? nf_strerror(e) : "",
			    cap && *cap ? cap : e ? "" : "(no message)");
		free(cap);
		return e;
	}
	if (out)
		*out = cap;
	else
		free(cap);
	return 0;
}

static int slurm_show(struct run *r, const char *node, struct nf_slurm_node *sn)
{
	const char *argv[] = { "scontrol", "show", "node", "-o", node, NULL };
	char *out = NULL;
	int e = scontrol(r, argv, &out);

	if (e)
		return e;
	e = nf_slurm_node_parse(out, strlen(out), sn);
	if (e || strcmp(sn->name, node))
		e = nf_fail(r->ctx, NF_E_PARSE, "cannot read node '%s' from "
			    "'scontrol show node -o %s': '%.200s'", node, node, out);
	free(out);
	return e;
}

static int slurm_update(struct run *r, const char *node, const char *state,
			const char *reason)
{
	char nn[128], rs[REASON_MAX + 16], st[32];
	const char *argv[] = { "scontrol", "update", nn, st, reason ? rs : NULL,
			       NULL };

	snprintf(nn, sizeof(nn), "NodeName=%s", node);
	snprintf(st, sizeof(st), "State=%s", state);
	if (reason)
		snprintf(rs, sizeof(rs), "Reason=%.*s", REASON_MAX, reason);
	return scontrol(r, argv, NULL);
}

/* ---- the boot server's word on a node */

static long long parse_utc(const char *s)
{
	struct tm tm = { 0 };
	char *end;

	if (!s || !(end = strptime(s, "%Y-%m-%dT%H:%M:%SZ", &tm)) || *end)
		return 0;
	return (long long)timegm(&tm);
}

/* 1 verdict after `since` (*pass, cause set), 0 none yet, < 0 error */
static int verdict(struct run *r, const char *node, long long since, int *pass,
		   char *cause, size_t csz)
{
	char *url = nf_asprintf("%s/api/v1/nodes/%s", r->o->server, node);
	char *body = NULL;
	size_t len;
	json_t *j;
	const char *st;
	int e;

	if (!url)
		return -ENOMEM;
	e = nf_http_get(r->ctx, url, NODE_DOC_MAX, 10000, &body, &len);
	free(url);
	if (e)
		return e;
	j = json_loadb(body, len, 0, NULL);
	free(body);
	st = json_string_value(json_object_get(j, "state"));
	e = 0;
	if (st && (!strcmp(st, "verified") || !strcmp(st, "failed")) &&
	    parse_utc(json_string_value(json_object_get(j, "verdict_at"))) >= since) {
		*pass = !strcmp(st, "verified");
		snprintf(cause, csz, "%s", json_string_value(json_object_get(
						   j, "root_cause")) ?:
				       "failed (no root cause given)");
		e = 1;
	}
	json_decref(j);
	return e;
}

/* ---- one node's steps */

static int fail_node(struct run *r, json_t *nd, const char *why)
{
	char reason[REASON_MAX + 1];
	int e;

	snprintf(reason, sizeof(reason), "nodeforge reimage failed: %s", why);
	for (char *c = reason; *c; c++)
		if (*c == '\n' || *c == '\t')
			*c = ' ';
	json_object_set_new(nd, "reason", json_string(reason));
	event(r, "fail", nd, json_pack("{s:s}", "reason", why));
	/* drained already, or never undrained: the reason is what changes */
	if ((e = slurm_update(r, name_of(nd), "DRAIN", reason)))
		event(r, "warning", nd, json_pack("{s:s}", "message",
						   nf_errmsg(r->ctx)));
	return set_step(r, nd, FAILED);
}

static int bmc(struct run *r, json_t *nd, enum nf_power_action a, int once,
	       char *state, size_t ssz)
{
	char *names[] = { (char *)name_of(nd) };
	/* a cycle is done when the node is on again, as for nodeforge power;
	 * a boot timeout shorter than power's wait bounds it too */
	long wait = r->o->boot_timeout_ms < NF_POWER_WAIT_MS
		    ? r->o->boot_timeout_ms : NF_POWER_WAIT_MS;
	struct nf_power_opts po = { .action = a, .once = once, .fanout = 1,
				    .timeout_ms = r->o->bmc_timeout_ms,
				    .wait_ms = a == NF_POWER_CYCLE || a == NF_POWER_ON
					       ? wait : 0 };
	struct nf_power_result *res = NULL;
	int e = nf_power_run(r->ctx, r->site, r->inv, names, 1, &po, &res);

	if (e)
		return e;
	if (!res[0].ok)
		e = nf_fail(r->ctx, NF_E_EXTERNAL, "BMC %s: %s",
			    nf_power_action_name(a), res[0].error);
	else if (state)
		snprintf(state, ssz, "%s", res[0].state);
	free(res);
	return e;
}

static const char *role_of(struct run *r, json_t *nd)
{
	const struct nf_node *n = nf_inventory_find(r->inv, name_of(nd));

	return n ? n->role : NULL;
}

/* Take the node one step on when it can; *busy: still in flight */
static int advance(struct run *r, json_t *nd, int *busy)
{
	const char *name = name_of(nd);
	const char *sha = json_string_value(json_object_get(
		json_object_get(r->doc, "roles"), role_of(r, nd)));
	struct nf_slurm_node sn;
	long long now = (long long)time(NULL);
	long long cycled = json_integer_value(json_object_get(nd, "cycled_at"));
	long long started = json_integer_value(json_object_get(nd, "started_at"));
	char buf[512], why[600];
	int e, pass = 0;

	*busy = 1;
	switch (step_of(nd)) {
	case PENDING:
		snprintf(buf, sizeof(buf), "nodeforge reimage to %s@%.12s",
			 role_of(r, nd), sha);
		json_object_set_new(nd, "started_at", json_integer(now));
		if ((e = slurm_update(r, name, "DRAIN", buf)))
			return e == NF_E_EXTERNAL && strstr(nf_errmsg(r->ctx),
							    "cannot run")
			       ? e : fail_node(r, nd, nf_errmsg(r->ctx));
		event(r, "drain", nd, json_pack("{s:s}", "reason", buf));
		return set_step(r, nd, DRAINING);
	case DRAINING:
		if ((e = slurm_show(r, name, &sn)))
			return fail_node(r, nd, nf_errmsg(r->ctx));
		if (!nf_slurm_state_has(sn.state, "DRAIN")) {
			/* undrained behind our back: drain again */
			snprintf(buf, sizeof(buf), "nodeforge reimage to %s@%.12s",
				 role_of(r, nd), sha);
			if ((e = slurm_update(r, name, "DRAIN", buf)))
				return fail_node(r, nd, nf_errmsg(r->ctx));
			return 0;
		}
		if ((!nf_slurm_state_has(sn.state, "IDLE") &&
		     !nf_slurm_state_has(sn.state, "DOWN")) ||
		    nf_slurm_state_has(sn.state, "COMPLETING")) {
			if (r->o->drain_timeout_ms &&
			    (now - started) * 1000 > r->o->drain_timeout_ms) {
				snprintf(why, sizeof(why), "jobs still running "
					 "after %ld s (state %s)",
					 r->o->drain_timeout_ms / 1000, sn.state);
				return fail_node(r, nd, why);
			}
			return 0;
		}
		event(r, "idle", nd, json_pack("{s:s}", "state", sn.state));
		return set_step(r, nd, IDLE);
	case IDLE: {
		const struct nf_node *n = nf_inventory_find(r->inv, name);
		char image[96];

		if ((e = nf_pxe_point_node(r->ctx, r->o->tree, r->o->images_dir,
					   n, sha, image)))
			return fail_node(r, nd, nf_errmsg(r->ctx));
		event(r, "point", nd, json_pack("{s:s}", "image", image));
		return set_step(r, nd, POINTED);
	}
	case POINTED:
		if (r->o->before_cycle) {
			long long secs = r->o->boot_timeout_ms / 1000;

			if ((e = r->o->before_cycle(r->o->cycle_userdata, name,
						    secs)))
				return fail_node(r, nd, nf_errmsg(r->ctx));
			event(r, "enroll", nd, json_pack("{s:I}", "seconds",
							 (json_int_t)secs));
		}
		if ((e = bmc(r, nd, NF_BOOTDEV_PXE, 1, NULL, 0)) ||
		    (e = bmc(r, nd, NF_POWER_STATUS, 0, buf, sizeof(buf))))
			return fail_node(r, nd, nf_errmsg(r->ctx));
		/* the verdict and slurmd's registration must come after */
		now = (long long)time(NULL);
		if ((e = bmc(r, nd, strcmp(buf, "off") ? NF_POWER_CYCLE
						       : NF_POWER_ON, 0, NULL, 0)))
			return fail_node(r, nd, nf_errmsg(r->ctx));
		json_object_set_new(nd, "cycled_at", json_integer(now));
		event(r, "power", nd, json_pack("{s:s}", "action",
						 strcmp(buf, "off") ? "cycle" : "on"));
		return set_step(r, nd, CYCLED);
	case CYCLED:
		e = verdict(r, name, cycled, &pass, buf, sizeof(buf));
		if (e < 0 || e == 0) {
			if (e < 0)
				event(r, "warning", nd, json_pack("{s:s}", "message",
								   nf_errmsg(r->ctx)));
			if ((now - cycled) * 1000 > r->o->boot_timeout_ms) {
				snprintf(why, sizeof(why), "no verdict on %s within "
					 "%ld s of the power cycle", r->o->server,
					 r->o->boot_timeout_ms / 1000);
				return fail_node(r, nd, why);
			}
			return 0;
		}
		event(r, "verdict", nd, json_pack("{s:s, s:s?}", "result",
						   pass ? "pass" : "fail",
						   "root_cause", pass ? NULL : buf));
		if (!pass)
			return fail_node(r, nd, buf);
		return set_step(r, nd, VERIFIED);
	case VERIFIED:
		if ((e = slurm_show(r, name, &sn)))
			return fail_node(r, nd, nf_errmsg(r->ctx));
		if (sn.slurmd_start < cycled ||
		    nf_slurm_state_has(sn.state, "NOT_RESPONDING") ||
		    nf_slurm_state_has(sn.state, "DOWN")) {
			if ((now - cycled) * 1000 > r->o->boot_timeout_ms) {
				snprintf(why, sizeof(why), "slurmd did not register "
					 "within %ld s of the power cycle (state "
					 "%s)", r->o->boot_timeout_ms / 1000,
					 sn.state);
				return fail_node(r, nd, why);
			}
			return 0;
		}
		if ((e = slurm_update(r, name, "RESUME", NULL)))
			return fail_node(r, nd, nf_errmsg(r->ctx));
		json_object_del(nd, "reason");
		event(r, "resume", nd, NULL);
		*busy = 0;
		return set_step(r, nd, DONE);
	case DONE:
	case FAILED:
		*busy = 0;
		return 0;
	}
	return 0;
}

/* ---- run state and locks */

static int lock_node(struct run *r, size_t i, const char *name)
{
	char path[4200], pid[32];
	int fd;

	snprintf(path, sizeof(path), "%s/locks", r->o->run_dir);
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		return nf_fail(r->ctx, -errno, "cannot create '%s': %s", path,
			       strerror(errno));
	snprintf(path, sizeof(path), "%s/locks/%s.lock", r->o->run_dir, name);
	fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return nf_fail(r->ctx, -errno, "cannot open '%s': %s", path,
			       strerror(errno));
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		char held[32] = "";
		ssize_t k = pread(fd, held, sizeof(held) - 1, 0);

		held[k > 0 ? k : 0] = '\0';
		held[strcspn(held, "\n")] = '\0';
		close(fd);
		return nf_fail(r->ctx, NF_E_LOCKED, "node '%s' is being reimaged "
			       "by another run (process %s holds '%s')", name,
			       *held ? held : "?", path);
	}
	snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) < 0 || pwrite(fd, pid, strlen(pid), 0) < 0) {
		int e = -errno;

		close(fd);
		return nf_fail(r->ctx, e, "cannot write '%s': %s", path,
			       strerror(-e));
	}
	r->locks[i] = fd;
	return 0;
}

static int unfinished(json_t *doc)
{
	size_t i;
	json_t *nd;

	json_array_foreach(json_object_get(doc, "nodes"), i, nd)
		if (step_of(nd) != DONE && step_of(nd) != FAILED)
			return 1;
	return 0;
}

/* The run to resume: o->run_id, or the one unfinished run in run_dir */
static int find_run(struct run *r)
{
	const char *id = r->o->run_id;
	char *buf = NULL, found[256] = "";
	size_t nfound = 0;
	json_error_t je;
	int e;

	if (!id) {
		DIR *d = opendir(r->o->run_dir);
		struct dirent *de;

		if (!d)
			return nf_fail(r->ctx, NF_E_NOTFOUND, "no run to resume: "
				       "cannot open '%s': %s", r->o->run_dir,
				       strerror(errno));
		while ((de = readdir(d))) {
			size_t k = strlen(de->d_name);
			char p[4400];

			if (k < 6 || k > 200 || strcmp(de->d_name + k - 5, ".json"))
				continue;
			snprintf(p, sizeof(p), "%s/%s", r->o->run_dir, de->d_name);
			if (nf_read_file(NULL, p, RUN_MAX, &buf, NULL))
				continue;
			json_t *j = json_loads(buf, 0, NULL);

			free(buf);
			buf = NULL;
			if (j && unfinished(j)) {
				if (nfound++)
					snprintf(found + strlen(found),
						 sizeof(found) - strlen(found),
						 ", ");
				snprintf(found + strlen(found),
					 sizeof(found) - strlen(found), "%.*s",
					 (int)(k - 5), de->d_name);
			}
			json_decref(j);
		}
		closedir(d);
		if (!nfound)
			return nf_fail(r->ctx, NF_E_NOTFOUND, "no unfinished run "
				       "in '%s' to resume", r->o->run_dir);
		if (nfound > 1)
			return nf_fail(r->ctx, NF_E_CONFLICT, "%zu unfinished runs "
				       "in '%s' (%s): name one with --resume "
				       "RUN-ID", nfound, r->o->run_dir, found);
		id = found;
	}
	if (strchr(id, '/') || !*id || strlen(id) > 200)
		return nf_fail(r->ctx, NF_E_INVALID, "invalid run id '%s'", id);
	snprintf(r->path, sizeof(r->path), "%s/%s.json", r->o->run_dir, id);
	if ((e = nf_read_file(r->ctx, r->path, RUN_MAX, &buf, NULL)))
		return e == -ENOENT ? nf_fail(r->ctx, NF_E_NOTFOUND, "no run "
					      "'%s' in '%s'", id, r->o->run_dir)
				    : e;
	r->doc = json_loads(buf, 0, &je);
	free(buf);
	if (!json_is_array(json_object_get(r->doc, "nodes")) ||
	    !json_is_object(json_object_get(r->doc, "roles")))
		return nf_fail(r->ctx, NF_E_PARSE, "'%s' is not a reimage run "
			       "(%s)", r->path, r->doc ? "no nodes or roles"
						       : je.text);
	return 0;
}

/* A new run: each role's image resolved now, so a later build does not
 * change what this run installs */
static int new_run(struct run *r, char *const *names, size_t n)
{
	const char *img = r->o->image, *at = strchr(img, '@');
	char role[128] = "", sha[65], id[64], when[32];
	json_t *roles = json_object();
	time_t now = time(NULL);
	struct tm tm;

	if (at && (size_t)(at - img) < sizeof(role))
		snprintf(role, sizeof(role), "%.*s", (int)(at - img), img);
	else if (strcmp(img, "current"))
		return nf_fail(r->ctx, NF_E_INVALID, "invalid image '%s': "
			       "ROLE@SHA, ROLE@current or current", img);
	for (size_t i = 0; i < n; i++) {
		const struct nf_node *nd = nf_inventory_find(r->inv, names[i]);

		if (!nd) {
			json_decref(roles);
			return nf_fail(r->ctx, NF_E_NOTFOUND, "no node '%s' in "
				       "'%s'", names[i], nf_inventory_path(r->inv));
		}
		for (size_t k = 0; k < i; k++)
			if (!strcmp(names[k], names[i])) {
				json_decref(roles);
				return nf_fail(r->ctx, NF_E_INVALID, "node '%s' is "
					       "named twice", names[i]);
			}
		if (*role && strcmp(nd->role, role)) {
			json_decref(roles);
			return nf_fail(r->ctx, NF_E_CONFLICT, "node '%s' has role "
				       "'%s' in '%s', not '%s' (image '%s')",
				       names[i], nd->role,
				       nf_inventory_path(r->inv), role, img);
		}
		if (json_object_get(roles, nd->role))
			continue;
		int e = nf_pxe_current_sha(r->ctx, r->o->images_dir, nd->role, sha);

		if (e) {
			json_decref(roles);
			return e;
		}
		if (at && strcmp(at + 1, "current")) {
			size_t k = strlen(at + 1);

			if (k < 12 || k > 64 || strspn(at + 1, "0123456789abcdef") != k) {
				json_decref(roles);
				return nf_fail(r->ctx, NF_E_INVALID, "invalid image "
					       "'%s': SHA must be 12 to 64 "
					       "lower-case hex digits", img);
			}
			/* the current image or an older one still published
			 * (a rollback) */
			if ((e = nf_pxe_image_sha(r->ctx, r->o->images_dir, role,
						  at + 1, sha))) {
				json_decref(roles);
				return e;
			}
		}
		json_object_set_new(roles, nd->role, json_string(sha));
	}
	gmtime_r(&now, &tm);
	strftime(id, sizeof(id), "%Y%m%dT%H%M%SZ", &tm);
	snprintf(id + strlen(id), sizeof(id) - strlen(id), "-%ld", (long)getpid());
	iso(now, when);
	r->doc = json_pack("{s:s, s:s, s:s, s:o, s:[], s:{s:i, s:i, s:i, s:s, "
			   "s:s, s:s}}", "run", id, "image", img, "started_at",
			   when, "roles", roles, "nodes", "options", "batch",
			   (int)r->o->batch, "max_down", (int)r->o->max_down,
			   "max_failed", (int)r->o->max_failed, "images",
			   r->o->images_dir, "tree", r->o->tree, "server",
			   r->o->server);
	if (!r->doc)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		json_array_append_new(json_object_get(r->doc, "nodes"),
				      json_pack("{s:s, s:s}", "name", names[i],
						"step", "pending"));
	snprintf(r->path, sizeof(r->path), "%s/%s.json", r->o->run_dir, id);
	return 0;
}

static void pause_ms(const struct nf_reimage_opts *o, long ms)
{
	for (; ms > 0 && !(o->stop && *o->stop); ms -= 100) {
		struct timespec ts = { 0, (ms < 100 ? ms : 100) * 1000000L };

		nanosleep(&ts, NULL);
	}
}

static int count(json_t *nodes, enum step st)
{
	size_t i, k = 0;
	json_t *nd;

	json_array_foreach(nodes, i, nd)
		k += step_of(nd) == st;
	return (int)k;
}

static int run_batches(struct run *r, struct nf_reimage_summary *sum)
{
	const struct nf_reimage_opts *o = r->o;
	unsigned batch = o->batch ? o->batch : 1;
	size_t i;
	json_t *nd;
	int e;

	for (;;) {
		size_t active = 0, want;
		unsigned failed = (unsigned)count(r->nodes, FAILED);

		json_array_foreach(r->nodes, i, nd)
			active += step_of(nd) != PENDING && step_of(nd) != DONE &&
				  step_of(nd) != FAILED;
		/* a batch ends before the next starts */
		if (!active) {
			if (!count(r->nodes, PENDING))
				return 0;
			want = batch;
			if (o->max_failed && failed >= o->max_failed) {
				sum->stopped = 1;
				event(r, "stop", NULL, json_pack("{s:s, s:i}",
					"why", "max-failed", "failed", (int)failed));
				return 0;
			}
			if (o->max_down) {
				if (failed >= o->max_down) {
					sum->stopped = 1;
					event(r, "stop", NULL, json_pack(
						"{s:s, s:i}", "why", "max-down",
						"failed", (int)failed));
					return 0;
				}
				if (want > o->max_down - failed)
					want = o->max_down - failed;
			}
			json_t *b = json_array();

			json_array_foreach(r->nodes, i, nd)
				if (want && step_of(nd) == PENDING) {
					json_object_set_new(nd, "batch", json_true());
					json_array_append_new(b, json_string(
						name_of(nd)));
					want--;
				}
			event(r, "batch", NULL, json_pack("{s:o}", "nodes", b));
		}
		/* every node of the batch one step on, then a pause when
		 * none could move */
		int moved = 0;

		json_array_foreach(r->nodes, i, nd) {
			enum step before = step_of(nd);
			int busy;

			if (before == DONE || before == FAILED ||
			    (before == PENDING &&
			     !json_is_true(json_object_get(nd, "batch"))))
				continue;
			if (o->stop && *o->stop)
				return -EINTR;
			if ((e = advance(r, nd, &busy)))
				return e;
			moved |= step_of(nd) != before;
		}
		if (o->stop && *o->stop)
			return -EINTR;
		if (!moved)
			pause_ms(o, o->poll_ms);
	}
}

int nf_reimage_run(struct nf_ctx *ctx, const struct nf_site *site,
		   const struct nf_inventory *inv, char *const *names, size_t n,
		   const struct nf_reimage_opts *opts, struct nf_reimage_summary *sum)
{
	struct nf_reimage_opts o = *opts;
	struct run r = { .ctx = ctx, .site = site, .inv = inv, .o = &o };
	size_t i;
	json_t *nd;
	int e;

	memset(sum, 0, sizeof(*sum));
	if (!o.poll_ms)
		o.poll_ms = 5000;
	if (!o.boot_timeout_ms)
		o.boot_timeout_ms = 30 * 60 * 1000L;
	if (mkdir(o.run_dir, 0755) < 0 && errno != EEXIST)
		return nf_fail(ctx, -errno, "cannot create '%s': %s", o.run_dir,
			       strerror(errno));
	e = o.resume ? find_run(&r) : new_run(&r, names, n);
	if (e)
		goto out;
	if (o.resume) {
		/* what the run was started with, unless given again */
		json_t *so = json_object_get(r.doc, "options");
		const char **str[] = { &o.images_dir, &o.tree, &o.server };
		const char *keys[] = { "images", "tree", "server" };

		for (i = 0; i < NF_ARRAY_SIZE(keys); i++)
			if (json_string_value(json_object_get(so, keys[i])))
				*str[i] = json_string_value(json_object_get(so, keys[i]));
		if (!o.batch)
			o.batch = (unsigned)json_integer_value(json_object_get(so, "batch"));
		if (!o.max_down)
			o.max_down = (unsigned)json_integer_value(json_object_get(so, "max_down"));
		if (!o.max_failed)
			o.max_failed = (unsigned)json_integer_value(json_object_get(so, "max_failed"));
		if (!o.tree || !o.server) {
			e = nf_fail(ctx, NF_E_PARSE, "'%s' names no tree or server",
				    r.path);
			goto out;
		}
	}
	r.nodes = json_object_get(r.doc, "nodes");
	r.n = json_array_size(r.nodes);
	if (!(r.locks = malloc((r.n ? r.n : 1) * sizeof(int)))) {
		e = -ENOMEM;
		goto out;
	}
	for (i = 0; i < r.n; i++)
		r.locks[i] = -1;
	json_array_foreach(r.nodes, i, nd) {
		if (!name_of(nd) || !nf_inventory_find(inv, name_of(nd)) ||
		    !json_is_string(json_object_get(json_object_get(r.doc, "roles"),
						    role_of(&r, nd)))) {
			e = nf_fail(ctx, NF_E_NOTFOUND, "node '%s' of '%s' is not "
				    "in '%s' with a role of the run",
				    name_of(nd) ? name_of(nd) : "?", r.path,
				    nf_inventory_path(inv));
			goto out;
		}
		if (step_of(nd) != DONE && step_of(nd) != FAILED &&
		    (e = lock_node(&r, i, name_of(nd))))
			goto out;
	}
	json_object_set_new(r.doc, "status", json_string("running"));
	snprintf(sum->run_id, sizeof(sum->run_id), "%s",
		 json_string_value(json_object_get(r.doc, "run")) ?: "");
	snprintf(sum->state_path, sizeof(sum->state_path), "%s", r.path);
	if ((e = save(&r)))
		goto out;
	{
		json_t *nn = json_array();

		json_array_foreach(r.nodes, i, nd)
			json_array_append_new(nn, json_string(name_of(nd)));
		event(&r, o.resume ? "resume-run" : "start", NULL,
		      json_pack("{s:s, s:s, s:O, s:o}", "run", sum->run_id,
				"state", r.path, "roles",
				json_object_get(r.doc, "roles"), "nodes", nn));
	}
	e = run_batches(&r, sum);
	json_object_set_new(r.doc, "status", json_string(
		e == -EINTR ? "interrupted" : e ? "error" : sum->stopped
		? "stopped" : "finished"));
	{
		int se = save(&r);

		if (!e)
			e = se;
	}
	sum->nodes = r.n;
	sum->resumed = (size_t)count(r.nodes, DONE);
	sum->failed = (size_t)count(r.nodes, FAILED);
	sum->pending = r.n - sum->resumed - sum->failed;
	event(&r, "end", NULL, json_pack("{s:s, s:s, s:i, s:i, s:i}", "run",
					 sum->run_id, "status",
					 json_string_value(json_object_get(
						 r.doc, "status")),
					 "resumed", (int)sum->resumed, "failed",
					 (int)sum->failed, "pending",
					 (int)sum->pending));
	if (e == -EINTR)
		nf_fail(ctx, -EINTR, "interrupted: run '%s' saved in '%s'; "
			"'nodeforge reimage --resume %s' continues it",
			sum->run_id, r.path, sum->run_id);
out:
	for (i = 0; r.locks && i < r.n; i++)
		if (r.locks[i] >= 0)
			close(r.locks[i]);
	free(r.locks);
	json_decref(r.doc);
	return e;
}
