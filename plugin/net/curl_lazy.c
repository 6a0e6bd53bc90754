/* curl_lazy: libcurl through dlopen on first use (net/curl_lazy.h). */
#define CURL_LAZY_IMPL
#define CURL_DISABLE_TYPECHECK /* the two functions below are defined under curl.h's names */
#include "net/curl_lazy.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>

#include "core/util.h"

#ifndef LM_CURL_LIB
#error "LM_CURL_LIB (the path of the libcurl to load) is set by the Makefile"
#endif

struct curl_lazy curl_lazy;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char load_err[LM_ERRLEN];
static int load_rc = LM_EFAIL;

static void
load(void)
{
	const char *path = getenv("LUME_METAL_LIBCURL");
	struct curl_lazy got;
	void *h;

	if (path == NULL || *path == '\0')
		path = LM_CURL_LIB;
	if ((h = dlopen(path, RTLD_NOW | RTLD_LOCAL)) == NULL) {
		const char *why = dlerror();

		lm_err(load_err, LM_EFAIL, "cannot load libcurl: %s", why ? why : path); /* (it names the path) */
		return;
	}
	/* Each symbol, or the first one missing (a libcurl older than the URL API, 7.62). dlsym
	 * returns an object pointer; POSIX has it converted to the function's pointer. */
#define CURL_LAZY_SYM(f)                                                                            \
	if ((*(void **)&got.f = dlsym(h, #f)) == NULL) {                                                \
		lm_err(load_err, LM_EFAIL, "cannot load libcurl (%s): it has no %s", path, #f);            \
		dlclose(h);                                                                                 \
		return;                                                                                     \
	}
	CURL_LAZY_FNS(CURL_LAZY_SYM)
#undef CURL_LAZY_SYM
	curl_lazy = got;
	load_rc = LM_OK;
}

int
curl_lazy_load(char *err)
{
	pthread_once(&once, load);
	return load_rc == LM_OK ? LM_OK : lm_err(err, LM_EFAIL, "%s", load_err);
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
