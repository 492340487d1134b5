/* SPDX-License-Identifier: MIT */
/*
 * The boot tree's private parts, shared by its files: lib/pxe.c (templates
 * and what is rendered from them: iPXE, GRUB, kickstart, dnsmasq, nginx,
 * the node index), lib/pxe_stage.c (the tree's files: staged next to
 * their target, compared, published by rename, pruned) and
 * lib/pxe_images.c (each role's current image placed by content).
 */
#ifndef NF_PXE_INT_H
#define NF_PXE_INT_H

#include "internal.h"

#define NF_PXE_TMPL_MAX (256u << 10)
#define NF_PXE_CURRENT_MAX (64u << 10)
#define NF_PXE_CMP_MAX (4u << 20)

struct staged {
	int dfd;       /* borrowed from the dir table */
	char *tmp;
	char *name;
};

struct pxe {
	struct nf_ctx *ctx;
	const struct nf_pxe_opts *o;
	struct nf_pxe_stats *st;
	int root;                 /* tree dirfd */
	struct {
		char *path;
		int fd;
	} dirs[16];
	size_t ndirs;
	struct staged *stg;
	size_t nstg, capstg;
	json_t *keep;             /* dir -> {name: true} of files rendered */
	unsigned long seq;
};

struct role {
	const char *name;
	const char *args;       /* the facets' kernel arguments */
	char *kernel, *initramfs, *rootfs, *rootfs_sha256;
	char *liveimg, *liveimg_sha256; /* the tarball for kickstart liveimg */
};

/* templates and rendering (lib/pxe.c) */
/* the node's iPXE script and GRUB config, staged */
int nf_pxe_render_node(struct pxe *p, const struct nf_node *nd,
		       const struct role *r, struct nf_buf *b);
/* DOC as the tree's nodes.json, staged (as nf_pxe_render writes it) */
int nf_pxe_put_index(struct pxe *p, const json_t *doc, struct nf_buf *b);

/* the tree's files (lib/pxe_stage.c) */
int nf_pxe_dir_fd(struct pxe *p, const char *sub);
int nf_pxe_keep(struct pxe *p, const char *dir, const char *name);
int nf_pxe_put(struct pxe *p, const char *dir, const char *name,
	       const char *buf, size_t len);
void nf_pxe_unstage(struct pxe *p);
/* unstage, close the tree and its directories, free what p holds */
void nf_pxe_release(struct pxe *p);
int nf_pxe_publish(struct pxe *p);
int nf_pxe_prune(struct pxe *p, const char *dir, const char *prefix,
		 const char *suffix);
int nf_pxe_bput(struct pxe *p, const char *dir, const char *name,
		struct nf_buf *b);

/* images and boot files (lib/pxe_images.c) */
int nf_pxe_anaconda_tarball(const char *name);
int nf_pxe_place_image(struct pxe *p, const struct role *r, const char *name);
/* OUT/ROLE/ROLE.current into r (nothing placed); clear frees it */
int nf_pxe_read_current(struct pxe *p, struct role *r);
void nf_pxe_role_clear(struct role *r);
int nf_pxe_load_current(struct pxe *p, struct role *r);
int nf_pxe_place_ipxe(struct pxe *p);
int nf_pxe_check_boot_files(struct pxe *p, struct nf_pxe_stats *st);
/* 0 when the final kernel arguments of a role hold no character iPXE,
 * GRUB or a kickstart would interpret; else the error, naming it */
int nf_pxe_kernel_args_check(struct nf_ctx *ctx, const char *role,
			     const char *args);

#endif
