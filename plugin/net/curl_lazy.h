/* curl_lazy: libcurl, loaded (dlopen) the first time a registry is spoken to rather than at every
 * start of the tool. Its libraries (GnuTLS, Kerberos, LDAP, ICU and more) took 9 ms of CPU from
 * each start on Linux, 20 from the ASan build's (docs/performance.md), and most commands never
 * speak to a registry: git runs its HTTP transport as a separate program for the same reason.
 *
 * registry.c, its one user, includes this after <curl/curl.h>: the functions it calls become
 * calls through pointers of their own declared types (__typeof__), so every call is still
 * checked against curl.h. curl_easy_setopt and curl_easy_getinfo keep curl.h's type-checking
 * macros: curl_lazy.c defines them as functions that pass their one argument on by the option's
 * type, as libcurl reads it. The library is the one the tool was built against (LM_CURL_LIB,
 * pkg-config's libdir), or $LUME_METAL_LIBCURL when set and not empty. */
#ifndef LM_CURL_LAZY_H
#define LM_CURL_LAZY_H

#include <curl/curl.h>

#define CURL_LAZY_FNS(X)                                                                            \
	X(curl_global_init) X(curl_easy_init) X(curl_easy_perform) X(curl_easy_cleanup)                \
	X(curl_easy_strerror) X(curl_easy_escape) X(curl_free) X(curl_slist_append)                   \
	X(curl_slist_free_all) X(curl_url) X(curl_url_cleanup) X(curl_url_get) X(curl_url_set)        \
	X(curl_easy_setopt) X(curl_easy_getinfo)

/* The loaded library's functions (all NULL until curl_lazy_load succeeds). */
struct curl_lazy {
#define CURL_LAZY_PTR(f) __typeof__(f) *f;
	CURL_LAZY_FNS(CURL_LAZY_PTR)
#undef CURL_LAZY_PTR
};
extern struct curl_lazy curl_lazy;

/* Loads libcurl once (later calls return the first result): LM_OK, or LM_EFAIL with err (may be
 * NULL) naming the library and why (core/dynlib.h). Thread-safe. */
int curl_lazy_load(char *err);

#ifndef CURL_LAZY_IMPL
#define curl_global_init (*curl_lazy.curl_global_init)
#define curl_easy_init (*curl_lazy.curl_easy_init)
#define curl_easy_perform (*curl_lazy.curl_easy_perform)
#define curl_easy_cleanup (*curl_lazy.curl_easy_cleanup)
#define curl_easy_strerror (*curl_lazy.curl_easy_strerror)
#define curl_easy_escape (*curl_lazy.curl_easy_escape)
#define curl_free (*curl_lazy.curl_free)
#define curl_slist_append (*curl_lazy.curl_slist_append)
#define curl_slist_free_all (*curl_lazy.curl_slist_free_all)
#define curl_url (*curl_lazy.curl_url)
#define curl_url_cleanup (*curl_lazy.curl_url_cleanup)
#define curl_url_get (*curl_lazy.curl_url_get)
#define curl_url_set (*curl_lazy.curl_url_set)
#endif

#endif
