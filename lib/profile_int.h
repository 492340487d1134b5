/* SPDX-License-Identifier: MIT */
/*
 * Profiles' private parts, shared by their files: lib/profile.c (loading,
 * inheritance, kernel arguments, the resolved profile) and
 * lib/profile_merge.c (a profile merged into what it inherits, with the
 * positions of its values).
 */
#ifndef NF_PROFILE_INT_H
#define NF_PROFILE_INT_H

#include "internal.h"

/* One merge of a profile chain: its errors go to diags, failed says so */
struct merge {
	struct nf_ctx *ctx;
	struct nf_diags *diags;
	int failed;
};

/* lib/profile_merge.c: merge a whole profile (*src, *slocs) into
 * (*out, *olocs); into an empty result *src and *slocs move over and are
 * set to NULL */
void nf_prof_merge_top(struct merge *m, json_t **out, json_t **olocs,
		       json_t **src, json_t **slocs);

#endif
