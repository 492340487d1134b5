/* SPDX-License-Identifier: MIT */
/*
 * Golden-image CI: build a role, verify the image offline, diff it against
 * the last released image, one verdict with a test case per check and per
 * stage (JUnit for CI systems, JSON for scripts).
 *
 * This file holds the run, the static stage (the verifier offline, no
 * secrets, the image's own daemons through lib/ci_daemons.c) and the
 * reports; the boot stage is lib/ci_boot.c, the diff against a baseline
 * lib/ci_diff.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ci_int.h"
#include "internal/ci.h"

#define CI_MAX_CASES 100000
#define CI_SCAN_MAX (1ULL << 20)        /* secret scan: bytes read per file */

int nf_ci_add_case(struct nf_ci *ci, const char *cls, const char *name,
		   int verdict, const char *message, const char *detail,
		   double secs)
{
	struct nf_ci_case *c;

	if (ci->n == ci->cap) {
		size_t cap = ci->cap ? ci->cap * 2 : 64;
		void *p;

		if (cap > CI_MAX_CASES)
			return -E2BIG;
		if (!(p = realloc(ci->v, cap * sizeof(*ci->v))))
			return -ENOMEM;
		ci->v = p;
		ci->cap = cap;
	}
	c = &ci->v[ci->n];
	memset(c, 0, sizeof(*c));
	c->classname = nf_strdup(cls);
	c->name = nf_strdup(name);
	c->message = message ? nf_strdup(message) : NULL;
	c->detail = detail ? nf_strdup(detail) : NULL;
	c->verdict = verdict;
	c->secs = secs;
	if (!c->classname || !c->name || (message && !c->message) ||
	    (detail && !c->detail)) {
		free(c->classname);
		free(c->name);
		free(c->message);
		free(c->detail);
		return -ENOMEM;
	}
	ci->n++;
	return 0;
}

void nf_ci_free(struct nf_ci *ci)
{
	if (!ci)
		return;
	for (size_t i = 0; i < ci->n; i++) {
		free(ci->v[i].classname);
		free(ci->v[i].name);
		free(ci->v[i].message);
		free(ci->v[i].detail);
	}
	free(ci->v);
	json_decref(ci->diff);
	free(ci->rootfs);
	free(ci->rootfs_sha256);
	free(ci);
}

size_t nf_ci_count(const struct nf_ci *ci)
{
	return ci ? ci->n : 0;
}

const struct nf_ci_case *nf_ci_case(const struct nf_ci *ci, size_t i)
{
	return ci && i < ci->n ? &ci->v[i] : NULL;
}

size_t nf_ci_tally(const struct nf_ci *ci, int verdict)
{
	size_t k = 0;

	for (size_t i = 0; ci && i < ci->n; i++)
		k += ci->v[i].verdict == verdict;
	return k;
}

int nf_ci_passed(const struct nf_ci *ci)
{
	return ci && !nf_ci_tally(ci, NF_V_FAIL) && !nf_ci_tally(ci, NF_V_HUNG);
}

const json_t *nf_ci_diff(const struct nf_ci *ci)
{
	return ci ? ci->diff : NULL;
}

/* ------------------------------------------------------ no secrets, no
 * host identity: decided on the unpacked tree, never following links */

struct scan {
	/* the secret files the facets own, and where the image has each */
	struct nf_secret_file sec[NF_SECRETS_MAX];
	json_t *found[NF_SECRETS_MAX];
	size_t nsec;
	json_t *storagepass, *privkey, *hostkeys;
	json_t *unreadable;     /* what the scan could not read */
};

static int has_private_key(const char *buf, size_t len)
{
	static const char tag[] = "PRIVATE KEY-----";

	return memmem(buf, len, "-----BEGIN ", 11) &&
	       memmem(buf, len, tag, sizeof(tag) - 1);
}

