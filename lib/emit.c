/* SPDX-License-Identifier: MIT */
/*
 * Text/JSON emitter.  Each call carries a key (JSON) and a printf format
 * (text).  The writer is a struct, never a global, so commands can nest
 * emitters and tests can capture output.
 */
#include "internal.h"

#include <stdarg.h>
#include <stdlib.h>

#define NF_EMIT_DEPTH 32

struct nf_emit {
	FILE *fp;
	int json;
	json_t *stack[NF_EMIT_DEPTH];
	int depth;
	json_t *root;
};

int nf_emit_new(struct nf_emit **out, FILE *fp, int json)
{
	struct nf_emit *e = calloc(1, sizeof(*e));

	if (!e)
		return -ENOMEM;
	e->fp = fp;
	e->json = json;
	if (json) {
		e->root = json_object();
		e->stack[0] = e->root;
	}
	*out = e;
	return 0;
}

void nf_emit_free(struct nf_emit *e)
{
	if (!e)
		return;
	json_decref(e->root);
	free(e);
}

int nf_emit_is_json(const struct nf_emit *e)
{
	return e->json;
}

/* Attach v (stolen) under key in the current container */
static void put(struct nf_emit *e, const char *key, json_t *v)
{
	json_t *top = e->stack[e->depth];

	if (!v)
		return;
	if (json_is_array(top))
		json_array_append_new(top, v);
	else if (key)
		json_object_set_new(top, key, v);
	else
		json_decref(v);
}

static void push(struct nf_emit *e, const char *key, json_t *v)
{
	if (e->depth + 1 >= NF_EMIT_DEPTH) {
		json_decref(v);
		return;
	}
	json_incref(v);
	put(e, key, v);
	e->stack[++e->depth] = v;
	json_decref(v);
}

void nf_emit_obj_open(struct nf_emit *e, const char *key)
{
	if (e->json)
		push(e, key, json_object());
}

void nf_emit_arr_open(struct nf_emit *e, const char *key)
{
	if (e->json)
		push(e, key, json_array());
}

void nf_emit_obj_close(struct nf_emit *e)
{
	if (e->json && e->depth > 0)
		e->depth--;
}

void nf_emit_arr_close(struct nf_emit *e)
{
	nf_emit_obj_close(e);
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
void nf_emit_str(struct nf_emit *e, const char *key, const char *fmt,
		 const char *val)
{
	if (e->json)
		put(e, key, val ? json_string(val) : json_null());
	else if (fmt)
		fprintf(e->fp, fmt, val ? val : "-");
}

void nf_emit_ext(struct nf_emit *e, const char *key, const char *fmt,
		 const char *val)
{
	char *shown;

	if (e->json || !fmt || !val) {
		nf_emit_str(e, key, fmt, val);
		return;
	}
	shown = nf_text_escape(val);
	fprintf(e->fp, fmt, shown ? shown : "?");
	free(shown);
}

void nf_emit_int(struct nf_emit *e, const char *key, const char *fmt,
		 long long val)
{
	if (e->json)
		put(e, key, json_integer(val));
	else if (fmt)
		fprintf(e->fp, fmt, val);
}

void nf_emit_bool(struct nf_emit *e, const char *key, const char *fmt, int val)
{
	if (e->json)
		put(e, key, json_boolean(val));
	else if (fmt)
		fprintf(e->fp, fmt, val ? "yes" : "no");
}

void nf_emit_real(struct nf_emit *e, const char *key, const char *fmt,
		  double val)
{
	if (e->json)
		put(e, key, json_real(val));
	else if (fmt)
		fprintf(e->fp, fmt, val);
}

void nf_emit_text(struct nf_emit *e, const char *fmt, ...)
{
	va_list ap;

	if (e->json)
		return;
	va_start(ap, fmt);
	vfprintf(e->fp, fmt, ap);
	va_end(ap);
}
#pragma GCC diagnostic pop

/* One word-wrapper for every report: s from column col on, wrapped at
 * spaces to width, continuation lines indented by ind, at most max lines
 * (0: all; a cut ends with " ...").  A word longer than a line stays whole.
 * A shell command (shell) breaks only outside quotes, each broken line
 * ending in " \" so that it still works as pasted; inside its trailing
 * comment a continuation line starts with "# " instead.  Text only. */
void nf_emit_wrap(struct nf_emit *e, const char *s, int col, int ind,
		  int width, int max, int shell)
{
	int lines = 1, comment = 0;

	if (e->json)
		return;
	while (s && *s) {
		/* the last line allowed keeps room for " ..." */
		int room = width - col - (max && lines == max ? 4 : 0);
		int brk = -1, n = 0, brk_comment = comment;
		int in_comment = comment;
		char q = 0;

		if ((int)strlen(s) <= width - col) {
			fputs(s, e->fp);
			break;
		}
		for (; s[n]; n++) {
			/* a quote opens at the start of a word (an apostrophe
			 * inside one is prose) and closes at its match */
			if (shell && !in_comment && (s[n] == '\'' || s[n] == '"') &&
			    (q ? q == s[n] : n == 0 || strchr(" =(", s[n - 1])))
				q = q ? 0 : s[n];
			if (shell && !q && s[n] == '#' && (n == 0 || s[n - 1] == ' '))
				in_comment = 1;
			/* a break leaves room for " \" (command) or nothing */
			if (s[n] == ' ' && !q && n > 0 &&
			    n + (shell && !in_comment ? 2 : 0) <= room) {
				brk = n;
				brk_comment = in_comment;
			}
			if (n >= room && brk >= 0)
				break;
		}
		if (brk < 0) {  /* one word longer than the line */
			fputs(s, e->fp);
			break;
		}
		if (max && lines == max) {
			fprintf(e->fp, "%.*s ...", brk, s);
			break;
		}
		comment = brk_comment;
		fprintf(e->fp, "%.*s%s\n%*s%s", brk, s,
			shell && !comment ? " \\" : "", ind, "",
			shell && comment ? "# " : "");
		s += brk + 1;
		while (*s == ' ')
			s++;
		col = ind + (shell && comment ? 2 : 0);
		lines++;
	}
	fputc('\n', e->fp);
}

void nf_emit_json(struct nf_emit *e, const char *key, json_t *val)
{
	if (e->json) {
		put(e, key, json_incref(val));
		return;
	}
	json_dumpf(val, e->fp, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	fputc('\n', e->fp);
}

int nf_emit_end(struct nf_emit *e)
{
	if (!e->json)
		return fflush(e->fp) ? -errno : 0;
	if (json_dumpf(e->root, e->fp, JSON_INDENT(2) | JSON_PRESERVE_ORDER))
		return -EIO;
	fputc('\n', e->fp);
	return fflush(e->fp) ? -errno : 0;
}
