/* SPDX-License-Identifier: MIT */
/*
 * The one template syntax of nodeforge, for overlay files (*.tmpl in an
 * overlay) and kickstart templates alike: {{name}} is replaced by the
 * value of name, \{{ is a literal {{, and everything else is copied as
 * it is, so shell, kickstart and iPXE text (with its own ${...}) needs
 * no escaping.  An unknown name or an unterminated {{ is an error at
 * FILE:LINE naming it; nothing is written then.
 */
#include "internal.h"

#include <stdio.h>
#include <string.h>

#define NAME_MAX_LEN 255

static int name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

int nf_template_render(struct nf_ctx *ctx, const char *file, const char *in,
		       nf_template_lookup lookup, void *data, const char *known,
		       struct nf_buf *out)
{
	const char *t = in, *line_from = in;
	unsigned line = 1;

	while (*t) {
		const char *open = strstr(t, "{{"), *close, *c;
		char name[NAME_MAX_LEN + 1], val[4096];
		size_t n;

		if (!open) {
			nf_buf_printf(out, "%s", t);
			break;
		}
		for (c = line_from; c < open; c++)
			line += *c == '\n';
		line_from = open;
		if (open > t && open[-1] == '\\') {
			nf_buf_printf(out, "%.*s{{", (int)(open - t - 1), t);
			t = open + 2;
			continue;
		}
		nf_buf_printf(out, "%.*s", (int)(open - t), t);
		for (close = open + 2; name_char(*close); close++)
			;
		n = (size_t)(close - open - 2);
		if (close[0] != '}' || close[1] != '}' || n == 0 ||
		    n > NAME_MAX_LEN)
			return nf_fail(ctx, NF_E_PARSE, "%s:%u: '{{' without a "
				       "name and '}}' (a literal '{{' is "
				       "written '\\{{')", file, line);
		memcpy(name, open + 2, n);
		name[n] = '\0';
		if (lookup(data, name, val, sizeof(val)))
			return nf_fail(ctx, NF_E_INVALID, "%s:%u: unknown template "
				       "variable '{{%s}}' (known: %s)", file, line,
				       name, known);
		nf_buf_printf(out, "%s", val);
		t = close + 2;
	}
	return out->err ? -ENOMEM : 0;
}
