/* SPDX-License-Identifier: MIT */
/*
 * The images a build published (docs/nodeforge-image.md): the files of
 * OUT/ROLE grouped by the id in their names (ROLE-<id>.*, the first 12
 * hex digits of the rootfs sha256), which one ROLE.current names, which
 * ones a boot tree's scripts name, and the removal of the old ones under
 * the build's lock on OUT/ROLE.
 */
#include "internal.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

/* A boot tree file is read whole to look for image names in it */
#define NF_IMAGE_TREE_FILE_MAX (16u << 20)
/* Names kept per image: the archives, manifests and signatures */
#define NF_IMAGE_FILES_MAX 64u

/* NAME is ROLE-<12 lower-case hex>.<kind>: its id into ID */
int nf_image_file_id(const char *role, const char *name, char id[13])
{
	size_t rl = strlen(role);
	const char *p = name + rl + 1;

	if (strncmp(name, role, rl) || name[rl] != '-')
		return 0;
	for (int i = 0; i < 12; i++)
		if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
			return 0;
	if (p[12] != '.' || !p[13])
		return 0;
	memcpy(id, p, 12);
	id[12] = '\0';
	return 1;
}

void nf_images_free(struct nf_images *l)
{
	for (size_t i = 0; i < l->n; i++) {
		nf_strv_free(l->v[i].files, l->v[i].nfiles);
		free(l->v[i].role);
	}
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

static struct nf_image *image_get(struct nf_images *l, const char *role,
				  const char *id)
{
	struct nf_image *v;

	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->v[i].id, id) && !strcmp(l->v[i].role, role))
			return &l->v[i];
	v = realloc(l->v, (l->n + 1) * sizeof(*v));
	if (!v)
		return NULL;
	l->v = v;
	v = &l->v[l->n];
	memset(v, 0, sizeof(*v));
	if (!(v->role = nf_strdup(role)))
		return NULL;
	snprintf(v->id, sizeof(v->id), "%s", id);
	l->n++;
	return v;
}

static long long mtime_ns(const struct stat *st)
{
	return (long long)st->st_mtim.tv_sec * 1000000000LL + st->st_mtim.tv_nsec;
}

static int image_add_file(struct nf_image *im, const char *name,
			  const struct stat *st)
{
	char **f;

	if (im->nfiles >= NF_IMAGE_FILES_MAX)
		return 0;
	f = realloc(im->files, (im->nfiles + 1) * sizeof(*f));
	if (!f)
		return -ENOMEM;
	im->files = f;
	if (!(f[im->nfiles] = nf_strdup(name)))
		return -ENOMEM;
	im->nfiles++;
	im->size += (unsigned long long)st->st_size;
	if (mtime_ns(st) > im->newest)
		im->newest = mtime_ns(st);
	return 0;
}

static int has_file(const struct nf_image *im, const char *name)
{
	for (size_t i = 0; i < im->nfiles; i++)
		if (!strcmp(im->files[i], name))
			return 1;
	return 0;
}

/* Move NAME from whichever other image of the role holds it to TO */
static int take_file(struct nf_images *l, size_t from, const char *name,
		     struct nf_image *to)
{
	for (size_t i = from; i < l->n; i++) {
		struct nf_image *im = &l->v[i];
		char **f;

		for (size_t k = 0; im != to && k < im->nfiles; k++) {
			if (strcmp(im->files[k], name))
				continue;
			f = realloc(to->files, (to->nfiles + 1) * sizeof(*f));
			if (!f)
				return -ENOMEM;
			to->files = f;
			f[to->nfiles++] = im->files[k];
			im->files[k] = im->files[--im->nfiles];
			return 0;
		}
	}
	return 0;
}

/* An EL build's liveimg tarball is named by its own hash: the image's
 * ROLE-<id>.liveimg.manifest.json names it, and it belongs to that image */
