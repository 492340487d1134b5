/* SPDX-License-Identifier: MIT */
/* Fuzz the kernel command line parser against a second reading of the
 * kernel's rules, written as spans of the input rather than edits in
 * place: the two must agree on every parameter.  Every parameter is then
 * found again, by key and, where it has a written form, by that form. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool ks(char ch)
{
	unsigned char u = (unsigned char)ch;

	return u == ' ' || (u >= '\t' && u <= '\r') || u == 0xa0;
}

static bool span_is(const char *s, size_t b, size_t e, const char *want)
{
	size_t n = strlen(want);

	return e - b == n && !memcmp(s + b, want, n);
}

/* The parameter of S that starts at B (not white space), its key and
 * value as spans; returns where it ends */
struct span {
	size_t kb, ke, vb, ve;
	bool val;
};

static size_t ref_param(const char *s, size_t len, size_t b, struct span *p)
{
	bool q = s[b] == '"', in = q;
	size_t st = b + q, e, eq = 0;
	bool has_eq = false;

	for (e = st; e < len && (in || !ks(s[e])); e++) {
		if (!has_eq && s[e] == '=' && e > st) {
			has_eq = true;
			eq = e;
		}
		if (s[e] == '"')
			in = !in;
	}
	/* the last character, a quote that closes what a quote opened */
	bool last_q = e > st && s[e - 1] == '"';

	p->kb = st;
	p->val = has_eq;
	if (!has_eq) {
		p->ke = q && last_q ? e - 1 : e;
		return e;
	}
	p->ke = eq;
	p->vb = eq + 1;
	p->ve = e;
	if (p->vb < e && s[p->vb] == '"') {
		p->vb++;
		if (last_q && e - 1 >= p->vb)
			p->ve = e - 1;
		if (p->ve < p->vb)
			p->ve = p->vb;
	} else if (q && last_q && e - 1 >= p->vb) {
		p->ve = e - 1;
	}
	return e;
}

/* A written form that reads back as the same parameter */
static bool writable(const struct nf_karg *a)
{
	bool vq = false, vs = false;

	if (!*a->key || !strcmp(a->key, "--") || strchr(a->key, '"'))
		return false;
	for (const char *k = a->key; *k; k++)
		if (ks(*k))
			return false;
	for (const char *v = a->val; v && *v; v++) {
		vq |= *v == '"';
		vs |= ks(*v);
	}
	return !(vq && vs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	size_t len = strnlen(s, size), pos = 0, n = 0;
	struct nf_cmdline *c;
	char w[512];
	int r;

	r = nf_cmdline_new(s, size, &c);
	if (r == NF_E_LIMIT)
		return 0;
	if (r)
		abort();
	for (;;) {
		struct span p;

		while (pos < len && ks(s[pos]))
			pos++;
		if (pos == len)
			break;
		pos = ref_param(s, len, pos, &p);
		if (!p.val && span_is(s, p.kb, p.ke, "--"))
			break;
		if (n >= c->n || !span_is(s, p.kb, p.ke, c->v[n].key) ||
		    p.val != !!c->v[n].val ||
		    (p.val && !span_is(s, p.vb, p.ve, c->v[n].val)))
			abort();
		n++;
	}
	if (n != c->n)
		abort();
	for (size_t i = 0; i < c->n; i++) {
		const struct nf_karg *a = &c->v[i];
		struct nf_cmdline *d;

		if (!nf_cmdline_has_karg(c, a) || (a->val && !nf_cmdline_value(c, a->key)))
			abort();
		nf_karg_format(a, w, sizeof(w));
		if (strlen(w) >= sizeof(w) - 1 || !writable(a))
			continue;
		if (nf_cmdline_new(w, strlen(w), &d))
			abort();
		if (d->n != 1 || !nf_cmdline_has_karg(c, &d->v[0]) ||
		    strcmp(d->v[0].key, a->key) || !d->v[0].val != !a->val ||
		    (a->val && strcmp(d->v[0].val, a->val)))
			abort();
		nf_cmdline_free(d);
	}
	nf_cmdline_free(c);
	return 0;
}
