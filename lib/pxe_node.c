/* SPDX-License-Identifier: MIT */
/*
 * One node's boot entry rewritten in a rendered tree: its iPXE script and
 * GRUB config pointed at its role's current image or an older one OUT
 * still publishes (a rollback), the image's files placed first, and its
 * entry in nodes.json naming that kernel when it is not the role's (the
 * boot server shows it as the node's image); all published by rename,
 * nodes.json last.  The rest of the tree (other nodes, dnsmasq, nginx)
 * is left as it is.
 */
#include "pxe_int.h"

#include <sys/file.h>

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#define NF_PXE_INDEX_MAX (64u << 20)

static int hex_prefix(const char *s)
{
	size_t n = strlen(s);

	if (n < 12 || n > 64)
		return 0;
	for (; *s; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
			return 0;
	return 1;
}

int nf_pxe_current_sha(struct nf_ctx *ctx, const char *images_dir,
		       const char *role, char sha[65])
{
	struct nf_pxe_opts o = { .images_dir = images_dir };
	struct pxe p = { .ctx = ctx, .o = &o, .root = -1 };
	struct role r = { .name = role };
	int e = nf_pxe_read_current(&p, &r);

	if (!e)
		snprintf(sha, 65, "%s", r.rootfs_sha256);
	nf_pxe_role_clear(&r);
	return e;
}

/* ROLE's images in OUT for a message: "ROLE@id (current), ROLE@id", those
 * with a manifest, at most 8 */
static void known_images(const struct nf_images *l, const char *role,
			 const char *cur, char *out, size_t sz)
{
	size_t k = 0, shown = 0;

	*out = '\0';
	if (cur && *cur)
		k += (size_t)snprintf(out, sz, "%s@%.12s (current)", role, cur);
	for (size_t i = 0; i < l->n && k < sz; i++) {
		const struct nf_image *im = &l->v[i];

		if (!im->has_manifest || (cur && !strncmp(cur, im->id, 12)))
			continue;
		if (++shown > 8) {
			k += (size_t)snprintf(out + k, sz - k, ", ...");
			break;
		}
		k += (size_t)snprintf(out + k, sz - k, "%s%s@%s", k ? ", " : "",
				      role, im->id);
	}
	if (!*out)
		snprintf(out, sz, "none");
}

/* An image of ROLE that OUT still publishes, not ROLE.current's: found by
 * the first 12 digits of SHA, whose files must all be there (kernel,
 * initramfs, rootfs, the manifest and its signature) and whose manifest's
 * archive sha256 must begin with SHA.  Into r as nf_pxe_read_current
 * fills it; NF_E_NOTFOUND names the images there are */
static int read_published(struct pxe *p, struct role *r, const char *sha,
			  const char *cur)
{
	const char *out = p->o->images_dir, *role = r->name;
	struct nf_images l = { 0 };
	const struct nf_image *im = NULL;
	char *path = NULL, names[3][96], known[512];
	const char *got, *name;
	json_t *m = NULL;
	int e;

	if ((e = nf_images_scan(p->ctx, out, role, &l)))
		return e;
	for (size_t i = 0; i < l.n; i++)
		if (!strncmp(l.v[i].id, sha, 12))
			im = &l.v[i];
	if (!im) {
		known_images(&l, role, cur, known, sizeof(known));
		e = nf_fail(p->ctx, NF_E_NOTFOUND, "image %s@%s is not published "
			    "in '%s' (pruned, or never built): the images of "
			    "role '%s' are %s", role, sha, out, role, known);
		goto out;
	}
	snprintf(names[0], sizeof(names[0]), "%s-%s.vmlinuz", role, im->id);
	snprintf(names[1], sizeof(names[1]), "%s-%s.initramfs.cpio.zst", role,
		 im->id);
	snprintf(names[2], sizeof(names[2]), "%s-%s.manifest.json", role, im->id);
	for (size_t i = 0; i < 3; i++) {
		size_t k;

		for (k = 0; k < im->nfiles && strcmp(im->files[k], names[i]); k++)
			;
		if (k == im->nfiles) {
			e = nf_fail(p->ctx, NF_E_NOTFOUND, "image %s@%s in '%s/%s' "
				    "has no '%s': it cannot boot", role, im->id,
				    out, role, names[i]);
			goto out;
		}
	}
	if (!im->is_signed) {
		e = nf_fail(p->ctx, NF_E_INVALID, "image %s@%s in '%s/%s' has no "
			    "signature ('%s.sig')", role, im->id, out, role,
			    names[2]);
		goto out;
	}
	if (!(path = nf_asprintf("%s/%s/%s", out, role, names[2]))) {
		e = -ENOMEM;
		goto out;
	}
	if ((e = nf_manifest_load(p->ctx, path, &m)))
		goto out;
	got = json_string_value(json_object_get(json_object_get(m, "archive"),
						"sha256"));
	name = json_string_value(json_object_get(json_object_get(m, "archive"),
						 "name"));
	if (!got || strlen(got) != 64 || strncmp(got, sha, strlen(sha)) ||
	    !name || strchr(name, '/') || *name == '.') {
		e = nf_fail(p->ctx, NF_E_NOTFOUND, "image %s@%s: its manifest "
			    "'%s' names no rootfs whose sha256 begins with %s",
			    role, sha, path, sha);
		goto out;
	}
	if (!(r->kernel = nf_strdup(names[0])) ||
	    !(r->initramfs = nf_strdup(names[1])) ||
	    !(r->rootfs = nf_strdup(name)) ||
	    !(r->rootfs_sha256 = nf_strdup(got)))
		e = -ENOMEM;
out:
	json_decref(m);
	free(path);
	nf_images_free(&l);
	return e;
}

int nf_pxe_image_sha(struct nf_ctx *ctx, const char *images_dir,
		     const char *role, const char *want, char sha[65])
{
	struct nf_pxe_opts o = { .images_dir = images_dir };
	struct pxe p = { .ctx = ctx, .o = &o, .root = -1 };
	struct role r = { .name = role };
	char cur[65] = "";
	int e;

	if (!hex_prefix(want))
		return nf_fail(ctx, NF_E_INVALID, "invalid image hash '%s': 12 to "
			       "64 lower-case hex digits", want);
	if ((e = nf_pxe_read_current(&p, &r)))
		return e;
	if (strncmp(r.rootfs_sha256, want, strlen(want))) {
		snprintf(cur, sizeof(cur), "%s", r.rootfs_sha256);
		nf_pxe_role_clear(&r);
		r = (struct role){ .name = role };
		e = read_published(&p, &r, want, cur);
	}
	if (!e)
		snprintf(sha, 65, "%s", r.rootfs_sha256);
	nf_pxe_role_clear(&r);
	return e;
}

/* The tree's nodes.json into *doc: its server URL and ROLE's kernel
 * arguments into url and args (borrowed from *doc), ND's entry into *entry */
static int read_index(struct nf_ctx *ctx, const char *tree,
		      const struct nf_node *nd, json_t **doc, const char **url,
		      const char **args, json_t **entry)
{
	char *path = nf_asprintf("%s/nodes.json", tree), *buf = NULL;
	json_t *j = NULL, *n;
	size_t i;
	int e;

	*entry = NULL;
	if (!path)
		return -ENOMEM;
	if ((e = nf_read_file(ctx, path, NF_PXE_INDEX_MAX, &buf, NULL)))
		goto out;
	j = json_loads(buf, 0, NULL);
	*url = json_string_value(json_object_get(j, "server_url"));
	*args = json_string_value(json_object_get(json_object_get(
		json_object_get(j, "roles"), nd->role), "kernel_args"));
	json_array_foreach(json_object_get(j, "nodes"), i, n)
		if (!*entry && json_is_object(n) &&
		    !strcmp(json_string_value(json_object_get(n, "name")) ?: "",
			    nd->name))
			*entry = n;
	if (!*url || !*args)
		e = nf_fail(ctx, NF_E_INVALID, "'%s' names no server_url or no "
			    "kernel_args for role '%s': render the tree with "
			    "'nodeforge pxe' first", path, nd->role);
	else if (!*entry)
		e = nf_fail(ctx, NF_E_NOTFOUND, "'%s' has no node '%s': render "
			    "the tree with 'nodeforge pxe' for this inventory "
			    "first", path, nd->name);
out:
	if (e)
		json_decref(j);
	else
		*doc = j;
	free(buf);
	free(path);
	return e;
}

/* ND's entry in the index names the kernel it boots when that is not its
 * role's (the server shows it as the node's image); a node pointed back
 * at its role's has the entry 'nodeforge pxe' renders */
static int index_kernel(json_t *doc, json_t *entry, const struct role *r)
{
	const char *rk = json_string_value(json_object_get(json_object_get(
		json_object_get(doc, "roles"), r->name), "kernel"));

	if (rk && !strcmp(rk, r->kernel)) {
		json_object_del(entry, "kernel");
		return 0;
	}
	return json_object_set_new(entry, "kernel", json_string(r->kernel))
		? -ENOMEM : 0;
}

int nf_pxe_point_node(struct nf_ctx *ctx, const char *tree,
		      const char *images_dir, const struct nf_node *nd,
		      const char *sha, char image[96])
{
	struct nf_pxe_stats st = { 0 };
	struct nf_pxe_opts o = { .out_dir = tree, .images_dir = images_dir };
	struct pxe p = { .ctx = ctx, .o = &o, .st = &st, .root = -1 };
	struct role r = { .name = nd->role };
	struct nf_buf b = { 0 };
	const char *url, *args;
	json_t *doc = NULL, *entry;
	int e;

	if (sha && !hex_prefix(sha))
		return nf_fail(ctx, NF_E_INVALID, "invalid image hash '%s': 12 to "
			       "64 lower-case hex digits", sha);
	/* one point at a time per tree (two reimages of other nodes each
	 * rewrite nodes.json): the lock is the tree's directory's, held
	 * until its files are published */
	p.root = open(tree, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (p.root < 0) {
		e = nf_fail(ctx, -errno, "cannot open the boot tree '%s': %s",
			    tree, strerror(errno));
		goto out;
	}
	while ((e = flock(p.root, LOCK_EX)) < 0 && errno == EINTR)
		;
	if (e < 0) {
		e = nf_fail(ctx, -errno, "cannot lock the boot tree '%s': %s",
			    tree, strerror(errno));
		goto out;
	}
	if ((e = read_index(ctx, tree, nd, &doc, &url, &args, &entry)))
		goto out;
	o.server_url = url;
	r.args = args;
	if ((e = nf_pxe_kernel_args_check(ctx, nd->role, args)))
		goto out;
	if (!(p.keep = json_object())) {
		e = -ENOMEM;
		goto out;
	}
	if ((e = nf_pxe_read_current(&p, &r)))
		goto out;
	if (sha && strncmp(r.rootfs_sha256, sha, strlen(sha))) {
		/* an older image, still published: a rollback */
		char cur[65];

		snprintf(cur, sizeof(cur), "%s", r.rootfs_sha256);
		nf_pxe_role_clear(&r);
		r = (struct role){ .name = nd->role, .args = args };
		if ((e = read_published(&p, &r, sha, cur)))
			goto out;
	}
	if ((e = nf_pxe_place_image(&p, &r, r.kernel)) ||
	    (e = nf_pxe_place_image(&p, &r, r.initramfs)) ||
	    (e = nf_pxe_place_image(&p, &r, r.rootfs)) ||
	    (e = nf_pxe_render_node(&p, nd, &r, &b)) ||
	    (e = index_kernel(doc, entry, &r)) ||
	    (e = nf_pxe_put_index(&p, doc, &b)) ||
	    (e = nf_pxe_publish(&p)))
		goto out;
	snprintf(image, 96, "%s@%.12s", nd->role, r.rootfs_sha256);
out:
	nf_pxe_release(&p);
	nf_pxe_role_clear(&r);
	free(b.s);
	json_decref(doc);
	return e;
}
