/* dynlib: see dynlib.h. */
#include "core/dynlib.h"

#include <dlfcn.h>
#include <string.h>

static int
load(dynlib_once *o, const char *what, const char *path, const char *const *names, void *table, size_t n)
{
	void *h;

	if ((h = dlopen(path, RTLD_NOW | RTLD_LOCAL)) == NULL) {
		const char *why = dlerror();

		return lm_err(o->err, LM_EFAIL, "cannot load %s: %s", what, why ? why : path);
	}
	for (size_t i = 0; i < n; i++) {
		/* dlsym returns an object pointer; POSIX has it hold the function's address. */
		void *p = dlsym(h, names[i]);

		if (p == NULL) {
			dlclose(h);
			return lm_err(o->err, LM_EFAIL, "cannot load %s (%s): it has no %s", what, path, names[i]);
		}
		memcpy((char *)table + i * sizeof(dynlib_fn), &p, sizeof p);
	}
	return LM_OK;
}

int
dynlib_get(dynlib_once *o, const char *what, const char *override, const char *path, const char *const *names,
    void *table, size_t n, char *err)
{
	int rc;

	pthread_mutex_lock(&o->mu);
	if (o->state == 0)
		o->state = load(o, what, override != NULL && *override != '\0' ? override : path, names, table, n) == LM_OK
		    ? 1 : -1;
	rc = o->state == 1 ? LM_OK : lm_err(err, LM_EFAIL, "%s", o->err);
	pthread_mutex_unlock(&o->mu);
	return rc;
}
