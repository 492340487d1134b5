/* SPDX-License-Identifier: MIT */
/*
 * Typed schema checks over a parsed tree.  Facets declare their fields;
 * every error names the file, line and column of the offending key.
 */
#include "internal.h"

#include <ctype.h>
#include <stdlib.h>

static const char *type_name(int t)
{
	switch (t) {
	case NF_T_STR: return "a string";
	case NF_T_INT: return "an integer";
	case NF_T_BOOL: return "true or false";
	case NF_T_NUM: return "a number";
	case NF_T_SIZE: return "a size such as 64M or 1G";
	case NF_T_LIMIT: return "an integer or 'unlimited'";
	case NF_T_STRLIST: return "a list of strings";
	case NF_T_OBJ: return "a mapping";
	case NF_T_OBJLIST: return "a list of mappings";
	case NF_T_MAP: return "a mapping of scalar values";
	case NF_T_PATH: return "an absolute path";
	case NF_T_MODE: return "an octal mode such as \"0400\"";
	default: return "a value";
	}
}

bool nf_chars_ok(const char *s, int chars)
{
	const unsigned char *p = (const unsigned char *)s;

	if (!s)
		return false;
	if ((chars == NF_CHARS_NAME || chars == NF_CHARS_HOST ||
	     chars == NF_CHARS_URL) && (!*s || strlen(s) > 255))
		return false;
	if (chars == NF_CHARS_NAME && !isalnum(*p))
		return false;
	for (; *p; p++) {
		if (*p < 0x20 || *p == 0x7f)
			return false;
		switch (chars) {
		case NF_CHARS_NAME:
			if (!isalnum(*p) && !strchr("-_.", *p))
				return false;
			break;
		case NF_CHARS_HOST:
			if (!isalnum(*p) && !strchr("-_.:[]", *p))
				return false;
			break;
		case NF_CHARS_URL:
			if (*p > 0x7e || *p == ' ' || strchr("\"'<>\\`{}|^", *p))
				return false;
			break;
		}
	}
	return true;
}

const char *nf_chars_what(int chars)
{
	switch (chars) {
	case NF_CHARS_NAME:
		return "a name (letters, digits, '-', '_' and '.', a letter or "
		       "digit first)";
	case NF_CHARS_HOST:
		return "a host name or an address";
	case NF_CHARS_URL:
		return "a URL without blanks, quotes, control characters or "
		       "any of <>\\`{}|^";
	case NF_CHARS_TEXT:
		return "text without control characters (one line)";
	default:
		return "text";
	}
}

int nf_render_check(struct nf_ctx *ctx, const char *file, const char *what,
		    const char *s, int chars)
{
	char *shown;
	int r;

	if (nf_chars_ok(s, chars))
		return 0;
	shown = nf_text_escape(s ? s : "");
	r = nf_fail(ctx, NF_E_INVALID, "%s '%.80s' cannot go into %s: it must "
		    "be %s", what, shown ? shown : "?", file, nf_chars_what(chars));
	free(shown);
	return r;
}

/* A value that breaks the field's character set: the error names the
 * value with its control bytes escaped */
static int chars_diag(struct nf_diags *d, const json_t *locs, const char *path,
		      const char *name, int chars, const char *value)
{
	char *shown = nf_text_escape(value);
	const char *file;
	unsigned line, col;

	nf_locs_get(locs, path, &file, &line, &col);
	nf_diag_add(d, file ? file : "", line, col, NF_SEV_ERROR,
		    "'%s' must be %s, not '%.80s'", name, nf_chars_what(chars),
		    shown ? shown : "?");
	free(shown);
	return 1;
}

static int diag(struct nf_diags *d, const json_t *locs, const char *path,
		const char *fmt, const char *a, const char *b)
{
	const char *file;
	unsigned line, col;

	nf_locs_get(locs, path, &file, &line, &col);
	return nf_diag_add(d, file ? file : "", line, col, NF_SEV_ERROR, fmt,
			   a, b);
}

int nf_parse_size(const char *s, unsigned long long *out)
{
	unsigned long long v, mul = 1;
	char *end;

	if (!s || !isdigit((unsigned char)*s))
		return NF_E_PARSE;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return NF_E_PARSE;
	switch (*end) {
	case '\0': break;
	case 'K': case 'k': mul = 1ULL << 10; end++; break;
	case 'M': case 'm': mul = 1ULL << 20; end++; break;
	case 'G': case 'g': mul = 1ULL << 30; end++; break;
	case 'T': case 't': mul = 1ULL << 40; end++; break;
	default: return NF_E_PARSE;
	}
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end)
		return NF_E_PARSE;
	if (v > ~0ULL / mul)
		return NF_E_PARSE;
	*out = v * mul;
	return 0;
}

static bool is_removal(const json_t *v)
{
	const char *s = json_string_value(v);

	return s && s[0] == '!';
}

static int check_value(const json_t *v, const struct nf_field *f,
		       const char *path, const json_t *locs,
		       struct nf_diags *d);

static int check_scalar_type(const json_t *v, int type)
{
	const char *s = json_string_value(v);
	unsigned long long sz;

	switch (type) {
	case NF_T_ANY: return 1;
	case NF_T_STR: return json_is_string(v);
	case NF_T_INT: return json_is_integer(v);
	case NF_T_BOOL: return json_is_boolean(v);
	case NF_T_NUM: return json_is_number(v);
	case NF_T_SIZE:
		return (json_is_integer(v) && json_integer_value(v) >= 0) ||
		       (s && nf_parse_size(s, &sz) == 0);
	case NF_T_LIMIT:
		return (json_is_integer(v) && json_integer_value(v) >= 0) ||
		       (s && !strcmp(s, "unlimited"));
	case NF_T_PATH:
		return s && s[0] == '/' && nf_chars_ok(s, NF_CHARS_TEXT) && !strstr(s, "/../") &&
		       strcmp(s + strlen(s) - (strlen(s) >= 3 ? 3 : 0), "/..");
	case NF_T_MODE:
		if (!s || s[0] != '0' || strlen(s) < 3 || strlen(s) > 5)
			return 0;
		for (const char *p = s; *p; p++)
			if (*p < '0' || *p > '7')
				return 0;
		return 1;
	}
	return 0;
}

