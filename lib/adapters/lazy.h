/* SPDX-License-Identifier: MIT */
/* Libraries loaded on first use (lib/adapters/lazy.c) */
#ifndef NF_ADAPTERS_LAZY_H
#define NF_ADAPTERS_LAZY_H

enum nf_lazy_lib { NF_LAZY_CURL, NF_LAZY_MHD, NF_LAZY_ARCHIVE };

/* The library's function NAME, loading the library on the first call;
 * NULL (said on stderr) when it cannot be loaded or lacks NAME */
void *nf_lazy_sym(enum nf_lazy_lib lib, const char *name);

/* What a call that got nothing from LIB returns: -ELIBACC when LIB could
 * not be loaded (said on stderr, naming it), else -ENOMEM */
int nf_lazy_err(enum nf_lazy_lib lib);

/* The function NAME of LIB, of NAME's own type, looked up once: the
 * variable it is kept in is the caller's */
#define NF_LAZY_FN(lib, name)                                                  \
	({                                                                     \
		static __typeof__(&name) nf_p_;                                \
		__typeof__(&name) nf_q_ = __atomic_load_n(&nf_p_, __ATOMIC_ACQUIRE); \
		if (!nf_q_) {                                                  \
			nf_q_ = (__typeof__(&name))nf_lazy_sym(lib, #name);    \
			__atomic_store_n(&nf_p_, nf_q_, __ATOMIC_RELEASE);     \
		}                                                              \
		nf_q_;                                                         \
	})

#endif
