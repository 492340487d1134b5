/* SPDX-License-Identifier: MIT */
/*
 * Image CI, stage 4: the image against the last released one (a baseline
 * manifest, its archive next to it).  The two manifests' changes under
 * etc/ and usr/, the installed packages of both dpkg status files and the
 * kernel arguments of both images' profile.json: test cases of class
 * ci.diff and the summary the JSON report carries.  The run and the other
 * stages: lib/ci.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ci_int.h"
#include "internal/ci.h"

#define CI_DPKG_MAX (64ULL << 20)       /* var/lib/dpkg/status cap */
#define CI_PROFILE_MAX (4ULL << 20)

/* ------------------------------------------------------------ stage 4 */

/* One file's content from an archive (path without "./"); NF_E_NOTFOUND */
static int archive_file(struct nf_ctx *ctx, const char *archive,
			const char *want, size_t max, char **out)
{
	struct nf_areader *rd = NULL;
	struct nf_aentry e;
	int fd, r;

	*out = NULL;
	fd = open(archive, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return nf_fail(ctx, -errno, "cannot read '%s': %s", archive,
			       strerror(errno));
	if ((r = nf_areader_open_fd(ctx, fd, &rd))) {
		close(fd);
		return r;
	}
	while ((r = nf_areader_next(rd, &e)) == 1) {
		const char *p = e.path;
		char *buf;
		size_t len = 0;
		ssize_t k;

		while (p[0] == '.' && p[1] == '/')
			p += 2;
		while (*p == '/')
			p++;
		if (strcmp(p, want) || !S_ISREG(e.mode))
			continue;
		if (e.size < 0 || (unsigned long long)e.size > max) {
			r = nf_fail(ctx, NF_E_LIMIT, "'%s' in '%s' is over %zu bytes",
				    want, archive, max);
			goto out;
		}
		if (!(buf = malloc((size_t)e.size + 1))) {
			r = -ENOMEM;
			goto out;
		}
		while (len < (size_t)e.size &&
		       (k = nf_areader_data(rd, buf + len, (size_t)e.size - len)) > 0)
			len += (size_t)k;
		buf[len] = 0;
		*out = buf;
		r = 0;
		goto out;
	}
	if (r == 0)
		r = NF_E_NOTFOUND;
out:
	nf_areader_free(rd);
	close(fd);
	return r;
}

/* Package -> Version from a dpkg status file (installed entries) */
json_t *nf_ci_dpkg_packages(const char *text)
{
	json_t *o = json_object();
	const char *p = text;
	char pkg[256] = "", ver[256] = "";
	int installed = 1;

	if (!o)
		return NULL;
	for (;;) {
		const char *eol = strchr(p, '\n');
		size_t n = eol ? (size_t)(eol - p) : strlen(p);

		if (n == 0) {
			if (*pkg && installed)
				json_object_set_new(o, pkg, json_string(ver));
			pkg[0] = ver[0] = 0;
			installed = 1;
		} else if (n > 9 && !strncmp(p, "Package: ", 9) && n - 9 < sizeof(pkg)) {
			memcpy(pkg, p + 9, n - 9);
			pkg[n - 9] = 0;
		} else if (n > 9 && !strncmp(p, "Version: ", 9) && n - 9 < sizeof(ver)) {
			memcpy(ver, p + 9, n - 9);
			ver[n - 9] = 0;
		} else if (n > 8 && !strncmp(p, "Status: ", 8)) {
			installed = memmem(p, n, " installed", 10) != NULL;
		}
		if (!eol)
			break;
		p = eol + 1;
	}
	if (*pkg && installed)
		json_object_set_new(o, pkg, json_string(ver));
	return o;
}

/* {added: {pkg: ver}, removed: {...}, changed: {pkg: [old, new]}} */
static json_t *diff_objects(const json_t *a, const json_t *b)
{
	json_t *added = json_object(), *removed = json_object(),
	       *changed = json_object();
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)a, k, v) {
		json_t *w = json_object_get(b, k);

		if (!w)
			json_object_set(removed, k, v);
		else if (!json_equal(v, w))
			json_object_set_new(changed, k, json_pack("[O,O]", v, w));
	}
	json_object_foreach((json_t *)b, k, v)
		if (!json_object_get(a, k))
			json_object_set(added, k, v);
	return json_pack("{s:o, s:o, s:o}", "added", added, "removed", removed,
			 "changed", changed);
}

static json_t *args_diff(const json_t *a, const json_t *b)
{
	json_t *added = json_array(), *removed = json_array();
	size_t i, j;
	json_t *x, *y;

	json_array_foreach(a, i, x) {
		int found = 0;

		json_array_foreach(b, j, y)
			found |= json_equal(x, y);
		if (!found)
			json_array_append(removed, x);
	}
	json_array_foreach(b, i, x) {
		int found = 0;

		json_array_foreach(a, j, y)
			found |= json_equal(x, y);
		if (!found)
			json_array_append(added, x);
	}
	return json_pack("{s:o, s:o}", "added", added, "removed", removed);
}

static const char *rel(const char *p)
{
	while (p[0] == '.' && p[1] == '/')
		p += 2;
	while (*p == '/')
		p++;
	return p;
}

