/* SPDX-License-Identifier: MIT */
/*
 * Disk selection rules: comma-separated terms that all must hold, plus an
 * optional tie-breaker.  The grammar is in docs/nodeforge-disk.md.
 *
 *   transport=nvme,removable=0,empty,smallest
 *   model~*PM9A3*,size>=3.84T,largest
 */
#include "internal.h"
#include "internal/storage.h"

#include <ctype.h>
#include <fnmatch.h>
#include <stdlib.h>

#define NF_RULE_MAX_LEN 1024
#define NF_RULE_MAX_TERMS 32

enum rule_key {
	K_TRANSPORT, K_MODEL, K_NAME, K_PATH, K_SIZE, K_REMOVABLE, K_ROTATIONAL,
	K_PTTYPE, K_FSTYPE, K_LABEL, K_EMPTY,
};

enum rule_op { OP_EQ, OP_NE, OP_GLOB, OP_NGLOB, OP_GE, OP_LE, OP_GT, OP_LT };

enum tie { TIE_NONE, TIE_SMALLEST, TIE_LARGEST };

struct term {
	int key;
	int op;
	char *str;
	unsigned long long num;
	int negate; /* "!empty" */
};

struct nf_diskrule {
	struct term t[NF_RULE_MAX_TERMS];
	size_t n;
	int tie;
	int first;  /* take the first by name when a tie remains */
	char *text;
};

static const struct {
	const char *name;
	int key;
	int numeric; /* 1: size, 2: boolean 0/1 */
} keys[] = {
	{ "transport", K_TRANSPORT, 0 }, { "model", K_MODEL, 0 },
	{ "name", K_NAME, 0 },           { "path", K_PATH, 0 },
	{ "size", K_SIZE, 1 },           { "removable", K_REMOVABLE, 2 },
	{ "rotational", K_ROTATIONAL, 2 }, { "pttype", K_PTTYPE, 0 },
	{ "fstype", K_FSTYPE, 0 },       { "label", K_LABEL, 0 },
};

void nf_diskrule_free(struct nf_diskrule *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++)
		free(r->t[i].str);
	free(r->text);
	free(r);
}

/* Sizes: K, M, G, T, P are powers of 1000 (as on a drive's label);
 * Ki, Mi, Gi, Ti, Pi powers of 1024; an optional B; fractions allowed
 * ("3.84T") */
static int parse_disk_size(const char *s, unsigned long long *out)
{
	unsigned long long whole = 0, frac = 0, fracdiv = 1, mult = 1;
	const char *p = s;
	int digits = 0;

	while (isdigit((unsigned char)*p)) {
		if (whole > (~0ULL - 9) / 10)
			return -ERANGE;
		whole = whole * 10 + (unsigned long long)(*p++ - '0');
		digits++;
	}
	if (*p == '.') {
		p++;
		while (isdigit((unsigned char)*p)) {
			if (fracdiv >= 1000000000ULL)
				return -EINVAL;
			frac = frac * 10 + (unsigned long long)(*p++ - '0');
			fracdiv *= 10;
			digits++;
		}
	}
	if (!digits)
		return -EINVAL;
	if (*p) {
		static const char units[] = "KMGTP";
		const char *u = strchr(units, toupper((unsigned char)*p));
		int bin;

		if (!u)
			return -EINVAL;
		p++;
		bin = *p == 'i';
		if (bin)
			p++;
		if (*p == 'B' || *p == 'b')
			p++;
		if (*p)
			return -EINVAL;
		for (long i = 0; i <= u - units; i++)
			mult *= bin ? 1024ULL : 1000ULL;
	} else if (frac) {
		return -EINVAL; /* a fraction of a byte */
	}
	if (whole > ~0ULL / mult)
		return -ERANGE;
	*out = whole * mult + frac * mult / fracdiv;
	return 0;
}

static int parse_bool(const char *v, unsigned long long *out)
{
	if (!strcmp(v, "0") || !strcmp(v, "no") || !strcmp(v, "false"))
		*out = 0;
	else if (!strcmp(v, "1") || !strcmp(v, "yes") || !strcmp(v, "true"))
		*out = 1;
	else
		return -EINVAL;
	return 0;
}

