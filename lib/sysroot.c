/* SPDX-License-Identifier: MIT */
/*
 * The running system's /proc and /sys (and /dev) under a sysroot: every
 * path that --sysroot moves is built here, so that a test hands the real
 * code a recorded tree.  A sysroot of "" (or NULL) is the system itself.
 */
#include "internal.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define NF_SYSATTR_MAX 4096

static char *vpath(const char *sysroot, const char *fmt, va_list ap)
{
	char *rel, *full;

	if (vasprintf(&rel, fmt, ap) < 0)
		return NULL;
	full = nf_asprintf("%s%s", sysroot ? sysroot : "", rel);
	free(rel);
	return full;
}

char *nf_sysroot_path(const char *sysroot, const char *fmt, ...)
{
	char *full;
	va_list ap;

	va_start(ap, fmt);
	full = vpath(sysroot, fmt, ap);
	va_end(ap);
	return full;
}

const char *nf_sysroot_path_buf(const char *sysroot, char *buf, size_t sz,
				const char *path)
{
	snprintf(buf, sz, "%s%s", sysroot ? sysroot : "", path);
	return buf;
}

char *nf_sr_path(const struct nf_ctx *ctx, const char *fmt, ...)
{
	char *full;
	va_list ap;

	va_start(ap, fmt);
	full = vpath(nf_ctx_sysroot(ctx), fmt, ap);
	va_end(ap);
	return full;
}

char *nf_sr_read_attr(const struct nf_ctx *ctx, const char *fmt, ...)
{
	char *full, buf[NF_SYSATTR_MAX], *p;
	ssize_t n;
	va_list ap;
	int fd;

	va_start(ap, fmt);
	full = vpath(nf_ctx_sysroot(ctx), fmt, ap);
	va_end(ap);
	if (!full)
		return NULL;
	fd = open(full, O_RDONLY | O_CLOEXEC);
	free(full);
	if (fd < 0)
		return NULL;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' ' ||
			 buf[n - 1] == '\t'))
		buf[--n] = '\0';
	p = buf;
	while (*p == ' ' || *p == '\t')
		p++;
	return *p ? nf_strdup(p) : NULL;
}
