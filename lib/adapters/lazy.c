/* SPDX-License-Identifier: MIT */
/*
 * Libraries loaded on first use: libcurl, libmicrohttpd and libarchive,
 * which with the libraries they link are most of the shared objects
 * nodeforge would load at every start (38 of 55 on Debian 12: a command
 * started in 7.4 ms with them, 2.3 ms without), for the commands that
 * fetch, serve or read and write archives.  lib/adapters/curl_dl.c,
 * http_dl.c and archive_dl.c define the functions of theirs that
 * nodeforge calls, each forwarding to the library's own, looked up here
 * on its first call.  A library that cannot be loaded is
 * said once on stderr, and its functions fail as they document (NULL,
 * an error code).
 */
#include "internal.h"
#include "lazy.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

struct lib {
	const char *soname;
	const char *package;
	void *h;
	int failed;
};

static struct lib libs[] = {
	[NF_LAZY_CURL] = { "libcurl.so.4", "libcurl4", NULL, 0 },
	[NF_LAZY_MHD] = { "libmicrohttpd.so.12", "libmicrohttpd12", NULL, 0 },
	[NF_LAZY_ARCHIVE] = { "libarchive.so.13", "libarchive13", NULL, 0 },
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

int nf_lazy_err(enum nf_lazy_lib which)
{
	int failed;

	pthread_mutex_lock(&lock);
	failed = libs[which].failed;
	pthread_mutex_unlock(&lock);
	return failed ? -ELIBACC : -ENOMEM;
}

void *nf_lazy_sym(enum nf_lazy_lib which, const char *name)
{
	struct lib *l = &libs[which];
	void *p = NULL;

	pthread_mutex_lock(&lock);
	if (!l->h && !l->failed) {
		l->h = dlopen(l->soname, RTLD_NOW | RTLD_LOCAL);
		if (!l->h) {
			l->failed = 1;
			fprintf(stderr, "nodeforge: cannot load %s (Debian package %s): %s\n",
				l->soname, l->package, dlerror());
		}
	}
	if (l->h && !(p = dlsym(l->h, name)))
		fprintf(stderr, "nodeforge: %s has no %s\n", l->soname, name);
	pthread_mutex_unlock(&lock);
	return p;
}
