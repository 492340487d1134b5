/* SPDX-License-Identifier: MIT */
/*
 * A node's verdict as people read it, from the verdict document (the form
 * 'nodeforge verify --json' prints and a node posts to 'nodeforge serve'):
 * 'nodeforge verify' on the node and 'nodeforge status NODE' on the boot
 * server print it through this one renderer.
 */
#include "internal.h"

struct report {
	struct nf_emit *e;
	const struct nf_verdict_view *vw;
	const json_t *checks;
};

/* One line of the report, its strings as shown (escaped, owned) */
struct row {
	const char *verdict;
	char *id, *why, *expected, *cause, *remedy;
};

static const char *str(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static int is(const char *verdict, const char *name)
{
	return verdict && !strcmp(verdict, name);
}

/* A root cause: a failure or a hang that follows from no other check */
static int is_root(const json_t *c)
{
	return (is(str(c, "verdict"), "fail") || is(str(c, "verdict"), "hung")) &&
	       !str(c, "cause");
}

/* A string of the verdict as shown: a control byte as \xNN, a backslash
 * as it is, as the verifier writes what it read (so that a remedy is the
 * command the verifier wrote: printf '...\n...'); caller frees */
static char *shown(const char *s)
{
	size_t sz;
	char *c;

	if (!s || !(c = malloc(sz = 4 * strlen(s) + 1)))
		return NULL;
	memcpy(c, s, strlen(s) + 1);
	nf_text_defang(c, sz);
	return c;
}

static void row_of_check(struct row *r, const json_t *c)
{
	const char *v = str(c, "verdict") ?: "fail";
	const char *why = is(v, "fail") || is(v, "warn") ? str(c, "seen")
			  : str(c, "reason");

	if (is(v, "pass") && !why)
		why = str(c, "seen");
	*r = (struct row){ .verdict = v, .id = shown(str(c, "id") ?: "?"),
			   .why = shown(why), .remedy = shown(str(c, "remedy")) };
	if (is(v, "fail")) {
		r->expected = shown(str(c, "expected"));
		r->cause = shown(str(c, "cause"));
	}
}

static void row_free(struct row *r)
{
	free(r->id);
	free(r->why);
	free(r->expected);
	free(r->cause);
	free(r->remedy);
}

static const char *paint(const struct report *rp, const char *verdict)
{
	if (!rp->vw->colour)
		return "";
	return is(verdict, "fail") ? "\033[1;31m" : is(verdict, "hung") ? "\033[1;35m"
	       : is(verdict, "warn") ? "\033[1;33m" : is(verdict, "pass") ? "\033[32m"
	       : "\033[2m";
}

/* One check: verdict and id, what was seen (and expected), the remedy */
static void show_row(struct report *rp, const struct row *r)
{
	const char *bold = rp->vw->colour ? "\033[1m" : "",
		   *off = rp->vw->colour ? "\033[0m" : "";
	char upper[8];
	char *line;
	size_t k;

	snprintf(upper, sizeof(upper), "%s", r->verdict);
	for (k = 0; upper[k]; k++)
		if (upper[k] >= 'a' && upper[k] <= 'z')
			upper[k] = (char)(upper[k] - 32);
	nf_emit_text(rp->e, "%s%-4s%s %s%s%s", paint(rp, r->verdict), upper, off,
		     bold, r->id, off);
	line = nf_asprintf("%s%s%s%s%s%s%s", r->why ? r->why : "",
			   r->expected ? " (expected " : "",
			   r->expected ? r->expected : "", r->expected ? ")" : "",
			   r->cause ? " [follows from " : "",
			   r->cause ? r->cause : "", r->cause ? "]" : "");
	if (line && *line) {
		nf_emit_text(rp->e, ": ");
		nf_emit_wrap(rp->e, line, 5 + (int)strlen(r->id) + 2, 5,
			     rp->vw->width, rp->vw->verbose ? 0 : 3, 0);
	} else {
		nf_emit_text(rp->e, "\n");
	}
	free(line);
	if (!is(r->verdict, "pass") && !is(r->verdict, "skip") && r->remedy) {
		nf_emit_text(rp->e, "     -> ");
		nf_emit_wrap(rp->e, r->remedy, 8, 8, rp->vw->width, 0, 1);
	}
}

/* Under a root cause: the checks that fail or are skipped because of it */
static void show_follows(struct report *rp, const char *id)
{
	char list[1024] = "", also[1200];
	size_t nfail = 0, nskip = 0, k;
	const json_t *x;

	json_array_foreach(rp->checks, k, x) {
		char *xid;

		if (!is(str(x, "cause"), id))
			continue;
		if (!is(str(x, "verdict"), "fail")) {
			nskip++;
			continue;
		}
		xid = shown(str(x, "id") ?: "?");
		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
			 nfail++ ? ", " : "", xid ? xid : "?");
		free(xid);
	}
	if (!nfail && !nskip)
		return;
	snprintf(also, sizeof(also), "%s%s%s%.0zu%s", list, nfail ? " failed" : "",
		 nfail && nskip ? "; " : "", nskip, nskip ? " skipped" : "");
	nf_emit_text(rp->e, "     also: ");
	nf_emit_wrap(rp->e, also, 11, 11, rp->vw->width, 0, 0);
}

