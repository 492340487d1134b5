/* SPDX-License-Identifier: MIT */
/*
 * Which mount, filesystem and disk hold a path: /proc/self/mountinfo and
 * /sys/dev/block under the sysroot.  The storage checks use it to prove
 * that ENROOT_CACHE_PATH lives on the expected NVMe.
 */
#include "internal.h"

#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define NF_MOUNTINFO_MAX (4 * 1024 * 1024)

void nf_mount_info_clear(struct nf_mount_info *m)
{
	free(m->mountpoint);
	free(m->source);
	free(m->fstype);
	free(m->root);
	free(m->disk);
	memset(m, 0, sizeof(*m));
}

/* mountinfo escapes space, tab, newline and backslash as \ooo */
static void unescape(char *s)
{
	char *w = s;

	for (char *r = s; *r;) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' &&
		    r[2] <= '7' && r[3] >= '0' && r[3] <= '7') {
			*w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 +
				      (r[3] - '0'));
			r += 4;
		} else {
			*w++ = *r++;
		}
	}
	*w = '\0';
}

/* Lexically clean an absolute path: no "//", no "/./", no trailing "/";
 * ".." is refused (it would need the real tree to resolve) */
static int clean_path(const char *in, char *out, size_t outsz)
{
	size_t o = 0;
	const char *p = in;

	if (in[0] != '/')
		return -EINVAL;
	while (*p) {
		const char *seg;
		size_t l;

		while (*p == '/')
			p++;
		seg = p;
		while (*p && *p != '/')
			p++;
		l = (size_t)(p - seg);
		if (l == 0 || (l == 1 && seg[0] == '.'))
			continue;
		if (l == 2 && seg[0] == '.' && seg[1] == '.')
			return -EINVAL;
		if (o + 1 + l + 1 > outsz)
			return -ENAMETOOLONG;
		out[o++] = '/';
		memcpy(out + o, seg, l);
		o += l;
	}
	if (o == 0)
		out[o++] = '/';
	out[o] = '\0';
	return 0;
}

/* mp holds path when it is "/" or path equals it or continues with "/" */
static size_t covers(const char *mp, const char *path)
{
	size_t l = strlen(mp);

	if (!strcmp(mp, "/"))
		return 1;
	if (strncmp(mp, path, l) || (path[l] != '\0' && path[l] != '/'))
		return 0;
	return l;
}

/* Whole disk of block device MAJ:MIN: the device itself, or its parent
 * when sysfs says it is a partition */
static char *disk_of(const struct nf_ctx *ctx, unsigned maj, unsigned min)
{
	char *l = nf_sr_path(ctx, "/sys/dev/block/%u:%u", maj, min);
	char buf[PATH_MAX], *part, *last, *prev;
	ssize_t n;

	if (!l)
		return NULL;
	n = readlink(l, buf, sizeof(buf) - 1);
	free(l);
	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	last = strrchr(buf, '/');
	if (!last)
		return nf_strdup(buf);
	part = nf_sr_read_attr(ctx, "/sys/dev/block/%u:%u/partition", maj, min);
	if (!part)
		return nf_strdup(last + 1);
	free(part);
	*last = '\0';
	prev = strrchr(buf, '/');
	return nf_strdup(prev ? prev + 1 : buf);
}

/* Find the mount holding the clean absolute path `want` in a mountinfo
 * text (modified in place) */
int nf_mountinfo_lookup(struct nf_ctx *ctx, char *buf, const char *want,
			struct nf_mount_info *out)
{
	char *line, *save = NULL;
	size_t best = 0;
	int found = 0;

	memset(out, 0, sizeof(*out));
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *f[64], *tok, *s2 = NULL;
		unsigned maj, min;
		int nf = 0, si = -1;
		size_t c;

		/* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [TAGS...] - FSTYPE
		 * SOURCE SUPEROPTS */
		for (tok = strtok_r(line, " ", &s2); tok && nf < 64;
		     tok = strtok_r(NULL, " ", &s2))
			f[nf++] = tok;
		for (int i = 6; i < nf; i++)
			if (!strcmp(f[i], "-")) {
				si = i;
				break;
			}
		if (si < 0 || si + 2 >= nf ||
		    sscanf(f[2], "%u:%u", &maj, &min) != 2)
			continue;
		unescape(f[4]);
		c = covers(f[4], want);
		/* a later mount on the same point hides the earlier one */
		if (!c || c < best)
			continue;
		nf_mount_info_clear(out);
		unescape(f[3]);
		unescape(f[si + 2]);
		out->mountpoint = nf_strdup(f[4]);
		out->root = nf_strdup(f[3]);
		out->fstype = nf_strdup(f[si + 1]);
		out->source = nf_strdup(f[si + 2]);
		out->major = maj;
		out->minor = min;
		if (!out->mountpoint || !out->root || !out->fstype ||
		    !out->source) {
			nf_mount_info_clear(out);
			return -ENOMEM;
		}
		best = c;
		found = 1;
	}
	if (!found)
		return nf_fail(ctx, NF_E_NOTFOUND, "no mount holds '%s'", want);
	return 0;
}

int nf_mount_find(struct nf_ctx *ctx, const char *path,
		  struct nf_mount_info *out)
{
	char want[PATH_MAX], *real = NULL, *file, *buf;
	size_t len;
	int r;

	memset(out, 0, sizeof(*out));
	/* on the live system, symlinks in the path lead to the real mount */
	if (!*nf_ctx_sysroot(ctx))
		real = realpath(path, NULL);
	r = clean_path(real ? real : path, want, sizeof(want));
	free(real);
	if (r < 0)
		return nf_fail(ctx, NF_E_INVALID,
			       "'%s' is not a clean absolute path", path);
	file = nf_sr_path(ctx, "/proc/self/mountinfo");
	if (!file)
		return -ENOMEM;
	r = nf_read_file(ctx, file, NF_MOUNTINFO_MAX, &buf, &len);
	free(file);
	if (r < 0)
		return r;
	r = nf_mountinfo_lookup(ctx, buf, want, out);
	free(buf);
	if (r < 0)
		return r;
	out->disk = disk_of(ctx, out->major, out->minor);
	return 0;
}
