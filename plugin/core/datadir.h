/* datadir: where lume-metal's data is: guest-payload/ (the guest scripts), manifests/ (profiles,
 * workloads, schema/) and build/macos/ (the prebuilt shim and probe), the layout payload.c and
 * manifest.c read. Looked for in this order:
 *   1. $LUME_METAL_DATADIR, when set and not empty: always used, whatever it holds;
 *   2. the installed PREFIX/share/lume-metal (LM_PKGDATADIR, compiled in from the Makefile);
 *   3. the source tree the binary was built in (LM_DATADIR, compiled in).
 * 2 and 3 count only when they hold the data (datadir_required). No printing, no exit. */
#ifndef LM_DATADIR_H
#define LM_DATADIR_H

#include <stddef.h>

/* The files a folder must hold to count as a data folder (NULL-terminated, relative). The
 * shim and probe are not among them: a linux-sim build does not need them, and a macos build
 * without them fails naming the missing file. */
extern const char *const datadir_required[];

typedef struct {
	const char *path;   /* the folder (static, or the environment's string) */
	const char *origin; /* "$LUME_METAL_DATADIR", "installed" or "source tree" */
	const char *lacks;  /* NULL when it holds the data, else the first required file it lacks */
} datadir_candidate;

/* Fills c with the candidates in search order ($LUME_METAL_DATADIR only when set and not
 * empty) and returns how many (2 or 3). */
size_t datadir_candidates(datadir_candidate c[3]);

/* The data folder: $LUME_METAL_DATADIR when set, else the first candidate that holds the data.
 * When the one returned lacks something (or none holds the data: then the installed folder is
 * returned), note (LM_ERRLEN bytes) says what is missing and every folder looked in; otherwise
 * note is "". The result is static (or the environment's); never NULL. */
const char *datadir_path(char *note);

/* The SHA-256 (hex) of DIR/REL into out, and DIR/REL into path (pathlen bytes). LM_EINPUT
 * when it is absent or unreadable, with err naming the path. */
int datadir_sha256(char out[65], char *path, size_t pathlen, const char *dir, const char *rel, char *err);

#endif
