/* archive_lazy: libarchive through dlopen on first use (core/archive_lazy.h). */
#define ARCHIVE_LAZY_IMPL
#include "core/archive_lazy.h"

#include <stdlib.h>

#include "core/dynlib.h"

#ifndef LM_ARCHIVE_LIB
#error "LM_ARCHIVE_LIB (the path of the libarchive to load) is set by the Makefile"
#endif

struct archive_lazy archive_lazy;

int
archive_lazy_load(char *err)
{
	static dynlib_once once = DYNLIB_ONCE_INIT;
#define ARCHIVE_LAZY_NAME(f) #f,
	static const char *const names[] = {ARCHIVE_LAZY_FNS(ARCHIVE_LAZY_NAME)};
#undef ARCHIVE_LAZY_NAME
	_Static_assert(sizeof archive_lazy == sizeof names / sizeof *names * sizeof(dynlib_fn), "one pointer a name");

	return dynlib_get(&once, "libarchive", getenv("LUME_METAL_LIBARCHIVE"), LM_ARCHIVE_LIB, names, &archive_lazy,
	    sizeof names / sizeof *names, err);
}