static int claim_liveimg(struct nf_ctx *ctx, struct nf_images *l, size_t from,
			 const char *dir, struct nf_image *im)
{
	char *path = nf_asprintf("%s/%s-%s.liveimg.manifest.json", dir, im->role,
				 im->id);
	json_t *m = NULL;
	const char *name;
	int r;

	if (!path)
		return -ENOMEM;
	r = nf_manifest_load(ctx, path, &m);
	free(path);
	if (r)
		return r;
	name = json_string_value(json_object_get(json_object_get(m, "archive"),
						 "name"));
	if (name && !has_file(im, name))
		r = take_file(l, from, name, im);
	json_decref(m);
	return r;
}

/* Sizes follow the files a claim moved; an image left with none goes */
static void settle(struct nf_images *l, size_t from, const char *dir)
{
	size_t w = from;

	for (size_t i = from; i < l->n; i++) {
		struct nf_image *im = &l->v[i];
		struct stat st;
		char *p;

		im->size = 0;
		for (size_t k = 0; k < im->nfiles; k++) {
			if (!(p = nf_asprintf("%s/%s", dir, im->files[k])))
				continue;
			if (stat(p, &st) == 0)
				im->size += (unsigned long long)st.st_size;
			free(p);
		}
		if (!im->nfiles) {
			free(im->files);
			free(im->role);
			continue;
		}
		l->v[w++] = *im;
	}
	l->n = w;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Newest first; the id breaks a tie so the order never depends on the
 * directory's */
static int cmp_image(const void *a, const void *b)
{
	const struct nf_image *x = a, *y = b;
	int c = strcmp(x->role, y->role);

	if (c)
		return c;
	if (x->built_ns != y->built_ns)
		return x->built_ns < y->built_ns ? 1 : -1;
	return strcmp(x->id, y->id);
}

/* The time an image was published: its manifest's, which the build
 * renames into place with the image; else its newest file's */
static void finish_image(const char *dir, struct nf_image *im,
			 const char *current_id)
{
	char *m = nf_asprintf("%s/%s-%s.manifest.json", dir, im->role, im->id);
	char *s = m ? nf_asprintf("%s.sig", m) : NULL;
	struct stat st;

	im->built_ns = m && stat(m, &st) == 0 ? mtime_ns(&st) : im->newest;
	im->built = im->built_ns / 1000000000LL;
	im->has_manifest = m && access(m, F_OK) == 0;
	im->is_signed = s && access(s, F_OK) == 0;
	im->current = current_id && !strcmp(current_id, im->id);
	qsort(im->files, im->nfiles, sizeof(char *), cmp_name);
	free(s);
	free(m);
}

static int scan_dir(struct nf_ctx *ctx, const char *dir, const char *role,
		    struct nf_images *l)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int r = 0;

	if (!d)
		return nf_fail(ctx, errno == ENOENT ? NF_E_NOTFOUND : -errno,
			       "cannot read '%s': %s", dir, strerror(errno));
	while (!r && (de = readdir(d))) {
		struct nf_image *im;
		struct stat st;
		char id[13];

		if (!nf_image_file_id(role, de->d_name, id) ||
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode))
			continue;
		if (!(im = image_get(l, role, id)))
			r = -ENOMEM;
		else
			r = image_add_file(im, de->d_name, &st);
	}
	closedir(d);
	return r;
}

int nf_images_scan(struct nf_ctx *ctx, const char *out, const char *role,
		   struct nf_images *l)
{
	char *dir, *lm, sha[65] = "";
	size_t from = l->n;
	unsigned m;
	int r;

	if (!role || !*role || strchr(role, '/') || role[0] == '.')
		return nf_fail(ctx, NF_E_INVALID, "'%s' is not a role name",
			       role ? role : "");
	if (!(dir = nf_asprintf("%s/%s", out, role)))
		return -ENOMEM;
	if ((r = scan_dir(ctx, dir, role, l)))
		goto out;
	for (size_t i = from; i < l->n && !r; i++) {
		lm = nf_asprintf("%s-%s.liveimg.manifest.json", role, l->v[i].id);
		if (lm && has_file(&l->v[i], lm))
			r = claim_liveimg(ctx, l, from, dir, &l->v[i]);
		free(lm);
	}
	if (r)
		goto out;
	settle(l, from, dir);
	m = nf_err_mark(ctx);
	if ((r = nf_pxe_current_sha(ctx, out, role, sha)) == NF_E_NOTFOUND) {
		nf_err_drop(ctx, m);
		r = 0;
	} else if (r) {
		goto out;
	}
	sha[12] = '\0';
	for (size_t i = from; i < l->n; i++)
		finish_image(dir, &l->v[i], *sha ? sha : NULL);
	qsort(l->v + from, l->n - from, sizeof(*l->v), cmp_image);
out:
	free(dir);
	return r;
}

