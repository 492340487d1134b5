/* SPDX-License-Identifier: MIT */
/*
 * libyaml adapter: YAML text -> jansson tree plus a position for every node.
 * libyaml's marks are 0-based; ours are 1-based like every editor.
 */
#include "internal.h"

#include <stdlib.h>
#include <strings.h>
#include <yaml.h>

#define NF_YAML_MAX_BYTES (4u << 20)
#define NF_YAML_MAX_DEPTH 64
#define NF_YAML_MAX_PATH 1024

struct yl {
	struct nf_ctx *ctx;
	const char *name;
	yaml_parser_t parser;
	json_t *locs;
	struct nf_diags *diags;
	int failed;
};

static void loc_set(struct yl *y, const char *path, yaml_mark_t m)
{
	if (!y->locs)
		return;
	json_object_set_new(y->locs, path,
			    json_pack("[sII]", y->name, (json_int_t)m.line + 1,
				      (json_int_t)m.column + 1));
}

static int err_at(struct yl *y, yaml_mark_t m, const char *fmt, const char *a)
{
	char msg[512];

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	snprintf(msg, sizeof(msg), fmt, a);
#pragma GCC diagnostic pop
	nf_diag_add(y->diags, y->name, (unsigned)m.line + 1,
		    (unsigned)m.column + 1, NF_SEV_ERROR, "%s", msg);
	if (!y->failed)
		nf_fail(y->ctx, NF_E_PARSE, "%s:%u:%u: %s", y->name,
			(unsigned)m.line + 1, (unsigned)m.column + 1, msg);
	y->failed = 1;
	return NF_E_PARSE;
}

static int next(struct yl *y, yaml_event_t *ev)
{
	if (!yaml_parser_parse(&y->parser, ev)) {
		yaml_mark_t m = y->parser.problem_mark;
		char msg[256];

		snprintf(msg, sizeof(msg), "%s%s%s",
			 y->parser.problem ? y->parser.problem : "syntax error",
			 y->parser.context ? " " : "",
			 y->parser.context ? y->parser.context : "");
		return err_at(y, m, "invalid YAML: %s", msg);
	}
	return 0;
}

/* What a plain (unquoted) scalar reads as */
static json_t *plain_value(const char *s, size_t len)
{
	if (len == 0 || !strcmp(s, "~") || !strcmp(s, "null"))
		return json_null();
	if (!strcmp(s, "true"))
		return json_true();
	if (!strcmp(s, "false"))
		return json_false();
	/* integers without leading zeros ("0400" stays a string: modes) */
	{
		const char *p = s + (*s == '-' || *s == '+');
		char *end;

		if (*p >= '1' && *p <= '9') {
			long long v;

			errno = 0;
			v = strtoll(s, &end, 10);
			if (!*end && !errno)
				return json_integer(v);
			if (*end == '.' && end[1]) {
				double d = strtod(s, &end);

				if (!*end)
					return json_real(d);
			}
		} else if (*p == '0' && (p[1] == '\0')) {
			return json_integer(0);
		} else if (*p == '0' && p[1] == '.') {
			double d = strtod(s, &end);

			if (!*end)
				return json_real(d);
		}
	}
	return json_stringn(s, len);
}

