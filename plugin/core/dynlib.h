/* dynlib: a shared library loaded on first use (dlopen) rather than at every start of the tool,
 * for the libraries most commands never call: libcurl (net/curl_lazy.h), only for registries,
 * and libarchive (core/archive_lazy.h), only for payloads. Each start of the tool on Linux paid
 * 9 ms of CPU for libcurl's libraries and 5 ms for libarchive's (docs/performance.md).
 *
 * The path is the build's (the Makefile compiles in pkg-config's libdir and the library's ABI
 * name), or the caller's override (its environment variable's value) when set and not empty. */
#ifndef LM_DYNLIB_H
#define LM_DYNLIB_H

#include <pthread.h>
#include <stddef.h>

#include "core/util.h"

typedef void (*dynlib_fn)(void);

/* One library's load: tried once, its result kept (static storage, DYNLIB_ONCE_INIT). */
typedef struct {
	pthread_mutex_t mu;
	int state; /* 0 not tried, 1 loaded, -1 failed (err says why) */
	char err[LM_ERRLEN];
} dynlib_once;
#define DYNLIB_ONCE_INIT {PTHREAD_MUTEX_INITIALIZER, 0, ""}

/* The first call opens path (or override when not NULL or empty) and looks up names[0..n-1]
 * into table, n function pointers in that order (the caller's struct of them); later calls
 * return the first result. LM_OK, or LM_EFAIL with err (may be NULL) saying "cannot load WHAT:
 * ..." (dlopen's reason, which names the file) or "cannot load WHAT (PATH): it has no NAME".
 * Thread-safe; the library stays loaded. */
int dynlib_get(dynlib_once *o, const char *what, const char *override, const char *path, const char *const *names,
    void *table, size_t n, char *err);

#endif