int nf_images_roles(struct nf_ctx *ctx, const char *out, char ***roles,
		    size_t *n)
{
	DIR *d = opendir(out);
	struct dirent *de;
	char **v = NULL;
	size_t k = 0;

	*roles = NULL;
	*n = 0;
	if (!d)
		return nf_fail(ctx, errno == ENOENT ? NF_E_NOTFOUND : -errno,
			       "cannot read '%s': %s", out, strerror(errno));
	while ((de = readdir(d))) {
		char *cur = nf_asprintf("%s/%s.current", de->d_name, de->d_name);
		struct stat st;
		char **nv;
		int is_role = cur && de->d_name[0] != '.' &&
			      fstatat(dirfd(d), cur, &st, 0) == 0;

		free(cur);
		if (!is_role)
			continue;
		if (!(nv = realloc(v, (k + 1) * sizeof(*v))) ||
		    !(nv[k] = nf_strdup(de->d_name))) {
			free(nv ? nv : v);
			closedir(d);
			return -ENOMEM;
		}
		v = nv;
		k++;
	}
	closedir(d);
	if (k)
		qsort(v, k, sizeof(*v), cmp_name);
	*roles = v;
	*n = k;
	return 0;
}

/* ------------------------------------------------ what a boot tree names */

/* The files of a boot tree that name the images nodes boot: the index,
 * the iPXE and GRUB scripts, the kickstarts (docs/formats.md) */
static const char *const tree_dirs[] = { "ipxe", "ipxe/mac", "grub",
					 "kickstart" };

static void mark_in_text(struct nf_images *l, const char *text, size_t len)
{
	for (size_t i = 0; i < l->n; i++)
		for (size_t k = 0; k < l->v[i].nfiles && !l->v[i].booted; k++)
			if (memmem(text, len, l->v[i].files[k],
				   strlen(l->v[i].files[k])))
				l->v[i].booted = 1;
}

static int mark_file(struct nf_ctx *ctx, struct nf_images *l, const char *path)
{
	char *buf = NULL;
	size_t len = 0;
	int r = nf_read_file(ctx, path, NF_IMAGE_TREE_FILE_MAX, &buf, &len);

	if (!r)
		mark_in_text(l, buf, len);
	free(buf);
	return r;
}

static int mark_dir(struct nf_ctx *ctx, struct nf_images *l, const char *tree,
		    const char *sub)
{
	char *dir = nf_asprintf("%s/%s", tree, sub);
	DIR *d = dir ? opendir(dir) : NULL;
	struct dirent *de;
	int r = 0;

	if (!d) {
		r = !dir ? -ENOMEM : errno == ENOENT ? 0 : nf_fail(ctx, -errno,
			"cannot read '%s': %s", dir, strerror(errno));
		free(dir);
		return r;
	}
	while (!r && (de = readdir(d))) {
		struct stat st;
		char *p;

		if (de->d_name[0] == '.' ||
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode))
			continue;
		if (!(p = nf_asprintf("%s/%s", dir, de->d_name)))
			r = -ENOMEM;
		else
			r = mark_file(ctx, l, p);
		free(p);
	}
	closedir(d);
	free(dir);
	return r;
}