static json_t *scalar_value(const yaml_event_t *ev)
{
	const char *s = (const char *)ev->data.scalar.value;
	size_t len = ev->data.scalar.length;

	if (ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return json_stringn(s, len);
	return plain_value(s, len);
}

static int parse_node(struct yl *y, yaml_event_t *ev, const char *path,
		      int depth, json_t **out);

static int parse_mapping(struct yl *y, const char *path, int depth,
			 json_t **out)
{
	json_t *obj = json_object();

	for (;;) {
		yaml_event_t kev, vev;
		char key[256], sub[NF_YAML_MAX_PATH];
		json_t *val = NULL;
		int r;

		if ((r = next(y, &kev)))
			goto fail;
		if (kev.type == YAML_MAPPING_END_EVENT) {
			yaml_event_delete(&kev);
			break;
		}
		if (kev.type != YAML_SCALAR_EVENT) {
			r = err_at(y, kev.start_mark, "%s",
				   "mapping keys must be plain strings");
			yaml_event_delete(&kev);
			goto fail;
		}
		if (kev.data.scalar.length >= sizeof(key) ||
		    memchr(kev.data.scalar.value, '\0', kev.data.scalar.length)) {
			r = err_at(y, kev.start_mark, "%s", "key too long");
			yaml_event_delete(&kev);
			goto fail;
		}
		memcpy(key, kev.data.scalar.value, kev.data.scalar.length);
		key[kev.data.scalar.length] = '\0';
		if (json_object_get(obj, key)) {
			r = err_at(y, kev.start_mark, "duplicate key '%s'", key);
			yaml_event_delete(&kev);
			goto fail;
		}
		if (snprintf(sub, sizeof(sub), "%s%s%s", path, *path ? "." : "",
			     key) >= (int)sizeof(sub)) {
			r = err_at(y, kev.start_mark, "%s", "nesting too deep");
			yaml_event_delete(&kev);
			goto fail;
		}
		/* a key's position is where the key starts: that is what an
		 * operator looks for when the value is wrong */
		loc_set(y, sub, kev.start_mark);
		yaml_event_delete(&kev);
		if ((r = next(y, &vev)))
			goto fail;
		r = parse_node(y, &vev, sub, depth + 1, &val);
		if (r)
			goto fail;
		json_object_set_new(obj, key, val);
	}
	*out = obj;
	return 0;
fail:
	json_decref(obj);
	return NF_E_PARSE;
}

static int parse_sequence(struct yl *y, const char *path, int depth,
			  json_t **out)
{
	json_t *arr = json_array();

	for (size_t i = 0;; i++) {
		yaml_event_t ev;
		char sub[NF_YAML_MAX_PATH];
		json_t *val = NULL;
		int r;

		if ((r = next(y, &ev)))
			goto fail;
		if (ev.type == YAML_SEQUENCE_END_EVENT) {
			yaml_event_delete(&ev);
			break;
		}
		if (snprintf(sub, sizeof(sub), "%s[%zu]", path, i) >=
		    (int)sizeof(sub)) {
			err_at(y, ev.start_mark, "%s", "nesting too deep");
			yaml_event_delete(&ev);
			goto fail;
		}
		loc_set(y, sub, ev.start_mark);
		if ((r = parse_node(y, &ev, sub, depth + 1, &val)))
			goto fail;
		json_array_append_new(arr, val);
	}
	*out = arr;
	return 0;
fail:
	json_decref(arr);
	return NF_E_PARSE;
}

/* Consumes ev (deletes it) */
static int parse_node(struct yl *y, yaml_event_t *ev, const char *path,
		      int depth, json_t **out)
{
	yaml_mark_t m = ev->start_mark;
	int r;

	if (depth > NF_YAML_MAX_DEPTH) {
		yaml_event_delete(ev);
		return err_at(y, m, "%s", "nesting too deep");
	}
	switch (ev->type) {
	case YAML_ALIAS_EVENT:
		yaml_event_delete(ev);
		return err_at(y, m, "%s", "aliases are not supported");
	case YAML_SCALAR_EVENT:
		if (ev->data.scalar.anchor || (ev->data.scalar.tag &&
					       !ev->data.scalar.plain_implicit &&
					       !ev->data.scalar.quoted_implicit)) {
			yaml_event_delete(ev);
			return err_at(y, m, "%s",
				      "anchors and tags are not supported");
		}
		*out = scalar_value(ev);
		yaml_event_delete(ev);
		return *out ? 0 : err_at(y, m, "%s", "invalid UTF-8 in scalar");
	case YAML_MAPPING_START_EVENT:
		if (ev->data.mapping_start.anchor) {
			yaml_event_delete(ev);
			return err_at(y, m, "%s", "anchors are not supported");
		}
		yaml_event_delete(ev);
		r = parse_mapping(y, path, depth, out);
		return r;
	case YAML_SEQUENCE_START_EVENT:
		if (ev->data.sequence_start.anchor) {
			yaml_event_delete(ev);
			return err_at(y, m, "%s", "anchors are not supported");
		}
		yaml_event_delete(ev);
		return parse_sequence(y, path, depth, out);
	default:
		yaml_event_delete(ev);
		return err_at(y, m, "%s", "unexpected YAML event");
	}
}

int nf_yaml_load_buf(struct nf_ctx *ctx, const char *name, const char *buf,
		     size_t len, json_t **out, json_t *locs,
		     struct nf_diags *diags)
{
	struct yl y = { .ctx = ctx, .name = name, .locs = locs, .diags = diags };
	yaml_event_t ev;
	json_t *root = NULL;
	int r;

	if (len > NF_YAML_MAX_BYTES)
		return nf_fail(ctx, NF_E_LIMIT, "'%s' is larger than %u bytes",
			       name, NF_YAML_MAX_BYTES);
	if (!yaml_parser_initialize(&y.parser))
		return -ENOMEM;
	yaml_parser_set_input_string(&y.parser, (const unsigned char *)buf,
				     len);
	/* STREAM-START, then DOCUMENT-START or STREAM-END (empty file) */
	if ((r = next(&y, &ev)))
		goto out;
	yaml_event_delete(&ev);
	if ((r = next(&y, &ev)))
		goto out;
	if (ev.type == YAML_STREAM_END_EVENT) {
		/* an empty file: errors about it still name it */
		loc_set(&y, "", ev.start_mark);
		yaml_event_delete(&ev);
		root = json_object();
		r = 0;
		goto done;
	}
	yaml_event_delete(&ev);
	if ((r = next(&y, &ev)))
		goto out;
	{
		yaml_mark_t m = ev.start_mark;

		loc_set(&y, "", m);
		if ((r = parse_node(&y, &ev, "", 0, &root)))
			goto out;
		if (json_is_null(root)) {
			json_decref(root);
			root = json_object();
		} else if (!json_is_object(root)) {
			r = err_at(&y, m, "%s",
				   "top level must be a mapping of keys");
			goto out;
		}
	}
	if ((r = next(&y, &ev)))
		goto out;
	yaml_event_delete(&ev); /* DOCUMENT-END */
	if ((r = next(&y, &ev)))
		goto out;
	if (ev.type != YAML_STREAM_END_EVENT) {
		yaml_mark_t m = ev.start_mark;

		yaml_event_delete(&ev);
		r = err_at(&y, m, "%s", "only one YAML document is allowed");
		goto out;
	}
	yaml_event_delete(&ev);
done:
	yaml_parser_delete(&y.parser);
	*out = root;
	return 0;
out:
	json_decref(root);
	yaml_parser_delete(&y.parser);
	return r ? r : NF_E_PARSE;
}

int nf_yaml_load(struct nf_ctx *ctx, const char *path, json_t **out,
		 json_t *locs, struct nf_diags *diags)
{
	char *buf;
	size_t len;
	int r;

	r = nf_read_file(ctx, path, NF_YAML_MAX_BYTES, &buf, &len);
	if (r)
		return r;
	r = nf_yaml_load_buf(ctx, path, buf, len, out, locs, diags);
	free(buf);
	return r;
}

int nf_locs_get(const json_t *locs, const char *path, const char **file,
		unsigned *line, unsigned *col)
{
	json_t *v = locs ? json_object_get(locs, path) : NULL;

	if (!json_is_array(v)) {
		*file = NULL;
		*line = *col = 0;
		return NF_E_NOTFOUND;
	}
	*file = json_string_value(json_array_get(v, 0));
	*line = (unsigned)json_integer_value(json_array_get(v, 1));
	*col = (unsigned)json_integer_value(json_array_get(v, 2));
	return 0;
}

/* ------------------------------------------------------------- writing */

/* A string that must be quoted to read back as a string: one that reads
 * as something else here, or in a YAML 1.1 reader (yes, off, 0400, .5) */
static int needs_quotes(const char *s)
{
	static const char *const words[] = { "yes", "no", "on", "off", "y", "n",
					     "true", "false", "null", "~" };
	json_t *v = plain_value(s, strlen(s));
	int quote = !json_is_string(v);

	json_decref(v);
	for (size_t i = 0; i < NF_ARRAY_SIZE(words) && !quote; i++)
		quote = !strcasecmp(s, words[i]);
	if ((*s == '-' || *s == '+' || *s == '.') && s[1])
		s++;
	return quote || (*s >= '0' && *s <= '9') || *s == '.';
}

static int emit_scalar(yaml_emitter_t *em, const char *text, int quoted)
{
	yaml_event_t ev;

	if (!yaml_scalar_event_initialize(&ev, NULL, NULL,
			(yaml_char_t *)text, (int)strlen(text), !quoted, 1,
			quoted ? YAML_DOUBLE_QUOTED_SCALAR_STYLE
			       : YAML_ANY_SCALAR_STYLE))
		return -ENOMEM;
	return yaml_emitter_emit(em, &ev) ? 0 : -EIO;
}

static int emit_value(yaml_emitter_t *em, const json_t *v, int depth);

static int emit_object(yaml_emitter_t *em, const json_t *v, int depth)
{
	yaml_event_t ev;
	const char *k;
	json_t *x;
	int r = 0;

	if (!yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1,
						 YAML_BLOCK_MAPPING_STYLE) ||
	    !yaml_emitter_emit(em, &ev))
		return -EIO;
	json_object_foreach((json_t *)v, k, x) {
		if ((r = emit_scalar(em, k, needs_quotes(k))) ||
		    (r = emit_value(em, x, depth + 1)))
			return r;
	}
	if (!yaml_mapping_end_event_initialize(&ev) || !yaml_emitter_emit(em, &ev))
		return -EIO;
	return 0;
}

