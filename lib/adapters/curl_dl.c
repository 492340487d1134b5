/* SPDX-License-Identifier: MIT */
/*
 * The libcurl functions nodeforge calls, defined here and forwarded to
 * libcurl's own, which is loaded on the first call (lib/adapters/lazy.c).
 * Without libcurl they fail as libcurl's do: no handle, CURLE_FAILED_INIT.
 * The two variadic ones take one argument after the option, a long, a
 * pointer or a curl_off_t: passed on as the 64-bit word it is.
 */
#include "internal.h"
#include "lazy.h"

#include <stdarg.h>
#include <stdint.h>
#include <curl/curl.h>

_Static_assert(sizeof(void *) == sizeof(long) && sizeof(curl_off_t) == sizeof(long),
	       "curl's variadic arguments are passed on as one 64-bit word");

#define FN(name) NF_LAZY_FN(NF_LAZY_CURL, name)

CURLcode curl_global_init(long flags)
{
	__typeof__(&curl_global_init) f = FN(curl_global_init);

	return f ? f(flags) : CURLE_FAILED_INIT;
}

CURL *curl_easy_init(void)
{
	__typeof__(&curl_easy_init) f = FN(curl_easy_init);

	return f ? f() : NULL;
}

CURLcode (curl_easy_setopt)(CURL *curl, CURLoption option, ...)
{
	CURLcode (*f)(CURL *, CURLoption, ...) = FN(curl_easy_setopt);
	va_list ap;
	long v;

	if (!f)
		return CURLE_FAILED_INIT;
	va_start(ap, option);
	v = va_arg(ap, long);
	va_end(ap);
	return f(curl, option, v);
}

CURLcode (curl_easy_getinfo)(CURL *curl, CURLINFO info, ...)
{
	CURLcode (*f)(CURL *, CURLINFO, ...) = FN(curl_easy_getinfo);
	va_list ap;
	void *p;

	if (!f)
		return CURLE_FAILED_INIT;
	va_start(ap, info);
	p = va_arg(ap, void *);
	va_end(ap);
	return f(curl, info, p);
}

CURLcode curl_easy_perform(CURL *curl)
{
	__typeof__(&curl_easy_perform) f = FN(curl_easy_perform);

	return f ? f(curl) : CURLE_FAILED_INIT;
}

void curl_easy_cleanup(CURL *curl)
{
	__typeof__(&curl_easy_cleanup) f = FN(curl_easy_cleanup);

	if (f)
		f(curl);
}

const char *curl_easy_strerror(CURLcode code)
{
	__typeof__(&curl_easy_strerror) f = FN(curl_easy_strerror);

	return f ? f(code) : "libcurl is not installed";
}

struct curl_slist *curl_slist_append(struct curl_slist *list, const char *data)
{
	__typeof__(&curl_slist_append) f = FN(curl_slist_append);

	return f ? f(list, data) : NULL;
}

void curl_slist_free_all(struct curl_slist *list)
{
	__typeof__(&curl_slist_free_all) f = FN(curl_slist_free_all);

	if (f)
		f(list);
}
