/* SPDX-License-Identifier: MIT */
/*
 * The kernel command line, split as the kernel splits it (next_arg() in
 * the kernel's parameter parser): parameters are separated by white space
 * outside double quotes; a parameter is `key` or `key=value`, the key
 * ending at its first '='; double quotes may enclose spaces anywhere in
 * the parameter ("k=\"a b\"", "\"k=a b\"") and are removed.  Every reader
 * of /proc/cmdline, of /etc/kernel/cmdline and of GRUB's line and every
 * comparison of kernel arguments goes through here.
 */
#include "internal.h"

#include <ctype.h>

#define CMDLINE_MAX (64 * 1024)  /* bytes of text parsed */
#define CMDLINE_ARGS 4096        /* parameters kept */

/* Remove the double quotes of S in place */
static void unquote(char *s)
{
	char *w = s;

	for (; *s; s++)
		if (*s != '"')
			*w++ = *s;
	*w = '\0';
}

/* The next parameter of the text at *pos, NUL-terminated in place; *pos
 * moves past it and the spaces after it.  NULL at the end */
static char *next_param(char **pos, char **val)
{
	char *p = *pos, *eq = NULL;
	bool in_quote = false;
	size_t i;

	for (i = 0; p[i]; i++) {
		if (isspace((unsigned char)p[i]) && !in_quote)
			break;
		if (!eq && p[i] == '=')
			eq = p + i;
		if (p[i] == '"')
			in_quote = !in_quote;
	}
	if (!i)
		return NULL;
	*pos = p[i] ? p + i + 1 : p + i;
	p[i] = '\0';
	while (isspace((unsigned char)**pos))
		(*pos)++;
	*val = NULL;
	if (eq) {
		*eq = '\0';
		*val = eq + 1;
		unquote(*val);
	}
	unquote(p);
	return p;
}

int nf_cmdline_new(const char *text, size_t len, struct nf_cmdline **out)
{
	struct nf_cmdline *c;
	char *p;

	if (len > CMDLINE_MAX)
		return NF_E_LIMIT;
	if (!(c = calloc(1, sizeof(*c))) || !(c->buf = malloc(len + 1))) {
		free(c);
		return -ENOMEM;
	}
	/* a NUL inside the text ends it, as it ends /proc/cmdline */
	memcpy(c->buf, text, len);
	c->buf[len] = '\0';
	p = c->buf;
	while (isspace((unsigned char)*p))
		p++;
	while (*p) {
		char *key, *val;

		if (c->n == CMDLINE_ARGS) {
			nf_cmdline_free(c);
			return NF_E_LIMIT;
		}
		if (c->n == c->cap) {
			size_t cap = c->cap ? c->cap * 2 : 16;
			struct nf_karg *v = realloc(c->v, cap * sizeof(*v));

			if (!v) {
				nf_cmdline_free(c);
				return -ENOMEM;
			}
			c->v = v;
			c->cap = cap;
		}
		if (!(key = next_param(&p, &val)))
			break;
		c->v[c->n++] = (struct nf_karg){ key, val };
	}
	*out = c;
	return 0;
}

void nf_cmdline_free(struct nf_cmdline *c)
{
	if (!c)
		return;
	free(c->v);
	free(c->buf);
	free(c);
}

const char *nf_cmdline_value(const struct nf_cmdline *c, const char *key)
{
	/* the last KEY=VALUE wins, as for the kernel's own parameters; a
	 * bare KEY is not one */
	for (size_t i = c ? c->n : 0; i > 0; i--)
		if (c->v[i - 1].val && !strcmp(c->v[i - 1].key, key))
			return c->v[i - 1].val;
	return NULL;
}

int nf_cmdline_read(struct nf_ctx *ctx, const char *sysroot, struct nf_cmdline **out)
{
	char *path = nf_asprintf("%s/proc/cmdline", sysroot ? sysroot : ""), *buf;
	size_t len;
	int r;

	if (!path)
		return -ENOMEM;
	r = nf_read_file(ctx, path, CMDLINE_MAX, &buf, &len);
	free(path);
	if (r)
		return r;
	r = nf_cmdline_new(buf, len, out);
	free(buf);
	return r;
}

int nf_cmdline_has(const struct nf_cmdline *c, const char *arg)
{
	struct nf_cmdline *a;
	int found = 0;

	if (!c || nf_cmdline_new(arg, strlen(arg), &a))
		return 0;
	if (a->n == 1)
		for (size_t i = 0; i < c->n && !found; i++) {
			const struct nf_karg *x = &c->v[i], *y = &a->v[0];

			found = !strcmp(x->key, y->key) && !x->val == !y->val &&
				(!x->val || !strcmp(x->val, y->val));
		}
	nf_cmdline_free(a);
	return found;
}

void nf_karg_format(const struct nf_karg *a, char *out, size_t sz)
{
	const char *q = a->val && strpbrk(a->val, " \t\n\v\f\r") ? "\"" : "";

	if (a->val)
		snprintf(out, sz, "%s=%s%s%s", a->key, q, a->val, q);
	else
		snprintf(out, sz, "%s", a->key);
}

int nf_cmdline_get(struct nf_ctx *ctx, const char *key, char **out)
{
	struct nf_cmdline *c;
	const char *v;
	int r;

	if ((r = nf_cmdline_read(ctx, nf_ctx_sysroot(ctx), &c)))
		return r;
	v = nf_cmdline_value(c, key);
	r = !v ? -ENOENT : (*out = strdup(v)) ? 0 : -ENOMEM;
	nf_cmdline_free(c);
	return r;
}

int nf_kargs_key(const char *arg, char *key, size_t keysz)
{
	struct nf_cmdline *c;
	const char *k;
	int r;

	if ((r = nf_cmdline_new(arg, strlen(arg), &c)))
		return r;
	k = c->n ? c->v[0].key : "";
	if (c->n > 1)
		r = NF_E_INVALID;
	else if (strlen(k) + 1 > keysz)
		r = NF_E_LIMIT;
	else {
		memcpy(key, k, strlen(k) + 1);
		r = c->n && c->v[0].val ? 1 : 0;
	}
	nf_cmdline_free(c);
	return r;
}
