/* archive_lazy: libarchive, loaded (core/dynlib.h) the first time a payload is written or read
 * rather than at every start of the tool: its libraries (liblzma, libzstd, libxml2 and ICU, and
 * more) took 5 ms of CPU from each start here, and status, rollback, ledger, report and the rest
 * never read a payload. payload.c, its one user, includes this after <archive.h> and
 * <archive_entry.h>: the functions it calls become calls through pointers of their declared
 * types (__typeof__), still checked against libarchive's headers. The library is the one the tool
 * was built against (LM_ARCHIVE_LIB, pkg-config's libdir), or $LUME_METAL_LIBARCHIVE when set and
 * not empty. */
#ifndef LM_ARCHIVE_LAZY_H
#define LM_ARCHIVE_LAZY_H

#include <archive.h>
#include <archive_entry.h>

#define ARCHIVE_LAZY_FNS(X) \
	X(archive_entry_filetype) X(archive_entry_free) \
	X(archive_entry_hardlink) X(archive_entry_mode) \
	X(archive_entry_new) X(archive_entry_pathname) \
	X(archive_entry_set_filetype) X(archive_entry_set_gid) \
	X(archive_entry_set_mtime) X(archive_entry_set_pathname) \
	X(archive_entry_set_perm) X(archive_entry_set_size) \
	X(archive_entry_set_uid) X(archive_entry_size) \
	X(archive_entry_symlink) X(archive_error_string) \
	X(archive_filter_code) X(archive_read_data) \
	X(archive_read_free) X(archive_read_new) \
	X(archive_read_next_header) X(archive_read_open_filename) \
	X(archive_read_support_filter_gzip) X(archive_read_support_format_tar) \
	X(archive_write_add_filter_gzip) X(archive_write_close) \
	X(archive_write_data) X(archive_write_free) \
	X(archive_write_header) X(archive_write_new) \
	X(archive_write_open_fd) X(archive_write_set_filter_option) \
	X(archive_write_set_format_ustar)

/* The loaded library's functions (all NULL until archive_lazy_load succeeds). */
struct archive_lazy {
#define ARCHIVE_LAZY_PTR(f) __typeof__(f) *f;
	ARCHIVE_LAZY_FNS(ARCHIVE_LAZY_PTR)
#undef ARCHIVE_LAZY_PTR
};
extern struct archive_lazy archive_lazy;

/* Loads libarchive once (later calls return the first result): LM_OK, or LM_EFAIL with err (may
 * be NULL) naming the library and why (core/dynlib.h). Thread-safe. */
int archive_lazy_load(char *err);

#ifndef ARCHIVE_LAZY_IMPL
#define archive_entry_filetype (*archive_lazy.archive_entry_filetype)
#define archive_entry_free (*archive_lazy.archive_entry_free)
#define archive_entry_hardlink (*archive_lazy.archive_entry_hardlink)
#define archive_entry_mode (*archive_lazy.archive_entry_mode)
#define archive_entry_new (*archive_lazy.archive_entry_new)
#define archive_entry_pathname (*archive_lazy.archive_entry_pathname)
#define archive_entry_set_filetype (*archive_lazy.archive_entry_set_filetype)
#define archive_entry_set_gid (*archive_lazy.archive_entry_set_gid)
#define archive_entry_set_mtime (*archive_lazy.archive_entry_set_mtime)
#define archive_entry_set_pathname (*archive_lazy.archive_entry_set_pathname)
#define archive_entry_set_perm (*archive_lazy.archive_entry_set_perm)
#define archive_entry_set_size (*archive_lazy.archive_entry_set_size)
#define archive_entry_set_uid (*archive_lazy.archive_entry_set_uid)
#define archive_entry_size (*archive_lazy.archive_entry_size)
#define archive_entry_symlink (*archive_lazy.archive_entry_symlink)
#define archive_error_string (*archive_lazy.archive_error_string)
#define archive_filter_code (*archive_lazy.archive_filter_code)
#define archive_read_data (*archive_lazy.archive_read_data)
#define archive_read_free (*archive_lazy.archive_read_free)
#define archive_read_new (*archive_lazy.archive_read_new)
#define archive_read_next_header (*archive_lazy.archive_read_next_header)
#define archive_read_open_filename (*archive_lazy.archive_read_open_filename)
#define archive_read_support_filter_gzip (*archive_lazy.archive_read_support_filter_gzip)
#define archive_read_support_format_tar (*archive_lazy.archive_read_support_format_tar)
#define archive_write_add_filter_gzip (*archive_lazy.archive_write_add_filter_gzip)
#define archive_write_close (*archive_lazy.archive_write_close)
#define archive_write_data (*archive_lazy.archive_write_data)
#define archive_write_free (*archive_lazy.archive_write_free)
#define archive_write_header (*archive_lazy.archive_write_header)
#define archive_write_new (*archive_lazy.archive_write_new)
#define archive_write_open_fd (*archive_lazy.archive_write_open_fd)
#define archive_write_set_filter_option (*archive_lazy.archive_write_set_filter_option)
#define archive_write_set_format_ustar (*archive_lazy.archive_write_set_format_ustar)
#endif

#endif