/* "StoragePass=<something>" on a line of its own (comments ignored) */
int nf_ci_has_storagepass(const char *buf, size_t len)
{
	const char *p = buf, *end = buf + len;

	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *q = p;

		if (!eol)
			eol = end;
		while (q < eol && (*q == ' ' || *q == '\t'))
			q++;
		if ((size_t)(eol - q) > 11 && !strncasecmp(q, "StoragePass", 11)) {
			q += 11;
			while (q < eol && (*q == ' ' || *q == '\t'))
				q++;
			if (q < eol && *q == '=') {
				q++;
				while (q < eol && (*q == ' ' || *q == '\t' || *q == '\r'))
					q++;
				if (q < eol)
					return 1;
			}
		}
		p = eol + 1;
	}
	return 0;
}

/* A file or directory the scan cannot read is a finding of every secret
 * case: what it holds is unknown, so the scan fails closed */
static int unscanned(struct scan *s, const char *what)
{
	return json_array_append_new(s->unreadable, json_string(what)) ? -ENOMEM : 0;
}

/* "PATH (WHY)" into what the scan could not read */
static int unscanned_why(struct scan *s, const char *path, const char *why)
{
	char *msg = nf_asprintf("%s (%s)", path, why);
	int r = msg ? unscanned(s, msg) : -ENOMEM;

	free(msg);
	return r;
}

static int scan_file(struct scan *s, const struct nf_walk_entry *e)
{
	char *buf;
	ssize_t k = 0;
	size_t len = 0;
	int fd = openat(e->dfd, e->name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC |
			O_NONBLOCK);
	int r = 0;

	if (fd < 0)
		return unscanned_why(s, e->path, strerror(errno));
	if (!(buf = malloc(CI_SCAN_MAX))) {
		close(fd);
		return -ENOMEM;
	}
	while (len < CI_SCAN_MAX &&
	       (k = read(fd, buf + len, CI_SCAN_MAX - len)) > 0)
		len += (size_t)k;
	if (k < 0 && len < CI_SCAN_MAX)
		r = unscanned_why(s, e->path, strerror(errno));
	close(fd);
	if (has_private_key(buf, len))
		json_array_append_new(s->privkey, json_string(e->path));
	if (nf_ci_has_storagepass(buf, len))
		json_array_append_new(s->storagepass, json_string(e->path));
	free(buf);
	return r;
}

/* E->path is relative to the image root: the walk shows the top as
 * "etc", "var/lib", ... */
static int scan_entry(void *data, const struct nf_walk_entry *e)
{
	struct scan *s = data;

	if (!S_ISREG(e->st->st_mode))
		return 0;
	for (size_t i = 0; i < s->nsec; i++)
		if ((s->sec[i].name && !strcmp(e->name, s->sec[i].name)) ||
		    !strcmp(s->sec[i].path + 1, e->path))
			json_array_append_new(s->found[i],
					      json_string(e->path));
	if (!strncmp(e->name, "ssh_host_", 9))
		json_array_append_new(s->hostkeys, json_string(e->path));
	return scan_file(s, e);
}

/* A directory the walk cannot open or read, or one nested deeper than
 * the walk goes: what it holds is unknown, so it is recorded (failing
 * every secret case) and the walk goes on with the rest */
static int scan_error(void *data, const struct nf_walk_entry *e, int err,
		      const char *why)
{
	(void)err;
	return unscanned_why(data, e->path, why);
}

static const struct nf_walk_ops scan_ops = { .enter = scan_entry,
					     .error = scan_error };

/* The whole tree below ROOT/TOP, down to the walker's depth limit; what
 * the walk cannot read is recorded, named, and the walk goes on */
static int scan_tree(struct nf_ctx *ctx, int rootfd, const char *top,
		     struct scan *s)
{
	int fd, r;

