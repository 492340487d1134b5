/* SPDX-License-Identifier: MIT */
/*
 * The kernel command line, split as the kernel splits it (next_arg() and
 * parse_args() of its parameter parser):
 *
 *  - parameters are separated by the kernel's white space (space, \t to
 *    \r, and 0xa0) outside double quotes; a double quote anywhere toggles
 *    quoting, and there is no escape;
 *  - a parameter is `key` or `key=value`, the key ending at its first '='
 *    (quoted or not) after its first character ("=x" is a key);
 *  - one pair of quotes is removed: a quote opening the parameter with the
 *    one closing it ("k=a b" is k, a b), and a quote opening the value
 *    with the one closing the parameter (k="a b" is k, a b); any other
 *    quote stays (k=a"b c" is k, a"b c");
 *  - a bare `--` ends the kernel's parameters: what follows is init's;
 *  - in a key, '-' and '_' are the same character.
 *
 * Every reader of /proc/cmdline, of /etc/kernel/cmdline and of GRUB's
 * line and every comparison of kernel arguments goes through here.
 */
#include "internal.h"

#define CMDLINE_MAX (64 * 1024)  /* bytes of text parsed */
#define CMDLINE_ARGS 4096        /* parameters kept */

/* The kernel's isspace(), which is not the C locale's: it counts 0xa0 */
static bool kspace(char ch)
{
	unsigned char u = (unsigned char)ch;

	return u == ' ' || (u >= '\t' && u <= '\r') || u == 0xa0;
}

static char *skip_kspace(char *p)
{
	while (kspace(*p))
		p++;
	return p;
}

/* The parameter at P (not at white space, not at the end), NUL-terminated
 * in place into *key and *val; returns the text after it and the white
 * space that follows */
static char *next_param(char *p, char **key, char **val)
{
	bool quoted = *p == '"', in_quote = quoted;
	size_t i, eq = 0;

	if (quoted)
		p++;
	for (i = 0; p[i] && (in_quote || !kspace(p[i])); i++) {
		if (!eq && p[i] == '=')
			eq = i;
		if (p[i] == '"')
			in_quote = !in_quote;
	}
	*key = p;
	*val = NULL;
	if (eq) {
		p[eq] = '\0';
		*val = p + eq + 1;
		if (**val == '"') {
			(*val)++;
			if (p[i - 1] == '"')
				p[i - 1] = '\0';
		}
	}
	if (quoted && i > 0 && p[i - 1] == '"')
		p[i - 1] = '\0';
	if (!p[i])
		return p + i;
	p[i] = '\0';
	return skip_kspace(p + i + 1);
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
	p = skip_kspace(c->buf);
	while (*p) {
		char *key, *val;

		p = next_param(p, &key, &val);
		if (!val && !strcmp(key, "--"))
			break;
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

/* Keys as the kernel compares parameter names: '-' is '_' */
static bool key_eq(const char *a, const char *b)
{
	for (; *a && *b; a++, b++)
		if (*a != *b && !((*a == '-' || *a == '_') && (*b == '-' || *b == '_')))
			return false;
	return *a == *b;
}

const char *nf_cmdline_value(const struct nf_cmdline *c, const char *key)
{
	/* the last KEY=VALUE wins, as for the kernel's own parameters; a
	 * bare KEY is not one */
	for (size_t i = c ? c->n : 0; i > 0; i--)
		if (c->v[i - 1].val && key_eq(c->v[i - 1].key, key))
			return c->v[i - 1].val;
	return NULL;
}

int nf_cmdline_read(struct nf_ctx *ctx, const char *sysroot, struct nf_cmdline **out)
{
	char *path = nf_sysroot_path(sysroot, "/proc/cmdline"), *buf;
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

int nf_cmdline_has_karg(const struct nf_cmdline *c, const struct nf_karg *a)
{
	for (size_t i = 0; c && i < c->n; i++) {
		const struct nf_karg *x = &c->v[i];

		if (key_eq(x->key, a->key) && !x->val == !a->val &&
		    (!x->val || !strcmp(x->val, a->val)))
			return 1;
	}
	return 0;
}

int nf_cmdline_has(const struct nf_cmdline *c, const char *arg)
{
	struct nf_cmdline *a;
	int found = 0;

	if (!c || nf_cmdline_new(arg, strlen(arg), &a))
		return 0;
	if (a->n == 1)
		found = nf_cmdline_has_karg(c, &a->v[0]);
	nf_cmdline_free(a);
	return found;
}

void nf_karg_format(const struct nf_karg *a, char *out, size_t sz)
{
	bool q = false;

	/* quoted when the value would not read back whole without */
	for (const char *v = a->val; v && *v && !q; v++)
		q = kspace(*v) || (v == a->val && *v == '"');
	if (a->val)
		snprintf(out, sz, "%s=%s%s%s", a->key, q ? "\"" : "", a->val,
			 q ? "\"" : "");
	else
		snprintf(out, sz, "%s", a->key);
}

int nf_cmdline_get(struct nf_ctx *ctx, const char *key, char **out)
{
	return nf_cmdline_get_at(ctx, nf_ctx_sysroot(ctx), key, out);
}

int nf_cmdline_get_at(struct nf_ctx *ctx, const char *sysroot, const char *key, char **out)
{
	struct nf_cmdline *c;
	const char *v;
	int r;

	if ((r = nf_cmdline_read(ctx, sysroot, &c)))
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
