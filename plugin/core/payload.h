/* payload: the one deterministic, checksummed tar.gz that goes into a guest, and its check.
 * Same inputs, same bytes: sorted entries, uid/gid 0, a fixed mtime, ustar (no pax extras),
 * gzip without a timestamp. The payload's SHA-256 is its identity everywhere. */
#ifndef LM_PAYLOAD_H
#define LM_PAYLOAD_H

#include <stdint.h>
#include <cjson/cJSON.h>

#define PAYLOAD_ENTRY_MAX (64u << 20) /* an entry over 64 MiB is refused */
#define PAYLOAD_MTIME 946684800       /* 2000-01-01T00:00:00Z, every entry */

typedef struct {
	const char *datadir;  /* source tree: guest-payload/, manifests/, build/<target>/ */
	const char *target;   /* "macos" or "linux-sim" */
	const char *profile;  /* profile id, or NULL for the workload's */
	const char *workload; /* workload id */
	const char *out;      /* output path; FILE.sha256 is written beside it */
} payload_build_opts;

typedef struct {
	char sha256[65];
	uint64_t size;      /* bytes of the tar.gz */
	int nfiles;         /* files listed in MANIFEST.json */
	int placeholders;   /* files marked "placeholder": deploy refuses such a payload */
	char *target, *profile, *workload, *label, *version;
	cJSON *manifest;    /* the parsed MANIFEST.json */
} payload_info;

/* Builds the payload. On success *out (caller frees with payload_info_free) describes it. */
int payload_build(payload_info **out, const payload_build_opts *o, char *err);

/* Checks path against sha_path (NULL: path + ".sha256") and every entry against
 * MANIFEST.json: bytes, sizes, modes, no missing or extra entry (a directory entry must hold
 * a file: "bi" is no directory of "bin/x"), no absolute path, "..", link, device, entry over
 * 64 MiB, or setuid, setgid, sticky or world-writable mode. Errors name the entry (and the
 * mode) and return LM_EINPUT. */
int payload_verify(payload_info **out, const char *path, const char *sha_path, char *err);

void payload_info_free(payload_info *p);

#endif