	/* absent, or a link (which points outside the image): nothing of
	 * the image's own is there */
	fd = openat(rootfd, top, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ENOTDIR || errno == ELOOP ? 0
			: unscanned_why(s, top, strerror(errno));
	r = nf_walk_fd(ctx, fd, top, &scan_ops, s);
	close(fd);
	if (r && r != -ENOMEM)
		r = unscanned(s, nf_error_text(ctx, r));
	return r;
}

static char *join_list(const json_t *a)
{
	struct nf_buf b = { 0 };
	size_t i;
	json_t *x;

	json_array_foreach(a, i, x) {
		if (i == 8) {
			nf_buf_printf(&b, " and %zu more", json_array_size(a) - i);
			break;
		}
		nf_buf_printf(&b, "%s%s", i ? ", " : "", json_string_value(x));
	}
	return b.s;
}

/* FOUND fails the case; so does UNREAD (what the scan could not read),
 * named after the findings */
static int list_case(struct nf_ci *ci, const char *id, const json_t *found,
		     const json_t *unread, const char *what, const char *remedy,
		     double secs)
{
	char *seen = NULL, *un = NULL, *msg;
	int r;

	if (!json_array_size(found) && !json_array_size(unread))
		return nf_ci_add_case(ci, "ci.static", id, NF_V_PASS, NULL, NULL, secs);
	if (json_array_size(found))
		seen = join_list(found);
	if (json_array_size(unread))
		un = join_list(unread);
	msg = nf_asprintf("%s%s%s%s%s%s", seen ? what : "", seen ? ": " : "",
			  seen ? seen : "", seen && un ? "; " : "",
			  un ? "not scanned, unreadable: " : "", un ? un : "");
	r = msg ? nf_ci_add_case(ci, "ci.static", id, NF_V_FAIL, msg,
				 seen ? remedy : "make every file of the image "
				 "readable to the scan", secs)
		: -ENOMEM;
	free(seen);
	free(un);
	free(msg);
	return r;
}

/* The secret files the facets own, at the places the image's profile
 * puts them (the facets' defaults without one) */
static int facet_secrets(struct nf_ctx *ctx, const char *root,
			 struct nf_profile **p, struct scan *s)
{
	const json_t *prof = NULL;
	char *path;
	int r = 0;