int nf_images_mark_booted(struct nf_ctx *ctx, struct nf_images *l,
			  const char *tree)
{
	char *index = nf_asprintf("%s/nodes.json", tree);
	int r;

	if (!index)
		return -ENOMEM;
	if (access(index, R_OK) != 0) {
		r = nf_fail(ctx, NF_E_NOTFOUND, "'%s' is not a boot tree: cannot "
			    "read '%s': %s (render it with 'nodeforge pxe --out "
			    "%s')", tree, index, strerror(errno), tree);
		free(index);
		return r;
	}
	r = mark_file(ctx, l, index);
	free(index);
	for (size_t i = 0; !r && i < NF_ARRAY_SIZE(tree_dirs); i++)
		r = mark_dir(ctx, l, tree, tree_dirs[i]);
	return r;
}

/* ----------------------------------------------------------------- prune */

/* The N newest of the role stay, and with them, whatever their age, the
 * current one and every one a boot tree names */
static void choose(struct nf_images *l, size_t keep)
{
	for (size_t i = 0; i < l->n; i++)
		l->v[i].pruned = i >= keep && !l->v[i].current && !l->v[i].booted;
}

static int remove_image(struct nf_ctx *ctx, const char *dir,
			const struct nf_image *im)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), r = 0;

	if (dfd < 0)
		return nf_fail(ctx, -errno, "cannot open '%s': %s", dir,
			       strerror(errno));
	/* the manifests and their signatures last: an image cut short
	 * still shows in 'image list' and the next prune finishes it */
	for (int manifests = 0; manifests < 2; manifests++)
		for (size_t i = 0; i < im->nfiles && !r; i++) {
			int is_manifest = strstr(im->files[i], ".manifest.json") != NULL;

			if (is_manifest != manifests)
				continue;
			if (unlinkat(dfd, im->files[i], 0) < 0 && errno != ENOENT)
				r = nf_fail(ctx, -errno, "cannot remove '%s/%s': %s",
					    dir, im->files[i], strerror(errno));
		}
	if (!r && fsync(dfd) < 0)
		r = nf_fail(ctx, -errno, "cannot sync '%s': %s", dir,
			    strerror(errno));
	close(dfd);
	return r;
}

static int lock_role(struct nf_ctx *ctx, const char *dir, const char *role,
		     int *fd)
{
	char *path = nf_asprintf("%s/.lock", dir);
	int r;

	if (!path)
		return -ENOMEM;
	r = nf_lock_path(ctx, path, 0, fd);
	if (r == 1)
		r = nf_fail(ctx, NF_E_LOCKED, "a build of '%s' is running (lock "
			    "'%s' is held); prune once it is done", role, path);
	free(path);
	return r;
}

int nf_images_prune(struct nf_ctx *ctx, const char *out, const char *role,
		    const struct nf_image_prune_opts *o, struct nf_images *l)
{
	char *dir = nf_asprintf("%s/%s", out, role);
	size_t from = l->n;
	struct nf_images mine = { 0 };
	int fd = -1, r;

	if (!dir)
		return -ENOMEM;
	if (access(dir, F_OK) != 0) {
		r = nf_fail(ctx, NF_E_NOTFOUND, "cannot read '%s': %s", dir,
			    strerror(errno));
		goto out;
	}
	if ((r = lock_role(ctx, dir, role, &fd)) ||
	    (r = nf_images_scan(ctx, out, role, &mine)))
		goto out;
	for (size_t i = 0; i < o->ntrees && !r; i++)
		r = nf_images_mark_booted(ctx, &mine, o->trees[i]);
	if (r)
		goto out;
	choose(&mine, o->keep);
	for (size_t i = 0; i < mine.n && !r; i++)
		if (mine.v[i].pruned && !o->dry_run)
			r = remove_image(ctx, dir, &mine.v[i]);
out:
	if (fd >= 0)
		close(fd);
	free(dir);
	if (!r) {
		/* hand the role's images over, their files with them */
		struct nf_image *v = realloc(l->v, (from + mine.n + 1) * sizeof(*v));

		if (!v) {
			nf_images_free(&mine);
			return -ENOMEM;
		}
		l->v = v;
		memcpy(l->v + from, mine.v, mine.n * sizeof(*v));
		l->n = from + mine.n;
		free(mine.v);
		return 0;
	}
	nf_images_free(&mine);
	return r;
}
