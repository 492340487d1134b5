/* SPDX-License-Identifier: MIT */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

int nf_ctx_alloc(struct nf_ctx **out)
{
	struct nf_ctx *ctx = calloc(1, sizeof(*ctx));

	if (!ctx)
		return -ENOMEM;
	ctx->log_level = NF_LOG_WARN;
	*out = ctx;
	return 0;
}

void nf_ctx_free(struct nf_ctx *ctx)
{
	if (!ctx)
		return;
	free(ctx->profiles_dir);
	free(ctx->sysroot);
	free(ctx);
}

int nf_ctx_facets(struct nf_ctx *ctx, const struct nf_facet_table **out)
{
	if (!ctx->facets || !ctx->facets->n)
		return nf_fail(ctx, NF_E_USAGE, "a context with no facet table "
			       "(contexts come from nf_ctx_new)");
	*out = ctx->facets;
	return 0;
}

void nf_ctx_set_log(struct nf_ctx *ctx, nf_log_fn fn, void *userdata)
{
	ctx->log_fn = fn;
	ctx->log_data = userdata;
}

void nf_ctx_set_log_level(struct nf_ctx *ctx, int level)
{
	ctx->log_level = level;
}

const char *nf_errmsg(const struct nf_ctx *ctx)
{
	return ctx ? ctx->errmsg : "";
}

const char *nf_error_text(const struct nf_ctx *ctx, int code)
{
	/* a message recorded with another code is an earlier failure's,
	 * one the library handled: a bare 'return -errno' after it has no
	 * message of its own */
	if (ctx && *ctx->errmsg && ctx->errcode == code)
		return ctx->errmsg;
	return nf_strerror(code);
}

static int set_str(char **dst, const char *val)
{
	char *s = NULL;

	if (val && *val && !(s = strdup(val)))
		return -ENOMEM;
	free(*dst);
	*dst = s;
	return 0;
}

int nf_ctx_set_profiles_dir(struct nf_ctx *ctx, const char *dir)
{
	return set_str(&ctx->profiles_dir, dir);
}

const char *nf_ctx_profiles_dir(const struct nf_ctx *ctx)
{
	return ctx->profiles_dir ? ctx->profiles_dir : "profiles";
}

int nf_ctx_set_sysroot(struct nf_ctx *ctx, const char *dir)
{
	return set_str(&ctx->sysroot, dir);
}

const char *nf_ctx_sysroot(const struct nf_ctx *ctx)
{
	return ctx->sysroot ? ctx->sysroot : "";
}

int nf_fail(struct nf_ctx *ctx, int code, const char *fmt, ...)
{
	va_list ap;

	if (ctx) {
		if (ctx->errseq) {
			memcpy(ctx->prevmsg, ctx->errmsg, sizeof(ctx->prevmsg));
			ctx->prevcode = ctx->errcode;
			ctx->prevseq = ctx->errseq;
		}
		va_start(ap, fmt);
		vsnprintf(ctx->errmsg, sizeof(ctx->errmsg), fmt, ap);
		va_end(ap);
		/* messages quote names from archives, servers and files:
		 * a terminal gets no control byte of theirs */
		nf_text_defang(ctx->errmsg, sizeof(ctx->errmsg));
		ctx->errcode = code;
		ctx->errseq = ++ctx->nerr;
	}
	return code;
}

void nf_clear_error(struct nf_ctx *ctx)
{
	if (ctx) {
		ctx->errmsg[0] = '\0';
		ctx->errcode = 0;
		ctx->errseq = 0;
		ctx->prevseq = 0;
	}
}

unsigned nf_err_mark(const struct nf_ctx *ctx)
{
	return ctx ? ctx->nerr : 0;
}

bool nf_err_since(const struct nf_ctx *ctx, unsigned mark)
{
	return ctx && ctx->errseq > mark;
}

void nf_err_drop(struct nf_ctx *ctx, unsigned mark)
{
	if (!nf_err_since(ctx, mark))
		return;
	if (ctx->prevseq && ctx->prevseq <= mark) {
		memcpy(ctx->errmsg, ctx->prevmsg, sizeof(ctx->errmsg));
		ctx->errcode = ctx->prevcode;
		ctx->errseq = ctx->prevseq;
	} else {
		ctx->errmsg[0] = '\0';
		ctx->errcode = 0;
		ctx->errseq = 0;
	}
	ctx->prevseq = 0;
}

void nf_log(struct nf_ctx *ctx, int level, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	if (!ctx || !ctx->log_fn || level > ctx->log_level)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	ctx->log_fn(ctx->log_data, level, buf);
}
