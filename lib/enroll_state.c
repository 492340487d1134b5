/* SPDX-License-Identifier: MIT */
/*
 * Enrollment's state directory: one lock for every change, enroll.json
 * (the open windows, the claims made) read with a size cap and written
 * atomically, mode 0600; refusals.log (one JSON object a line, appended,
 * rotated to refusals.log.1 at 1 MiB) so that a refused claim never
 * rewrites the state; and the windows opened for named nodes (nodeforge
 * enroll open; --reenroll drops an earlier claim and records that it
 * did).  The server's side of a claim: lib/enroll.c.
 */
#include "enroll_int.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define STATE_FILE "enroll.json"
#define LOCK_FILE "enroll.lock"
#define REFUSALS_FILE "refusals.log"
#define REFUSALS_OLD "refusals.log.1"
#define REFUSAL_LINE_MAX 4096

/* ------------------------------------------------------------- state */

int nf_en_own(struct nf_enroll *e, const char *path, int fd)
{
	size_t n = strlen(e->dir);
	int r;

	if (!e->own)
		return 0;
	if (fd >= 0)
		r = fchown(fd, e->uid, e->gid);
	else if (strncmp(path, e->dir, n) || path[n] != '/' ||
		 strchr(path + n + 1, '/'))
		return 0;
	else
		r = lchown(path, e->uid, e->gid);
	if (r < 0)
		return nf_fail(e->ctx, -errno, "cannot give '%s' to uid %u, the "
			       "owner of '%s': %s", path ? path : e->dir,
			       (unsigned)e->uid, e->dir, strerror(errno));
	return 0;
}

int nf_en_lock(struct nf_enroll *e)
{
	char *p = nf_asprintf("%s/%s", e->dir, LOCK_FILE);
	int fd;

	if (!p)
		return -ENOMEM;
	fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	free(p);
	if (fd < 0)
		return nf_fail(e->ctx, -errno, "cannot lock '%s': %s", e->dir,
			       strerror(errno));
	if (nf_en_own(e, NULL, fd) < 0) {
		close(fd);
		return -EPERM;
	}
	while (flock(fd, LOCK_EX) < 0) {
		if (errno != EINTR) {
			int r = -errno;

			close(fd);
			return nf_fail(e->ctx, r, "cannot lock '%s': %s",
				       e->dir, strerror(-r));
		}
	}
	return fd;
}

void nf_en_unlock(int fd)
{
	if (fd >= 0)
		close(fd);
}

int nf_en_state_load(struct nf_enroll *e, json_t **out)
{
	char *p = nf_asprintf("%s/%s", e->dir, STATE_FILE), *buf;
	json_error_t err;
	json_t *j;
	size_t len;
	int r;

	if (!p)
		return -ENOMEM;
	r = nf_read_optional(e->ctx, p, STATE_MAX, &buf, &len);
	if (r == -ENOENT) {
		free(p);
		j = json_pack("{s:i,s:{},s:{},s:[]}", "version", 1, "windows",
			      "claims", "refusals");
		if (!j)
			return -ENOMEM;
		*out = j;
		return 0;
	}
	if (r) {
		free(p);
		return r;
	}
	j = json_loadb(buf, len, 0, &err);
	free(buf);
	/* refusals: those an older state kept in it, moved to the log when
	 * the state is next saved */
	if (j && !json_object_get(j, "refusals"))
		json_object_set_new(j, "refusals", json_array());
	if (!j || !json_is_object(json_object_get(j, "windows")) ||
	    !json_is_object(json_object_get(j, "claims")) ||
	    !json_is_array(json_object_get(j, "refusals"))) {
		json_decref(j);
		r = nf_fail(e->ctx, NF_E_PARSE, "'%s' is not an enrollment state",
			    p);
		free(p);
		return r;
	}
	free(p);
	*out = j;
	return 0;
}

/* A JSON document of the state directory, written atomically, 0600 */
int nf_en_json_save(struct nf_enroll *e, const char *name, json_t *j)
{
	char *p = nf_asprintf("%s/%s", e->dir, name);
	char *s = json_dumps(j, JSON_INDENT(1) | JSON_SORT_KEYS);
	int r;

	if (!p || !s) {
		free(p);
		free(s);
		return -ENOMEM;
	}
	r = nf_write_atomic(e->ctx, p, s, strlen(s), 0600);
	if (!r)
		r = nf_en_own(e, p, -1);
	free(p);
	free(s);
	return r;
}

/* The state without its refusals: any an older state held go to the
 * log first */
int nf_en_state_save(struct nf_enroll *e, json_t *j)
{
	json_t *ref = json_object_get(j, "refusals"), *v, *copy;
	size_t i;
	int r;

	json_array_foreach(ref, i, v)
		if ((r = nf_en_refusal_append(e, v)))
			return r;
	copy = json_copy(j);
	if (!copy)
		return -ENOMEM;
	json_object_del(copy, "refusals");
	r = nf_en_json_save(e, STATE_FILE, copy);
	json_decref(copy);
	if (!r)
		json_array_clear(ref);
	return r;
}

