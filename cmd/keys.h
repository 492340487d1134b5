/* SPDX-License-Identifier: MIT */
/* Handlers of 'nodeforge keys' that live in their own files. */
#ifndef NF_CMD_KEYS_H
#define NF_CMD_KEYS_H

struct nf_global;

/* keys rotate munge (cmd/keys_rotate.c); argv[0] is "rotate" */
int nf_keys_rotate(struct nf_global *g, int argc, char **argv);

#endif
