/* SPDX-License-Identifier: MIT */
/* Rendering of manifest differences, shared by 'diff' and 'manifest check'. */
#ifndef NF_CMD_CHANGES_H
#define NF_CMD_CHANGES_H

#include "nodeforge.h"

/* One line (text) or object (JSON) per change of `list` */
void nf_emit_changes(struct nf_emit *e, const char *key, const json_t *list);

#endif