static int check_fields(const json_t *obj, const struct nf_field *fields,
			const char *path, const json_t *locs,
			struct nf_diags *d)
{
	const char *key;
	json_t *v;
	int bad = 0;

	json_object_foreach((json_t *)obj, key, v) {
		const struct nf_field *f = NULL;
		char sub[512];

		snprintf(sub, sizeof(sub), "%s%s%s", path, *path ? "." : "",
			 key);
		for (const struct nf_field *x = fields; x && x->name; x++)
			if (!strcmp(x->name, key))
				f = x;
		if (!f) {
			const char *names[128], *s;
			size_t n = 0;

			for (const struct nf_field *x = fields; x && x->name && n < 128; x++)
				names[n++] = x->name;
			s = nf_suggest(key, names, n);
			if (s) {
				const char *file;
				unsigned line, col;

				nf_locs_get(locs, sub, &file, &line, &col);
				nf_diag_add(d, file ? file : "", line, col, NF_SEV_ERROR,
					    "unknown key '%s' in '%s' (did you mean '%s'?)",
					    key, *path ? path : "profile", s);
			} else {
				diag(d, locs, sub, "unknown key '%s' in '%s'", key,
				     *path ? path : "profile");
			}
			bad = 1;
			continue;
		}
		if (check_value(v, f, sub, locs, d))
			bad = 1;
	}
	for (const struct nf_field *x = fields; x && x->name; x++)
		if (x->required && !json_object_get(obj, x->name)) {
			diag(d, locs, path, "missing required key '%s' in '%s'",
			     x->name, *path ? path : "top level");
			bad = 1;
		}
	return bad;
}

static int check_value(const json_t *v, const struct nf_field *f,
		       const char *path, const json_t *locs,
		       struct nf_diags *d)
{
	size_t i;
	json_t *x;
	int bad = 0;

	switch (f->type) {
	case NF_T_OBJ:
		if (!json_is_object(v))
			goto type;
		return check_fields(v, f->fields, path, locs, d);
	case NF_T_STRLIST:
		if (!json_is_array(v))
			goto type;
		json_array_foreach(v, i, x) {
			char sub[512];

			snprintf(sub, sizeof(sub), "%s[%zu]", path, i);
			if (!json_is_string(x)) {
				diag(d, locs, sub, "'%s' must hold strings%s",
				     path, "");
				bad = 1;
			} else if (f->chars && !nf_chars_ok(json_string_value(x),
							    f->chars)) {
				bad |= chars_diag(d, locs, sub, f->name, f->chars,
						  json_string_value(x));
			}
		}
		return bad;
	case NF_T_OBJLIST:
		if (!json_is_array(v))
			goto type;
		json_array_foreach(v, i, x) {
			char sub[512];

			snprintf(sub, sizeof(sub), "%s[%zu]", path, i);
			if (is_removal(x))
				continue;
			if (!json_is_object(x)) {
				diag(d, locs, sub,
				     "'%s' entries must be mappings%s", path, "");
				bad = 1;
				continue;
			}
			bad |= check_fields(x, f->fields, sub, locs, d);
		}
		return bad;
	case NF_T_MAP: {
		const char *k;

		if (!json_is_object(v))
			goto type;
		json_object_foreach((json_t *)v, k, x) {
			char sub[512];

			snprintf(sub, sizeof(sub), "%s.%s", path, k);
			if (json_is_object(x) || json_is_array(x)) {
				diag(d, locs, sub,
				     "'%s' must be a scalar value in '%s'", k,
				     path);
				bad = 1;
			} else if (f->chars && !nf_chars_ok(k, NF_CHARS_NAME)) {
				bad |= chars_diag(d, locs, sub, f->name,
						  NF_CHARS_NAME, k);
			} else if (f->chars && json_is_string(x) &&
				   !nf_chars_ok(json_string_value(x), f->chars)) {
				bad |= chars_diag(d, locs, sub, k, f->chars,
						  json_string_value(x));
			}
		}
		return bad;
	}
	default:
		if (!check_scalar_type(v, f->type))
			goto type;
		if (f->chars && json_is_string(v) &&
		    !nf_chars_ok(json_string_value(v), f->chars))
			return chars_diag(d, locs, path, f->name, f->chars,
					  json_string_value(v));
		if (f->choices && json_is_string(v)) {
			for (const char *const *c = f->choices; *c; c++)
				if (!strcmp(*c, json_string_value(v)))
					return 0;
			diag(d, locs, path, "'%s' is not an allowed value for '%s'",
			     json_string_value(v), f->name);
			return 1;
		}
		return 0;
	}
type:
	{
		char *shown = json_is_string(v) ? nf_text_escape(json_string_value(v))
			: json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
		const char *file;
		unsigned line, col;

		nf_locs_get(locs, path, &file, &line, &col);
		nf_diag_add(d, file ? file : "", line, col, NF_SEV_ERROR,
			    "'%s' must be %s, not '%.80s'", f->name,
			    type_name(f->type), shown ? shown : "?");
		free(shown);
	}
	return 1;
}

int nf_schema_check(const json_t *obj, const struct nf_field *fields,
		    const char *path, const json_t *locs,
		    struct nf_diags *diags)
{
	return check_fields(obj, fields, path, locs, diags) ? NF_E_INVALID : 0;
}
