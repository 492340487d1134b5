/* SPDX-License-Identifier: MIT */
/*
 * One node's boot entry rewritten in a rendered tree: its iPXE script and
 * GRUB config pointed at its role's current image, the image's files
 * placed first, both entries published by rename.  The rest of the tree
 * (other nodes, dnsmasq, nginx, nodes.json) is left as it is.
 */
#include "pxe_int.h"

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

/* The server URL and ROLE's kernel arguments the tree was rendered with */
static int read_index(struct nf_ctx *ctx, const char *tree, const char *role,
		      char **url, char **args)
{
	char *path = nf_asprintf("%s/nodes.json", tree), *buf = NULL;
	json_t *j = NULL;
	const char *u, *a;
	int e;

	if (!path)
		return -ENOMEM;
	e = nf_read_file(ctx, path, NF_PXE_INDEX_MAX, &buf, NULL);
	if (!e) {
		j = json_loads(buf, 0, NULL);
		u = json_string_value(json_object_get(j, "server_url"));
		a = json_string_value(json_object_get(json_object_get(
			json_object_get(j, "roles"), role), "kernel_args"));
		if (!u || !a)
			e = nf_fail(ctx, NF_E_INVALID, "'%s' names no server_url "
				    "or no kernel_args for role '%s': render the "
				    "tree with 'nodeforge pxe' first", path, role);
		else if (!(*url = nf_strdup(u)) || !(*args = nf_strdup(a)))
			e = -ENOMEM;
	}
	json_decref(j);
	free(buf);
	free(path);
	return e;
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
	char *url = NULL, *args = NULL;
	int e;

	if (sha && !hex_prefix(sha))
		return nf_fail(ctx, NF_E_INVALID, "invalid image hash '%s': 12 to "
			       "64 lower-case hex digits", sha);
	if ((e = read_index(ctx, tree, nd->role, &url, &args)))
		goto out;
	o.server_url = url;
	r.args = args;
	if ((e = nf_pxe_kernel_args_check(ctx, nd->role, args)))
		goto out;
	if (!(p.keep = json_object())) {
		e = -ENOMEM;
		goto out;
	}
	p.root = open(tree, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (p.root < 0) {
		e = nf_fail(ctx, -errno, "cannot open the boot tree '%s': %s",
			    tree, strerror(errno));
		goto out;
	}
	if ((e = nf_pxe_read_current(&p, &r)))
		goto out;
	if (sha && strncmp(r.rootfs_sha256, sha, strlen(sha))) {
		e = nf_fail(ctx, NF_E_NOTFOUND, "image %s@%s is not the current "
			    "image of role '%s' in '%s' (that is %s@%.12s): the "
			    "tree serves a role's current image only; build or "
			    "pick it again", nd->role, sha, nd->role, images_dir,
			    nd->role, r.rootfs_sha256);
		goto out;
	}
	if ((e = nf_pxe_place_image(&p, &r, r.kernel)) ||
	    (e = nf_pxe_place_image(&p, &r, r.initramfs)) ||
	    (e = nf_pxe_place_image(&p, &r, r.rootfs)) ||
	    (e = nf_pxe_render_node(&p, nd, &r, &b)) ||
	    (e = nf_pxe_publish(&p)))
		goto out;
	snprintf(image, 96, "%s@%.12s", nd->role, r.rootfs_sha256);
out:
	nf_pxe_release(&p);
	nf_pxe_role_clear(&r);
	free(b.s);
	free(url);
	free(args);
	return e;
}