static int parse_term(struct nf_ctx *ctx, struct nf_diskrule *r, char *s)
{
	static const struct {
		const char *tok;
		int op;
	} ops[] = {
		/* longest first */
		{ "!~", OP_NGLOB }, { "!=", OP_NE }, { ">=", OP_GE },
		{ "<=", OP_LE },    { "=", OP_EQ },  { "~", OP_GLOB },
		{ ">", OP_GT },     { "<", OP_LT },
	};
	struct term *t;
	size_t klen;
	const char *val = NULL;
	int op = -1, numeric = -1;

	if (!*s)
		return nf_fail(ctx, NF_E_PARSE, "empty term in disk rule '%s'",
			       r->text);
	if (!strcmp(s, "smallest") || !strcmp(s, "largest")) {
		if (r->tie)
			return nf_fail(ctx, NF_E_PARSE,
				       "disk rule '%s' has two size tie-breakers",
				       r->text);
		r->tie = s[0] == 's' ? TIE_SMALLEST : TIE_LARGEST;
		return 0;
	}
	if (!strcmp(s, "first")) {
		r->first = 1;
		return 0;
	}
	if (r->n >= NF_RULE_MAX_TERMS)
		return nf_fail(ctx, NF_E_LIMIT,
			       "disk rule '%s' has more than %d terms", r->text,
			       NF_RULE_MAX_TERMS);
	t = &r->t[r->n];
	if (!strcmp(s, "empty") || !strcmp(s, "!empty")) {
		t->key = K_EMPTY;
		t->negate = s[0] == '!';
		r->n++;
		return 0;
	}
	klen = strcspn(s, "!=~<>");
	for (size_t i = 0; i < NF_ARRAY_SIZE(ops); i++)
		if (!strncmp(s + klen, ops[i].tok, strlen(ops[i].tok))) {
			op = ops[i].op;
			val = s + klen + strlen(ops[i].tok);
			break;
		}
	if (op < 0)
		return nf_fail(ctx, NF_E_PARSE,
			       "unknown term '%s' in disk rule '%s'", s, r->text);
	for (size_t i = 0; i < NF_ARRAY_SIZE(keys); i++)
		if (strlen(keys[i].name) == klen &&
		    !strncmp(keys[i].name, s, klen)) {
			t->key = keys[i].key;
			numeric = keys[i].numeric;
		}
	if (numeric < 0)
		return nf_fail(ctx, NF_E_PARSE,
			       "unknown key '%.*s' in disk rule '%s'", (int)klen,
			       s, r->text);
	if (!*val && numeric)
		return nf_fail(ctx, NF_E_PARSE, "term '%s' has no value", s);
	/* "transport==nvme" is a typo, not a value "=nvme" */
	if (*val && strchr("=~<>", *val))
		return nf_fail(ctx, NF_E_PARSE, "bad operator in term '%s'", s);
	t->op = op;
	if (numeric == 1) {
		if (op == OP_GLOB || op == OP_NGLOB)
			return nf_fail(ctx, NF_E_PARSE,
				       "'~' does not apply to size in '%s'", s);
		if (parse_disk_size(val, &t->num) < 0)
			return nf_fail(ctx, NF_E_PARSE,
				       "bad size '%s' in term '%s'", val, s);
	} else if (numeric == 2) {
		if (op != OP_EQ && op != OP_NE)
			return nf_fail(ctx, NF_E_PARSE,
				       "only '=' and '!=' apply to '%.*s' in '%s'",
				       (int)klen, s, s);
		if (parse_bool(val, &t->num) < 0)
			return nf_fail(ctx, NF_E_PARSE,
				       "bad value '%s' in term '%s' (0 or 1)",
				       val, s);
	} else {
		if (op >= OP_GE)
			return nf_fail(ctx, NF_E_PARSE,
				       "'%.*s' is not a number in '%s'",
				       (int)klen, s, s);
		if (!(t->str = nf_strdup(val)))
			return -ENOMEM;
	}
	r->n++;
	return 0;
}

int nf_diskrule_parse(struct nf_ctx *ctx, const char *text,
		      struct nf_diskrule **out)
{
	struct nf_diskrule *r;
	char *copy, *p;
	int rc = 0;

