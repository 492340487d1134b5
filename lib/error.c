/* SPDX-License-Identifier: MIT */
#include "internal.h"

#include <stdio.h>

static const char *const nf_error_names[] = {
	[NF_E_USAGE - NF_E_BASE] = "invalid argument",
	[NF_E_PARSE - NF_E_BASE] = "parse error",
	[NF_E_INVALID - NF_E_BASE] = "invalid value",
	[NF_E_NOTFOUND - NF_E_BASE] = "not found",
	[NF_E_CYCLE - NF_E_BASE] = "inheritance cycle",
	[NF_E_CONFLICT - NF_E_BASE] = "conflicting values",
	[NF_E_UNSAFE - NF_E_BASE] = "unsafe path",
	[NF_E_CHECKSUM - NF_E_BASE] = "checksum mismatch",
	[NF_E_SIGNATURE - NF_E_BASE] = "bad signature",
	[NF_E_NETWORK - NF_E_BASE] = "network transfer failed",
	[NF_E_LIMIT - NF_E_BASE] = "size limit exceeded",
	[NF_E_LOCKED - NF_E_BASE] = "locked by another process",
	[NF_E_UNSUPPORTED - NF_E_BASE] = "not supported",
	[NF_E_TIMEOUT - NF_E_BASE] = "timed out",
	[NF_E_FINDINGS - NF_E_BASE] = "checks found problems",
	[NF_E_EXTERNAL - NF_E_BASE] = "external tool failed",
	[NF_E_NOHW - NF_E_BASE] = "hardware interface not present",
};

/* Every code has a name: adding an enum value without one fails to build */
_Static_assert(NF_ARRAY_SIZE(nf_error_names) == NF_E_END - NF_E_BASE,
	       "nf_error_names must cover every NF_E_* code");

const char *nf_strerror(int code)
{
	if (code == 0)
		return "success";
	if (code >= NF_E_BASE && code < NF_E_END) {
		const char *s = nf_error_names[code - NF_E_BASE];
		return s ? s : "unknown error";
	}
	if (code < 0 && code > NF_E_BASE)
		return strerror(-code);
	return "unknown error";
}