int nf_ci_diff_stage(struct nf_ctx *ctx, struct nf_ci *ci,
		     const char *baseline, const char *manifest,
		     const char *root)
{
	json_t *ma = NULL, *mb = NULL, *changes = NULL, *config = NULL,
	       *usr = NULL, *pa = NULL, *pb = NULL, *pka = NULL, *pkb = NULL;
	char *dir = NULL, *archive = NULL, *sa = NULL, *sb = NULL, *msg = NULL,
	     *path = NULL, *jpa = NULL, *jpb = NULL;
	const char *aname, *slash;
	double t0 = nf_now_s();
	unsigned m;
	size_t i;
	json_t *c;
	int r;

	if ((r = nf_manifest_load(ctx, baseline, &ma)) ||
	    (r = nf_manifest_load(ctx, manifest, &mb)))
		goto out;
	if (!(changes = json_array()) || !(config = json_array()) ||
	    !(usr = json_array())) {
		r = -ENOMEM;
		goto out;
	}
	if ((r = nf_manifest_diff(ctx, ma, mb, changes)))
		goto out;
	json_array_foreach(changes, i, c) {
		const char *p = rel(json_string_value(json_object_get(c, "path")) ?: "");
		const char *what = json_string_value(json_object_get(c, "change")) ?: "";
		json_t *item = json_pack("{s:s, s:s}", "path", p, "change", what);

		if (!strncmp(p, "etc/", 4) || !strcmp(p, "etc"))
			json_array_append(config, item);
		else if (!strncmp(p, "usr/", 4))
			json_array_append(usr, item);
		json_decref(item);
	}

	/* the baseline's rootfs lies next to its manifest */
	aname = json_string_value(json_object_get(json_object_get(ma, "archive"),
						  "name"));
	slash = strrchr(baseline, '/');
	dir = slash ? strndup(baseline, (size_t)(slash - baseline)) : nf_strdup(".");
	if (!dir) {
		r = -ENOMEM;
		goto out;
	}
	if (aname && !strchr(aname, '/') && strcmp(aname, "..") &&
	    !(archive = nf_asprintf("%s/%s", dir, aname))) {
		r = -ENOMEM;
		goto out;
	}

	/* packages: installed Package/Version of both dpkg status files */
	if (!(path = nf_asprintf("%s/var/lib/dpkg/status", root))) {
		r = -ENOMEM;
		goto out;
	}
	r = nf_read_optional(ctx, path, CI_DPKG_MAX, &sb, NULL);
	if (r && r != -ENOENT)
		goto out;
	if (archive) {
		r = archive_file(ctx, archive, "var/lib/dpkg/status", CI_DPKG_MAX, &sa);
		if (r && r != NF_E_NOTFOUND)
			goto out;
		r = archive_file(ctx, archive, "etc/nodeforge/profile.json",
				 CI_PROFILE_MAX, &jpa);
		if (r && r != NF_E_NOTFOUND)
			goto out;
	}
	r = 0;
	if (sa && sb) {
		json_t *a = nf_ci_dpkg_packages(sa), *b = nf_ci_dpkg_packages(sb);

		pka = a && b ? diff_objects(a, b) : NULL;
		json_decref(a);
		json_decref(b);
	}

	/* kernel arguments: boot_args of both profiles */
	free(path);
	if (!(path = nf_asprintf("%s/etc/nodeforge/profile.json", root))) {
		r = -ENOMEM;
		goto out;
	}
	/* no profile in the image: no kernel arguments to compare */
	m = nf_err_mark(ctx);
	if (nf_read_file(ctx, path, CI_PROFILE_MAX, &jpb, NULL))
		nf_err_drop(ctx, m);
	else if (jpa) {
		pa = json_loads(jpa, 0, NULL);
		pb = json_loads(jpb, 0, NULL);
		if (pa && pb)
			pkb = args_diff(json_object_get(pa, "boot_args"),
					json_object_get(pb, "boot_args"));
	}

	ci->diff = json_pack("{s:s, s:O, s:O, s:O, s:I}", "baseline", baseline,
			     "config", config, "usr", usr,
			     "packages", pka ? pka : json_null(),
			     "files_changed", (json_int_t)json_array_size(changes));
	if (!ci->diff) {
		r = -ENOMEM;
		goto out;
	}
	json_object_set(ci->diff, "kernel_args", pkb ? pkb : json_null());

	if (pka) {
		msg = nf_asprintf("%zu added, %zu removed, %zu changed",
				  json_object_size(json_object_get(pka, "added")),
				  json_object_size(json_object_get(pka, "removed")),
				  json_object_size(json_object_get(pka, "changed")));
		r = nf_ci_add_case(ci, "ci.diff", "diff.packages", NF_V_PASS, msg, NULL,
			     nf_now_s() - t0);
	} else {
		r = nf_ci_add_case(ci, "ci.diff", "diff.packages", NF_V_SKIP,
			     "no var/lib/dpkg/status in both images", NULL,
			     nf_now_s() - t0);
	}
	free(msg);
	msg = NULL;
	if (!r) {
		msg = nf_asprintf("%zu config files changed",
				  json_array_size(config));
		r = nf_ci_add_case(ci, "ci.diff", "diff.config", NF_V_PASS, msg, NULL,
			     nf_now_s() - t0);
		free(msg);
		msg = NULL;
	}
	if (!r && pkb) {
		msg = nf_asprintf("%zu added, %zu removed",
				  json_array_size(json_object_get(pkb, "added")),
				  json_array_size(json_object_get(pkb, "removed")));
		r = nf_ci_add_case(ci, "ci.diff", "diff.kernel_args", NF_V_PASS, msg,
			     NULL, nf_now_s() - t0);
	} else if (!r) {
		r = nf_ci_add_case(ci, "ci.diff", "diff.kernel_args", NF_V_SKIP,
			     "no /etc/nodeforge/profile.json in both images",
			     NULL, nf_now_s() - t0);
	}
out:
	json_decref(ma);
	json_decref(mb);
	json_decref(changes);
	json_decref(config);
	json_decref(usr);
	json_decref(pa);
	json_decref(pb);
	json_decref(pka);
	json_decref(pkb);
	free(dir);
	free(archive);
	free(sa);
	free(sb);
	free(msg);
	free(path);
	free(jpa);
	free(jpb);
	return r;
}
