/* SPDX-License-Identifier: MIT */
/* libnodeforge's private declarations: image CI (lib/ci.c, lib/ci_diff.c),
 * what it reads of an image's files. */
#ifndef NF_INTERNAL_CI_H
#define NF_INTERNAL_CI_H

#include "internal.h"

/* Installed Package -> Version of a dpkg status file (NUL-terminated) */
json_t *nf_ci_dpkg_packages(const char *text);
/* A "StoragePass=" line with a value in buf */
int nf_ci_has_storagepass(const char *buf, size_t len);

#endif