static int emit_array(yaml_emitter_t *em, const json_t *v, int depth)
{
	yaml_event_t ev;
	size_t i;
	json_t *x;
	int r;

	if (!yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1,
						  YAML_BLOCK_SEQUENCE_STYLE) ||
	    !yaml_emitter_emit(em, &ev))
		return -EIO;
	json_array_foreach(v, i, x)
		if ((r = emit_value(em, x, depth + 1)))
			return r;
	if (!yaml_sequence_end_event_initialize(&ev) || !yaml_emitter_emit(em, &ev))
		return -EIO;
	return 0;
}

static int emit_value(yaml_emitter_t *em, const json_t *v, int depth)
{
	char *num;
	int r;

	if (depth > NF_YAML_MAX_DEPTH)
		return NF_E_LIMIT;
	if (json_is_object(v))
		return emit_object(em, v, depth);
	if (json_is_array(v))
		return emit_array(em, v, depth);
	if (json_is_string(v))
		return emit_scalar(em, json_string_value(v),
				   needs_quotes(json_string_value(v)));
	/* numbers, booleans and null as JSON writes them, which reads back
	 * the same here */
	if (!(num = json_dumps(v, JSON_ENCODE_ANY)))
		return -ENOMEM;
	r = emit_scalar(em, num, 0);
	free(num);
	return r;
}

