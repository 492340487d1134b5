/* SPDX-License-Identifier: MIT */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void nf_diags_init(struct nf_diags *d)
{
	memset(d, 0, sizeof(*d));
}

void nf_diags_free(struct nf_diags *d)
{
	for (size_t i = 0; i < d->n; i++) {
		free(d->v[i].file);
		free(d->v[i].message);
	}
	free(d->v);
	nf_diags_init(d);
}

size_t nf_diags_errors(const struct nf_diags *d)
{
	size_t n = 0;

	for (size_t i = 0; i < d->n; i++)
		n += d->v[i].severity == NF_SEV_ERROR;
	return n;
}

int nf_diag_add(struct nf_diags *d, const char *file, unsigned line,
		unsigned col, int severity, const char *fmt, ...)
{
	struct nf_diag *g;
	va_list ap;
	char *msg;

	if (!d)
		return 0;
	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 8;
		struct nf_diag *v = realloc(d->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		d->v = v;
		d->cap = cap;
	}
	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	va_end(ap);
	if (!msg)
		return -ENOMEM;
	{
		/* messages quote values from the files: a terminal gets no
		 * control byte of theirs (each byte at most \xNN) */
		size_t sz = strlen(msg) * 4 + 1;
		char *big = realloc(msg, sz);

		if (!big) {
			free(msg);
			return -ENOMEM;
		}
		nf_text_defang(big, sz);
		msg = big;
	}
	g = &d->v[d->n++];
	g->file = nf_strdup(file ? file : "");
	g->line = line;
	g->col = col;
	g->severity = severity;
	g->message = msg;
	return 0;
}

static int diag_cmp(const void *a, const void *b)
{
	const struct nf_diag *x = a, *y = b;
	int c = strcmp(x->file ? x->file : "", y->file ? y->file : "");

	if (c)
		return c;
	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	if (x->col != y->col)
		return x->col < y->col ? -1 : 1;
	return 0;
}

void nf_diags_sort(struct nf_diags *d)
{
	/* insertion sort keeps equal positions in the order they were found */
	for (size_t i = 1; i < d->n; i++) {
		struct nf_diag t = d->v[i];
		size_t j = i;

		while (j > 0 && diag_cmp(&d->v[j - 1], &t) > 0) {
			d->v[j] = d->v[j - 1];
			j--;
		}
		d->v[j] = t;
	}
}