	if (!(path = nf_asprintf("%s/etc/nodeforge/profile.json", root)))
		return -ENOMEM;
	if (access(path, F_OK) == 0 && (r = nf_profile_load_json(ctx, path, p)))
		goto out;
	prof = *p ? nf_profile_json(*p) : NULL;
	for (size_t i = 0; i < nf_nfacets; i++) {
		const struct nf_facet *f = nf_facets[i];

		if (f->secrets)
			s->nsec += f->secrets(json_object_get(prof, f->name),
					      s->sec + s->nsec,
					      NF_ARRAY_SIZE(s->sec) - s->nsec);
	}
	for (size_t i = 0; i < s->nsec; i++) {
		if (!s->sec[i].path || s->sec[i].path[0] != '/') {
			r = nf_fail(ctx, NF_E_INVALID, "secret file '%s' is not "
				    "an absolute path", s->sec[i].path ? s->sec[i].path : "");
			goto out;
		}
		if (!(s->found[i] = json_array())) {
			r = -ENOMEM;
			goto out;
		}
	}
out:
	free(path);
	return r;
}

/* A secret file at its own place, wherever that is: the walk covers only
 * the directories where files of an image's own are kept */
static int secret_at_path(int rootfd, struct scan *s, size_t i)
{
	const char *rel = s->sec[i].path + 1;
	struct stat st;
	size_t k;
	json_t *x;

	if (fstatat(rootfd, rel, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
		return 0;
	json_array_foreach(s->found[i], k, x)
		if (!strcmp(json_string_value(x), rel))
			return 0;
	return json_array_append_new(s->found[i], json_string(rel)) ? -ENOMEM : 0;
}

int nf_ci_secret_scan(struct nf_ctx *ctx, struct nf_ci *ci, const char *root)
{
	static const char *const dirs[] = { "etc", "root", "home", "var/lib",
					    "opt", "srv", "usr/local" };
	struct scan s = { .storagepass = json_array(), .privkey = json_array(),
			  .hostkeys = json_array(), .unreadable = json_array() };
	struct nf_profile *p = NULL;
	double t0 = nf_now_s();
	int rootfd, r = 0;
	struct stat st;

	if (!s.storagepass || !s.privkey || !s.hostkeys || !s.unreadable) {
		r = -ENOMEM;
		goto out;
	}
	if ((r = facet_secrets(ctx, root, &p, &s)))
		goto out;
	rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0) {
		r = nf_fail(ctx, -errno, "cannot open '%s': %s", root,
			    strerror(errno));
		goto out;
	}
	for (size_t i = 0; !r && i < NF_ARRAY_SIZE(dirs); i++)
		r = scan_tree(ctx, rootfd, dirs[i], &s);
	for (size_t i = 0; !r && i < s.nsec; i++)
		r = secret_at_path(rootfd, &s, i);
	for (size_t i = 0; !r && i < s.nsec; i++)
		r = list_case(ci, s.sec[i].id, s.found[i], s.unreadable,
			      s.sec[i].what, s.sec[i].remedy, nf_now_s() - t0);
	if (!r)
		r = list_case(ci, "ci.secrets.storage_pass", s.storagepass, s.unreadable,
			      "StoragePass set in",
			      "remove StoragePass from the overlay; nodeforge "
			      "delivers it at enrollment", nf_now_s() - t0);
	if (!r)
		r = list_case(ci, "ci.secrets.private_key", s.privkey, s.unreadable,
			      "private key material in",
			      "remove the key from the overlay or artifact", nf_now_s() - t0);
	if (!r)
		r = list_case(ci, "ci.identity.ssh_host_keys", s.hostkeys, NULL,
			      "ssh host keys in",
			      "host keys are generated on each node's first boot",
			      nf_now_s() - t0);
	if (!r) {
		/* empty, or absent: systemd makes one on first boot */
		if (fstatat(rootfd, "etc/machine-id", &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    (!S_ISREG(st.st_mode) || st.st_size > 0)) {
			char *msg = nf_asprintf("/etc/machine-id is %s",
						S_ISREG(st.st_mode) ? "not empty"
								    : "not a regular file");

			r = msg ? nf_ci_add_case(ci, "ci.static", "ci.identity.machine_id",
					   NF_V_FAIL, msg,
					   "an image ships an empty /etc/machine-id",
					   nf_now_s() - t0)
				: -ENOMEM;
			free(msg);
		} else {
			r = nf_ci_add_case(ci, "ci.static", "ci.identity.machine_id",
				     NF_V_PASS, NULL, NULL, nf_now_s() - t0);
		}
	}
	close(rootfd);
out:
	for (size_t i = 0; i < s.nsec; i++)
		json_decref(s.found[i]);
	nf_profile_free(p);
	json_decref(s.storagepass);
	json_decref(s.privkey);
	json_decref(s.hostkeys);
	json_decref(s.unreadable);
	return r;
}

/* ------------------------------------------------------------- stages */

/* The image's own daemons parse its configuration: class static.daemons */
static int daemon_cases(struct nf_ctx *ctx, struct nf_ci *ci, const char *root,
			const char *inventory, const struct nf_site *site)
{
	json_t *cases = NULL, *c;
	size_t i;
	int r;

	if ((r = nf_ci_daemons(ctx, root, inventory, site, &cases)))
		return r;
	json_array_foreach(cases, i, c) {
		const char *msg = json_string_value(json_object_get(c, "message"));
		int v = (int)json_integer_value(json_object_get(c, "verdict"));

		if ((r = nf_ci_add_case(ci, "static.daemons",
				  json_string_value(json_object_get(c, "id")), v, msg,
				  v == NF_V_FAIL ? msg : NULL, 0)))
			break;
	}
	json_decref(cases);
	return r;
}

static int static_stage(struct nf_ctx *ctx, struct nf_ci *ci, const char *root,
			const char *inventory, const struct nf_site *site)
{
	struct nf_profile *p = NULL;
	struct nf_verify *v = NULL;
	struct nf_verify_opts vo = { .root = root };
	char *path = nf_asprintf("%s/etc/nodeforge/profile.json", root);
	int r;

	if (!path)
		return -ENOMEM;
	r = nf_profile_load_json(ctx, path, &p);
	free(path);
	if (r)
		return r;
	if ((r = nf_verify_run(ctx, p, &vo, &v)))
		goto out;
	for (size_t i = 0; !r && i < nf_verify_count(v); i++) {
		const struct nf_check_result *c = nf_verify_result(v, i);
		char *cls = nf_asprintf("static.%s", c->facet);
		char *detail = NULL;
		const char *msg = NULL;

		if (!cls) {
			r = -ENOMEM;
			break;
		}
		if (c->verdict == NF_V_FAIL) {
			msg = c->seen;
			detail = nf_asprintf("expected: %s\nseen: %s\nremedy: %s",
					     c->expected ?: "", c->seen ?: "",
					     c->remedy ?: "");
		} else if (c->verdict == NF_V_WARN) {
			msg = c->seen;
		} else if (c->verdict != NF_V_PASS) {
			msg = c->reason;
		}
		/* a warning is a passed case that carries its message */
		r = nf_ci_add_case(ci, cls, c->id,
			     c->verdict == NF_V_WARN ? NF_V_PASS : c->verdict, msg,
			     detail, c->elapsed_us / 1e6);
		free(cls);
		free(detail);
	}
	if (!r)
		r = nf_ci_secret_scan(ctx, ci, root);
	if (!r)
		r = daemon_cases(ctx, ci, root, inventory, site);
out:
	nf_verify_free(v);
	nf_profile_free(p);
	return r;
}

int nf_ci_stage_case(struct nf_ci *ci, const char *name, int verdict,
		     const char *msg, double t0)
{
	return nf_ci_add_case(ci, "ci.stage", name, verdict, msg, NULL,
			      nf_now_s() - t0);
}

/* A failed stage: its case carries the library's message */
int nf_ci_stage_error(struct nf_ctx *ctx, struct nf_ci *ci, const char *name,
		      int err, double t0)
{
	char msg[1100];
	int r;

	snprintf(msg, sizeof(msg), "%s", nf_error_text(ctx, err));
	r = nf_ci_stage_case(ci, name, NF_V_HUNG, msg, t0);
	/* keep the stage's message for the caller */
	nf_fail(ctx, err, "%s", msg);
	return r ? r : err;
}

static size_t fails_since(const struct nf_ci *ci, size_t from)
{
	size_t k = 0;

	for (size_t i = from; i < ci->n; i++)
		k += ci->v[i].verdict == NF_V_FAIL || ci->v[i].verdict == NF_V_HUNG;
	return k;
}

int nf_ci_run(struct nf_ctx *ctx, const char *role, const struct nf_site *site,
	      const struct nf_ci_opts *o, struct nf_ci **out)
{
	struct nf_build_result res;
	struct nf_ci *ci;
	char tmpl[PATH_MAX], *root = NULL, *archive = NULL, *manifest = NULL;
	double t0 = nf_now_s(), ts;
	size_t mark;
	int r, err = 0;

	*out = NULL;
	memset(&res, 0, sizeof(res));
	if (!role || !*role || !o)
		return nf_fail(ctx, NF_E_USAGE, "ci: no role");
	if (!(ci = calloc(1, sizeof(*ci))))
		return -ENOMEM;
	*out = ci;

	/* 1: build (cache-aware) */
	ts = nf_now_s();
	r = nf_build(ctx, role, site, &o->build, &res);
	if (r) {
		err = nf_ci_stage_error(ctx, ci, "stage.build", r, ts);
		goto skip_rest;
	}
	ci->rootfs = nf_strdup(res.rootfs);
	ci->rootfs_sha256 = nf_strdup(res.rootfs_sha256);
	archive = nf_asprintf("%s/%s", res.dir, res.rootfs);
	manifest = nf_asprintf("%s/%s", res.dir, res.manifest);
	if (!ci->rootfs || !ci->rootfs_sha256 || !archive || !manifest) {
		err = -ENOMEM;
		goto done;
	}
	if ((r = nf_ci_stage_case(ci, "stage.build", NF_V_PASS,
			    res.unchanged ? "unchanged inputs: cached image"
					  : NULL, ts))) {
		err = r;
		goto done;
	}

	/* 2: static verification of the published rootfs, unpacked */
	ts = nf_now_s();
	snprintf(tmpl, sizeof(tmpl), "%s/nodeforge-ci.XXXXXX",
		 o->tmpdir && *o->tmpdir ? o->tmpdir : "/tmp");
	if (!mkdtemp(tmpl)) {
		r = nf_fail(ctx, -errno, "cannot create '%s': %s", tmpl,
			    strerror(errno));
		err = nf_ci_stage_error(ctx, ci, "stage.static", r, ts);
		goto skip_boot;
	}
	if (!(root = nf_asprintf("%s/root", tmpl))) {
		err = -ENOMEM;
		goto done;
	}
	mark = ci->n;
	/* device nodes (an image's /dev/console) are not needed to read it */
	r = nf_unpack(ctx, archive, root,
		      &(struct nf_unpack_opts){ .skip_devices = 1 });
	if (!r)
		r = static_stage(ctx, ci, root, o->build.inventory, site);
	if (r) {
		err = nf_ci_stage_error(ctx, ci, "stage.static", r, ts);
		goto skip_boot;
	}
	if (fails_since(ci, mark)) {
		char msg[64];

		snprintf(msg, sizeof(msg), "%zu checks failed",
			 fails_since(ci, mark));
		r = nf_ci_stage_case(ci, "stage.static", NF_V_FAIL, msg, ts);
	} else {
		r = nf_ci_stage_case(ci, "stage.static", NF_V_PASS, NULL, ts);
	}
	if (r) {
		err = r;
		goto done;
	}

skip_boot:
	/* 3: boot in a VM, as a rack node boots */
	if (!o->boot) {
		r = nf_ci_stage_case(ci, "stage.boot", NF_V_SKIP, "not requested (--boot)", nf_now_s());
	} else if (err || !root) {
		r = nf_ci_stage_case(ci, "stage.boot", NF_V_SKIP,
			       "the image could not be verified offline", nf_now_s());
	} else {
		r = nf_ci_boot_stage(ctx, ci, role, site, o, tmpl);
		if (r && !err)
			err = r;
		r = 0;
	}
	if (r) {
		err = r;
		goto done;
	}

	/* 4: diff against the last released image */
	ts = nf_now_s();
	if (!o->baseline) {
		r = nf_ci_stage_case(ci, "stage.diff", NF_V_SKIP, "no --baseline given", ts);
	} else if (!root || !manifest) {
		r = nf_ci_stage_case(ci, "stage.diff", NF_V_SKIP,
			       "no image to compare", ts);
	} else {
		mark = ci->n;
		r = nf_ci_diff_stage(ctx, ci, o->baseline, manifest, root);
		if (r) {
			int e = nf_ci_stage_error(ctx, ci, "stage.diff", r, ts);

			if (!err)
				err = e;
			r = 0;
		} else {
			r = nf_ci_stage_case(ci, "stage.diff", NF_V_PASS, NULL, ts);
		}
	}
	if (r && !err)
		err = r;
	goto done;

skip_rest:
	if (!nf_ci_stage_case(ci, "stage.static", NF_V_SKIP, "the build failed", nf_now_s()) &&
	    !nf_ci_stage_case(ci, "stage.boot", NF_V_SKIP, "the build failed", nf_now_s()))
		nf_ci_stage_case(ci, "stage.diff", NF_V_SKIP, "the build failed", nf_now_s());
done:
	if (root) {
		int fd = open(tmpl, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		if (fd >= 0) {
			nf_rm_tree_at(fd, "root");
			nf_rm_tree_at(fd, "boot");
			close(fd);
		}
		rmdir(tmpl);
	}
	ci->elapsed = nf_now_s() - t0;
	free(root);
	free(archive);
	free(manifest);
	nf_build_result_free(&res);
	return err;
}

/* ------------------------------------------------------------- reports */

int nf_ci_write_junit(struct nf_ctx *ctx, const struct nf_ci *ci,
		      const char *role, const char *path)
{
	struct nf_junit_case *cs = calloc(ci->n ? ci->n : 1, sizeof(*cs));
	char *suite = nf_asprintf("nodeforge-ci.%s", role ? role : "");
	int r;

	if (!cs || !suite) {
		free(cs);
		free(suite);
		return -ENOMEM;
	}
	for (size_t i = 0; i < ci->n; i++) {
		const struct nf_ci_case *c = &ci->v[i];

		cs[i] = (struct nf_junit_case){
			.classname = c->classname, .name = c->name,
			.verdict = c->verdict, .secs = c->secs,
			.message = c->message,
			/* a pass with a message shows it; a failure's body is
			 * its detail */
			.text = c->verdict == NF_V_PASS ? c->message : c->detail,
		};
	}
	r = nf_junit_write(ctx, path, suite, NULL, cs, ci->n, ci->elapsed);
	free(suite);
	free(cs);
	return r;
}