int nf_en_refusal_append(struct nf_enroll *e, json_t *rec)
{
	char *p = nf_asprintf("%s/%s", e->dir, REFUSALS_FILE);
	char *old = nf_asprintf("%s/%s", e->dir, REFUSALS_OLD);
	char *line = json_dumps(rec, JSON_COMPACT | JSON_SORT_KEYS);
	struct stat st;
	size_t len, off = 0;
	int fd = -1, r = 0;

	if (!p || !old || !line) {
		r = -ENOMEM;
		goto out;
	}
	len = strlen(line);
	if (len >= REFUSAL_LINE_MAX) {
		r = nf_fail(e->ctx, NF_E_LIMIT, "refusal record of %zu bytes",
			    len);
		goto out;
	}
	line[len++] = '\n'; /* json_dumps's NUL: the line's end */
	fd = open(p, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
		  0600);
	if (fd >= 0 && fstat(fd, &st) == 0 && st.st_size > 0 &&
	    (size_t)st.st_size + len > NF_ENROLL_REFUSALS_ROTATE) {
		close(fd);
		fd = -1;
		if (rename(p, old) == 0)
			fd = open(p, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW |
				     O_CLOEXEC, 0600);
	}
	if (fd < 0) {
		r = nf_fail(e->ctx, -errno, "cannot append to '%s': %s", p,
			    strerror(errno));
		goto out;
	}
	if ((r = nf_en_own(e, NULL, fd)))
		goto out;
	while (off < len) {
		ssize_t w = write(fd, line + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			r = nf_fail(e->ctx, w < 0 ? -errno : -EIO,
				    "cannot append to '%s': %s", p,
				    strerror(w < 0 ? errno : EIO));
			break;
		}
		off += (size_t)w;
	}
out:
	if (fd >= 0)
		close(fd);
	free(line);
	free(p);
	free(old);
	return r;
}

size_t nf_en_refusals_parse(const char *buf, size_t len, json_t *arr)
{
	size_t n = 0;

	while (len) {
		const char *nl = memchr(buf, '\n', len);
		size_t l = nl ? (size_t)(nl - buf) : len;
		json_t *j;

		if (l && l < REFUSAL_LINE_MAX &&
		    (j = json_loadb(buf, l, JSON_REJECT_DUPLICATES, NULL))) {
			if (json_is_object(j) && !json_array_append(arr, j))
				n++;
			json_decref(j);
		}
		if (!nl)
			break;
		buf = nl + 1;
		len -= l + 1;
	}
	return n;
}

/* refusals.log.1, then refusals.log, appended to arr (a missing file is
 * none; one larger than the rotation leaves is not read) */
static void refusals_load(struct nf_enroll *e, json_t *arr)
{
	static const char *const files[] = { REFUSALS_OLD, REFUSALS_FILE };

	for (size_t i = 0; i < 2; i++) {
		char *p = nf_asprintf("%s/%s", e->dir, files[i]), *buf;
		size_t len;

		if (p && nf_read_file(NULL, p, NF_ENROLL_REFUSALS_ROTATE +
				      REFUSAL_LINE_MAX, &buf, &len) == 0) {
			nf_en_refusals_parse(buf, len, arr);
			free(buf);
		}
		free(p);
	}
}

int nf_enroll_state(struct nf_enroll *e, json_t **out)
{
	int fd = nf_en_lock(e), r;

	if (fd < 0)
		return fd;
	r = nf_en_state_load(e, out);
	if (!r)
		refusals_load(e, json_object_get(*out, "refusals"));
	nf_en_unlock(fd);
	return r;
}

int nf_enroll_open(struct nf_enroll *e, char *const *names, size_t n,
		   long long seconds, int reenroll)
{
	json_t *st, *win, *claims;
	long long now = now_of(e);
	int fd, r;

	if (seconds <= 0 || seconds > 30LL * 86400)
		return nf_fail(e->ctx, NF_E_INVALID,
			       "window of %lld s: it must be 1 s to 30 days",
			       seconds);
	for (size_t i = 0; i < n; i++)
		if (!nf_en_name_ok(names[i]))
			return nf_fail(e->ctx, NF_E_INVALID,
				       "'%s' is not a node name", names[i]);
	if ((fd = nf_en_lock(e)) < 0)
		return fd;
	if ((r = nf_en_state_load(e, &st))) {
		nf_en_unlock(fd);
		return r;
	}
	win = json_object_get(st, "windows");
	claims = json_object_get(st, "claims");
	for (size_t i = 0; i < n; i++) {
		if (json_object_get(claims, names[i]) && !reenroll) {
			r = nf_fail(e->ctx, -EEXIST,
				    "node '%s' is already enrolled: give "
				    "--reenroll to let it claim again",
				    names[i]);
			goto out;
		}
	}
	for (size_t i = 0; i < n; i++) {
		json_t *c = json_object_get(claims, names[i]);

		if (c) {
			nf_log(e->ctx, NF_LOG_WARN,
			       "enroll: dropping the claim of '%s' for a new "
			       "enrollment", names[i]);
			json_t *rec = json_pack("{s:I,s:s,s:s,s:s,s:s}", "at",
						(json_int_t)now, "node",
						names[i], "peer", "", "reason",
						"reenroll", "message",
						"claim dropped by 'enroll "
						"open --reenroll'");

			r = rec ? nf_en_refusal_append(e, rec) : -ENOMEM;
			json_decref(rec);
			if (r)
				goto out;
			json_object_del(claims, names[i]);
		}
		json_object_set_new(win, names[i],
				    json_pack("{s:I,s:I}", "opened",
					      (json_int_t)now, "until",
					      (json_int_t)(now + seconds)));
	}
	r = nf_en_state_save(e, st);
out:
	json_decref(st);
	nf_en_unlock(fd);
	return r;
}