	*out = NULL;
	if (!text || strlen(text) > NF_RULE_MAX_LEN)
		return nf_fail(ctx, NF_E_LIMIT, "disk rule longer than %d bytes",
			       NF_RULE_MAX_LEN);
	if (!*text)
		return nf_fail(ctx, NF_E_PARSE, "empty disk rule");
	for (const char *c = text; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			return nf_fail(ctx, NF_E_PARSE,
				       "control character in disk rule");
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->text = nf_strdup(text);
	copy = nf_strdup(text);
	if (!r->text || !copy) {
		free(copy);
		nf_diskrule_free(r);
		return -ENOMEM;
	}
	p = copy;
	for (;;) {
		char *comma = strchr(p, ',');

		if (comma)
			*comma = '\0';
		/* surrounding blanks are allowed: "transport=nvme, empty" */
		while (*p == ' ')
			p++;
		for (size_t l = strlen(p); l > 0 && p[l - 1] == ' '; l--)
			p[l - 1] = '\0';
		if ((rc = parse_term(ctx, r, p)) < 0)
			break;
		if (!comma)
			break;
		p = comma + 1;
	}
	free(copy);
	if (rc < 0) {
		nf_diskrule_free(r);
		return rc;
	}
	*out = r;
	return 0;
}

static int match_str(const struct term *t, const char *have)
{
	int eq;

	if (!have)
		have = "";
	if (t->op == OP_GLOB || t->op == OP_NGLOB)
		eq = fnmatch(t->str, have, FNM_CASEFOLD) == 0;
	else
		eq = strcmp(t->str, have) == 0;
	return (t->op == OP_NE || t->op == OP_NGLOB) ? !eq : eq;
}

static int match_num(const struct term *t, unsigned long long have)
{
	switch (t->op) {
	case OP_EQ: return have == t->num;
	case OP_NE: return have != t->num;
	case OP_GE: return have >= t->num;
	case OP_LE: return have <= t->num;
	case OP_GT: return have > t->num;
	case OP_LT: return have < t->num;
	}
	return 0;
}

static int match_flag(const struct term *t, int have)
{
	if (have < 0) /* unknown never matches, whatever the operator */
		return 0;
	return match_num(t, (unsigned long long)have);
}

int nf_diskrule_match(const struct nf_diskrule *r, const struct nf_disk *d)
{
	for (size_t i = 0; i < r->n; i++) {
		const struct term *t = &r->t[i];
		int ok = 0;

		switch (t->key) {
		case K_TRANSPORT: ok = match_str(t, d->transport); break;
		case K_MODEL: ok = match_str(t, d->model); break;
		case K_NAME: ok = match_str(t, d->name); break;
		case K_PATH: ok = match_str(t, d->path); break;
		case K_PTTYPE: ok = match_str(t, d->pttype); break;
		case K_FSTYPE: ok = match_str(t, d->fstype); break;
		case K_LABEL: ok = match_str(t, d->label); break;
		case K_SIZE: ok = match_num(t, d->size); break;
		case K_REMOVABLE: ok = match_flag(t, d->removable); break;
		case K_ROTATIONAL: ok = match_flag(t, d->rotational); break;
		case K_EMPTY:
			ok = nf_disk_is_empty(d) ? !t->negate : t->negate;
			break;
		}
		if (!ok)
			return 0;
	}
	return 1;
}

int nf_diskrule_hardware_only(struct nf_diskrule *r, char *dropped, size_t sz)
{
	size_t keep = 0, off = 0;
	int n = 0;

	if (sz)
		dropped[0] = '\0';
	for (size_t i = 0; i < r->n; i++) {
		struct term *t = &r->t[i];
		const char *name = NULL;

		for (size_t k = 0; k < NF_ARRAY_SIZE(keys); k++)
			if (keys[k].key == t->key)
				name = keys[k].name;
		if (t->key == K_EMPTY)
			name = t->negate ? "!empty" : "empty";
		if (t->key != K_EMPTY && t->key != K_PTTYPE &&
		    t->key != K_FSTYPE && t->key != K_LABEL) {
			r->t[keep++] = *t;
			continue;
		}
		if (off < sz) {
			int w = snprintf(dropped + off, sz - off, "%s%s",
					 n ? "," : "", name);

			if (w > 0)
				off += (size_t)w;
		}
		free(t->str);
		n++;
	}
	r->n = keep;
	return n;
}

/* "a, b, c" of the candidates' names, at most a few */
static void names_of(const struct nf_disks *d, const size_t *idx, size_t n,
		     char *buf, size_t bufsz)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n && off < bufsz; i++) {
		int w = snprintf(buf + off, bufsz - off, "%s%s", i ? ", " : "",
				 d->v[idx[i]].name);

		if (w < 0)
			break;
		off += (size_t)w;
	}
}

int nf_disk_pick(struct nf_ctx *ctx, const struct nf_diskrule *r,
		 const struct nf_disks *d, size_t *out)
{
	size_t *m, n = 0, keep = 0;
	char names[512];

	if (!d->n)
		return nf_fail(ctx, NF_E_NOTFOUND,
			       "no disk matches '%s': no disks found", r->text);
	m = calloc(d->n, sizeof(*m));
	if (!m)
		return -ENOMEM;
	for (size_t i = 0; i < d->n; i++)
		if (nf_diskrule_match(r, &d->v[i]))
			m[n++] = i;
	if (n == 0) {
		free(m);
		return nf_fail(ctx, NF_E_NOTFOUND,
			       "no disk matches '%s' (%zu disk%s seen)", r->text,
			       d->n, d->n == 1 ? "" : "s");
	}
	if (n > 1 && r->tie) {
		unsigned long long best = d->v[m[0]].size;

		for (size_t i = 1; i < n; i++) {
			unsigned long long s = d->v[m[i]].size;

			if (r->tie == TIE_SMALLEST ? s < best : s > best)
				best = s;
		}
		for (size_t i = 0; i < n; i++)
			if (d->v[m[i]].size == best)
				m[keep++] = m[i];
		n = keep;
	}
	if (n > 1 && r->first) {
		size_t b = 0;

		for (size_t i = 1; i < n; i++)
			if (strcmp(d->v[m[i]].name, d->v[m[b]].name) < 0)
				b = i;
		m[0] = m[b];
		n = 1;
	}
	if (n > 1) {
		names_of(d, m, n, names, sizeof(names));
		free(m);
		if (r->tie)
			return nf_fail(ctx, NF_E_CONFLICT,
				       "%zu disks tie under '%s': %s; add 'first' to take the first by name",
				       n, r->text, names);
		return nf_fail(ctx, NF_E_CONFLICT,
			       "%zu disks match '%s': %s; add 'smallest', 'largest' or 'first' to choose one",
			       n, r->text, names);
	}
	*out = m[0];
	free(m);
	return 0;
}
