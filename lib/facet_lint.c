/* SPDX-License-Identifier: MIT */
/* What a facet's lint and its daemon checks in image CI call: a finding
 * at the profile key it is about, and whether a file is in the image */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>

int nf_lint_at(struct nf_facet_lint *l, const char *path, int sev,
	       const char *fmt, ...)
{
	const char *file = NULL;
	unsigned line = 0, col = 0;
	char msg[1024];
	va_list ap;
	char p[512];

	/* fall back to the closest enclosing key that has a position */
	snprintf(p, sizeof(p), "%s", path);
	while (nf_profile_where(l->profile, p, &file, &line, &col) && *p) {
		char *cut = strrchr(p, '.');
		char *br = strrchr(p, '[');

		if (br && (!cut || br > cut))
			cut = br;
		if (!cut) {
			*p = '\0';
			break;
		}
		*cut = '\0';
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return nf_diag_add(l->diags, file ? file : nf_profile_name(l->profile),
			   line, col, sev, "%s", msg);
}

int nf_daemon_ci_has(const struct nf_daemon_ci *d, const char *rel)
{
	char p[4096];
	struct stat st;

	if ((size_t)snprintf(p, sizeof(p), "%s/%s", d->root, rel) >= sizeof(p))
		return 0;
	return lstat(p, &st) == 0;
}