static const json_t *find_check(const json_t *checks, const char *id)
{
	const json_t *x;
	size_t k;

	json_array_foreach(checks, k, x)
		if (is(str(x, "id"), id))
			return x;
	return NULL;
}

/* The report's checks: each root cause (and warning) in the verdict's
 * order with what follows from it; -v: every check.  A root cause the
 * verdict names without its check (a short verdict) shows its message.
 * Returns the root causes shown; *follow: the failures that follow */
static size_t show_checks(struct report *rp, const json_t *v, size_t *follow)
{
	const json_t *c;
	size_t i, roots = 0;
	struct row r;

	*follow = 0;
	json_array_foreach(rp->checks, i, c) {
		int root = is_root(c);

		roots += root;
		*follow += is(str(c, "verdict"), "fail") && str(c, "cause");
		if (!rp->vw->verbose && !root && !is(str(c, "verdict"), "warn"))
			continue;
		row_of_check(&r, c);
		show_row(rp, &r);
		row_free(&r);
		if (root && !rp->vw->verbose)
			show_follows(rp, str(c, "id"));
	}
	json_array_foreach(json_object_get(v, "root_causes"), i, c) {
		const char *id = str(c, "id");

		if (!id || find_check(rp->checks, id))
			continue;
		r = (struct row){ .verdict = "fail", .id = shown(id),
				  .why = shown(str(c, "message")) };
		show_row(rp, &r);
		row_free(&r);
		roots++;
	}
	return roots;
}

static long long count(const json_t *v, const char *k)
{
	return json_integer_value(json_object_get(json_object_get(v, "counts"), k));
}

/* The verdict's root causes and counts as data (status --json) */
static void render_json(struct nf_emit *e, const json_t *v)
{
	static const char *const keys[] = { "pass", "fail", "hung", "skip" };
	const json_t *c, *chk;
	size_t i;

	nf_emit_obj_open(e, "counts");
	for (i = 0; i < NF_ARRAY_SIZE(keys); i++)
		nf_emit_int(e, keys[i], NULL, count(v, keys[i]));
	nf_emit_obj_close(e);
	nf_emit_arr_open(e, "root_causes");
	json_array_foreach(json_object_get(v, "root_causes"), i, c) {
		const char *id = str(c, "id");

		chk = find_check(json_object_get(v, "checks"), id);
		nf_emit_obj_open(e, NULL);
		nf_emit_str(e, "id", NULL, id);
		nf_emit_str(e, "verdict", NULL, chk ? str(chk, "verdict") : "fail");
		nf_emit_str(e, "expected", NULL, chk ? str(chk, "expected") : NULL);
		nf_emit_str(e, "seen", NULL, chk ? str(chk, "seen") ?: str(chk, "reason")
					     : str(c, "message"));
		nf_emit_str(e, "remedy", NULL, chk ? str(chk, "remedy") : NULL);
		nf_emit_obj_close(e);
	}
	nf_emit_arr_close(e);
}

void nf_verdict_render(struct nf_emit *e, const json_t *v,
		       const struct nf_verdict_view *vw)
{
	struct report rp = { .e = e, .vw = vw,
			     .checks = json_object_get(v, "checks") };
	size_t roots, follow;
	char *role;

	if (nf_emit_is_json(e)) {
		render_json(e, v);
		return;
	}
	roots = show_checks(&rp, v, &follow);
	if (roots && !vw->verbose) {
		char line[256];

		snprintf(line, sizeof(line), "%zu root cause%s", roots, roots == 1 ? "" : "s");
		if (follow)
			snprintf(line + strlen(line), sizeof(line) - strlen(line),
				 ", %zu more failure%s follow%s from them", follow,
				 follow == 1 ? "" : "s", follow == 1 ? "s" : "");
		snprintf(line + strlen(line), sizeof(line) - strlen(line),
			 " (-v shows every check)");
		nf_emit_wrap(e, line, 0, 0, vw->width, 0, 0);
	}
	role = shown(str(v, "role") ?: vw->role ?: "?");
	nf_emit_text(e, "%s: %s", role ? role : "?",
		     is(str(v, "result"), "pass") ? "PASS" : "FAIL");
	free(role);
	if (json_is_object(json_object_get(v, "counts"))) {
		nf_emit_text(e, ": %lld passed, %lld failed, %lld hung, %lld skipped",
			     count(v, "pass"), count(v, "fail"), count(v, "hung"),
			     count(v, "skip"));
		if (count(v, "warn"))
			nf_emit_text(e, ", %lld warned", count(v, "warn"));
	}
	nf_emit_text(e, "\n");
}