int nf_yaml_write(struct nf_ctx *ctx, const json_t *doc, FILE *fp)
{
	yaml_emitter_t em;
	yaml_event_t ev;
	int r = -EIO;

	if (!yaml_emitter_initialize(&em))
		return -ENOMEM;
	yaml_emitter_set_output_file(&em, fp);
	yaml_emitter_set_unicode(&em, 1);
	yaml_emitter_set_width(&em, -1);
	yaml_emitter_set_indent(&em, 2);
	if (!yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING) ||
	    !yaml_emitter_emit(&em, &ev) ||
	    !yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1) ||
	    !yaml_emitter_emit(&em, &ev))
		goto out;
	if ((r = emit_value(&em, doc, 0)))
		goto out;
	r = -EIO;
	if (!yaml_document_end_event_initialize(&ev, 1) ||
	    !yaml_emitter_emit(&em, &ev) ||
	    !yaml_stream_end_event_initialize(&ev) ||
	    !yaml_emitter_emit(&em, &ev) || !yaml_emitter_flush(&em))
		goto out;
	r = 0;
out:
	if (r)
		r = nf_fail(ctx, r, "cannot write YAML: %s", em.problem ? em.problem
			    : nf_strerror(r));
	yaml_emitter_delete(&em);
	return r;
}
