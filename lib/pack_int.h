/* SPDX-License-Identifier: MIT */
/*
 * Packing's private parts, shared by its files: lib/pack.c (pass 2: each
 * entry written to the archive and the manifest) and lib/pack_walk.c
 * (pass 1: the tree walked and sorted; the hard-link table).
 */
#ifndef NF_PACK_INT_H
#define NF_PACK_INT_H

#include "internal.h"

#include <sys/types.h>

struct hl_slot {
	dev_t dev;
	ino_t ino;
	unsigned count;          /* names in the tree */
	const char *first;       /* first name in sorted order */
	unsigned long long sino; /* synthesized inode */
};

struct hl_table {
	struct hl_slot *v;
	size_t cap, n;
};

/* A path and its type as pass 1 saw it (DT_*) */
struct pent {
	char *path;
	unsigned char type;
};

struct walk {
	struct nf_ctx *ctx;
	struct pent *paths;
	size_t n, cap;
	struct hl_table hl;
	unsigned long long sockets;
	/* cpio records how many names a hard-linked file has in the tree:
	 * counted here.  tar does not: pass 2 finds the links. */
	int count_links;
};

/* The slot of (dev, ino), added if create; NULL if absent, or out of
 * memory */
struct hl_slot *nf_pk_hl_get(struct hl_table *t, dev_t dev, ino_t ino,
			     int create);

/* Pass 1: every path under rootfd (a dup of it is walked) into w->paths,
 * in the archive's order */
int nf_pk_walk(struct walk *w, int rootfd);

#endif
