/* SPDX-License-Identifier: MIT */
/*
 * Slurm hostlist expansion: "gpu-[01-04,07],cp-01", "r[1-2]n[01-02]".
 * Zero padding follows the lower bound's width, as Slurm does.
 */
#include "internal.h"

#include <ctype.h>
#include <stdlib.h>

#define NF_HOST_MAX 256

struct strv {
	char **v;
	size_t n, cap, max;
};

static int strv_add(struct strv *s, const char *name)
{
	if (s->n >= s->max)
		return NF_E_LIMIT;
	if (strlen(name) >= NF_HOST_MAX)
		return NF_E_LIMIT;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		char **v = realloc(s->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	if (!(s->v[s->n] = strdup(name)))
		return -ENOMEM;
	s->n++;
	return 0;
}

static int parse_num(const char **p, unsigned long *v, int *width)
{
	const char *s = *p;
	char *end;

	if (!isdigit((unsigned char)*s))
		return NF_E_PARSE;
	errno = 0;
	*v = strtoul(s, &end, 10);
	if (errno || end - s > 9)
		return NF_E_PARSE;
	*width = (int)(end - s);
	*p = end;
	return 0;
}

/* Expand one element (no top-level commas) recursively over its groups */
static int expand(const char *prefix, const char *rest, struct strv *out)
{
	const char *open = strchr(rest, '[');
	char buf[NF_HOST_MAX * 2];
	int r;

	if (!open) {
		if (strchr(rest, ']'))
			return NF_E_PARSE;
		if (snprintf(buf, sizeof(buf), "%s%s", prefix, rest) >=
		    (int)sizeof(buf))
			return NF_E_LIMIT;
		return strv_add(out, buf);
	}
	const char *close = strchr(open, ']');

	if (!close || memchr(rest, ']', (size_t)(open - rest)))
		return NF_E_PARSE;
	char pre[NF_HOST_MAX * 2];

	if (snprintf(pre, sizeof(pre), "%s%.*s", prefix, (int)(open - rest),
		     rest) >= (int)sizeof(pre))
		return NF_E_LIMIT;
	const char *p = open + 1;

	if (p == close)
		return NF_E_PARSE;
	while (p < close) {
		unsigned long lo, hi;
		int wlo, whi;

		if ((r = parse_num(&p, &lo, &wlo)))
			return r;
		hi = lo;
		whi = wlo;
		if (*p == '-') {
			p++;
			if ((r = parse_num(&p, &hi, &whi)))
				return r;
			if (hi < lo)
				return NF_E_PARSE;
		}
		if (*p != ',' && p != close)
			return NF_E_PARSE;
		if (hi - lo >= out->max)
			return NF_E_LIMIT;
		for (unsigned long i = lo; i <= hi; i++) {
			char np[NF_HOST_MAX * 2];

			if (snprintf(np, sizeof(np), "%s%0*lu", pre, wlo, i) >=
			    (int)sizeof(np))
				return NF_E_LIMIT;
			if ((r = expand(np, close + 1, out)))
				return r;
		}
		if (*p == ',')
			p++;
		if (p == close && p[-1] == ',')
			return NF_E_PARSE;
	}
	return 0;
}

int nf_hostlist_expand(const char *expr, char ***names, size_t *n, size_t max)
{
	struct strv out = { .max = max ? max : 1000000 };
	size_t len;
	char *copy, *p, *start;
	int depth = 0, r = 0;

	if (!expr || !*expr)
		return NF_E_PARSE;
	len = strlen(expr);
	if (len > 65536)
		return NF_E_LIMIT;
	if (!(copy = strdup(expr)))
		return -ENOMEM;
	for (p = start = copy;; p++) {
		if (*p == '[')
			depth++;
		else if (*p == ']')
			depth--;
		if (depth < 0 || depth > 1) {
			r = NF_E_PARSE;
			break;
		}
		if ((*p == ',' && depth == 0) || *p == '\0') {
			int end = *p == '\0';

			*p = '\0';
			if (!*start) {
				r = NF_E_PARSE;
				break;
			}
			for (char *c = start; *c; c++)
				if (isspace((unsigned char)*c))
					r = NF_E_PARSE;
			if (r || (r = expand("", start, &out)))
				break;
			if (end)
				break;
			start = p + 1;
		}
	}
	if (!r && depth != 0)
		r = NF_E_PARSE;
	free(copy);
	if (r) {
		nf_strv_free(out.v, out.n);
		return r;
	}
	*names = out.v;
	*n = out.n;
	return 0;
}

/* ---- compression: names back into a hostlist ---- */

struct hname {
	const char *name;
	size_t plen;            /* prefix length (before the trailing digits) */
	size_t width;           /* digits; 0: no number */
	unsigned long long num;
};

static int cmp_hname(const void *a, const void *b)
{
	const struct hname *x = a, *y = b;
	size_t n = x->plen < y->plen ? x->plen : y->plen;
	int c = strncmp(x->name, y->name, n);

	if (c)
		return c;
	if (x->plen != y->plen)
		return x->plen < y->plen ? -1 : 1;
	if (x->width != y->width)
		return x->width < y->width ? -1 : 1;
	return x->num < y->num ? -1 : x->num > y->num;
}

/* Same prefix and digit count: one bracket group */
static int same_group(const struct hname *a, const struct hname *b)
{
	return a->width && b->width && a->plen == b->plen &&
	       a->width == b->width && !strncmp(a->name, b->name, a->plen);
}

int nf_hostlist_compress(char *const *names, size_t n, char **out)
{
	struct hname *h;
	struct nf_buf b = { 0 };
	size_t i = 0;

	*out = NULL;
	if (!(h = calloc(n ? n : 1, sizeof(*h))))
		return -ENOMEM;
	for (size_t k = 0; k < n; k++) {
		const char *s = names[k];
		size_t len = strlen(s), d = len;

		while (d > 0 && isdigit((unsigned char)s[d - 1]))
			d--;
		h[k].name = s;
		h[k].plen = d;
		h[k].width = len - d > 18 ? 0 : len - d;
		h[k].plen = h[k].width ? d : len;
		h[k].num = h[k].width ? strtoull(s + d, NULL, 10) : 0;
	}
	qsort(h, n, sizeof(*h), cmp_hname);
	while (i < n) {
		size_t j = i, ranges = 0;

		while (j + 1 < n && same_group(&h[i], &h[j + 1]))
			j++;
		nf_buf_printf(&b, "%s%.*s", b.len ? "," : "", (int)h[i].plen,
			      h[i].name);
		if (!h[i].width) {
			while (++i < n && !h[i].width && !strcmp(h[i].name, h[i - 1].name))
				;
			continue;
		}
		if (j > i)
			nf_buf_printf(&b, "[");
		for (size_t k = i; k <= j;) {
			size_t e = k;

			while (e < j && (h[e + 1].num == h[e].num + 1 ||
					 h[e + 1].num == h[e].num))
				e++;
			nf_buf_printf(&b, "%s%0*llu", ranges++ ? "," : "",
				      (int)h[k].width, h[k].num);
			if (h[e].num != h[k].num)
				nf_buf_printf(&b, "-%0*llu", (int)h[e].width, h[e].num);
			k = e + 1;
		}
		if (j > i)
			nf_buf_printf(&b, "]");
		i = j + 1;
	}
	free(h);
	if (b.err) {
		int r = b.err;

		nf_buf_free(&b);
		return r;
	}
	*out = b.s ? b.s : nf_strdup("");
	return *out ? 0 : -ENOMEM;
}
