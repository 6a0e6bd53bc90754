/* curl_lazy: libcurl through dlopen on first use (net/curl_lazy.h). */
#define CURL_LAZY_IMPL
#define CURL_DISABLE_TYPECHECK /* the two functions below are defined under curl.h's names */
#include "net/curl_lazy.h"

#include <stdarg.h>
#include <stdlib.h>

#include "core/dynlib.h"

#ifndef LM_CURL_LIB
#error "LM_CURL_LIB (the path of the libcurl to load) is set by the Makefile"
#endif

struct curl_lazy curl_lazy;

int
curl_lazy_load(char *err)
{
	static dynlib_once once = DYNLIB_ONCE_INIT;
#define CURL_LAZY_NAME(f) #f,
	static const char *const names[] = {CURL_LAZY_FNS(CURL_LAZY_NAME)};
#undef CURL_LAZY_NAME
	_Static_assert(sizeof curl_lazy == sizeof names / sizeof *names * sizeof(dynlib_fn), "one pointer a name");

	return dynlib_get(&once, "libcurl", getenv("LUME_METAL_LIBCURL"), LM_CURL_LIB, names, &curl_lazy,
	    sizeof names / sizeof *names, err);
}

/* libcurl reads curl_easy_setopt's one argument by the option's type range (its lib/setopt.c):
 * a long, an object pointer, a function pointer, a curl_off_t, or a blob's pointer. */
CURLcode
curl_easy_setopt(CURL *curl, CURLoption option, ...)
{
	va_list ap;
	CURLcode rc;

	if (curl_lazy_load(NULL) != LM_OK)
		return CURLE_FAILED_INIT;
	va_start(ap, option);
	if (option < CURLOPTTYPE_OBJECTPOINT)
		rc = curl_lazy.curl_easy_setopt(curl, option, va_arg(ap, long));
	else if (option < CURLOPTTYPE_FUNCTIONPOINT)
		rc = curl_lazy.curl_easy_setopt(curl, option, va_arg(ap, void *));
	else if (option < CURLOPTTYPE_OFF_T)
		rc = curl_lazy.curl_easy_setopt(curl, option, va_arg(ap, void (*)(void)));
	else if (option < CURLOPTTYPE_BLOB)
		rc = curl_lazy.curl_easy_setopt(curl, option, va_arg(ap, curl_off_t));
	else
		rc = curl_lazy.curl_easy_setopt(curl, option, va_arg(ap, void *));
	va_end(ap);
	return rc;
}

/* curl_easy_getinfo's one argument is always a pointer to where the answer goes. */
CURLcode
curl_easy_getinfo(CURL *curl, CURLINFO info, ...)
{
	va_list ap;
	void *p;

	if (curl_lazy_load(NULL) != LM_OK)
		return CURLE_FAILED_INIT;
	va_start(ap, info);
	p = va_arg(ap, void *);
	va_end(ap);
	return curl_lazy.curl_easy_getinfo(curl, info, p);
}
