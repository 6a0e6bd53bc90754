/* image: a Lume VM's image identity on the Mac that runs it. Lume 0.5.3 writes the manifest
 * digest it pulled to <location path>/<vm>/.manifest-digest (the only place on disk that names
 * a VM's image; `lume clone` copies it, `lume create` writes none); `lume config storage list`
 * names the locations. Everything read from the Mac is untrusted: bounded and checked here. */
#ifndef LM_IMAGE_H
#define LM_IMAGE_H

#include <stddef.h>

#define IMAGE_NAME_MAX 64       /* a location or VM name, without the NUL */
#define IMAGE_PATH_MAX 1024     /* a location path, without the NUL */
#define IMAGE_LOCATIONS_MAX 32  /* locations kept from one listing */
#define IMAGE_STORAGE_MAX 65536 /* bytes of `lume config storage list` output read */
#define IMAGE_DIGEST_LEN 71     /* "sha256:" + 64 hex */

typedef struct {
	char name[IMAGE_NAME_MAX + 1];
	char path[IMAGE_PATH_MAX + 1]; /* as Lume prints it: absolute, or "~" / "~/..." */
	int is_default;
} image_location;

/* Parses the output of `lume config storage list`:
 *   VM Storage Locations:
 *     - home: ~/.lume (default)
 *     - fast: /Volumes/ssd/lume
 * Lume's log lines ("[...] INFO: ...") and blank lines around it are skipped. A name is Lume's
 * location rule ([A-Za-z0-9_-]+, at most IMAGE_NAME_MAX); a path is absolute or starts with
 * "~/" (or is "~"), at most IMAGE_PATH_MAX, with no control character and no ".." component.
 * Refused (LM_EINPUT, err says which line): no header, a malformed entry, a duplicate name,
 * two defaults, more than max (at most IMAGE_LOCATIONS_MAX) entries, text longer than
 * IMAGE_STORAGE_MAX or holding a NUL. "No VM storage locations configured" is LM_EFAIL.
 * Fills out[0..*n). */
int image_storage_parse(image_location *out, size_t max, size_t *n, const char *text, size_t len,
    char *err);

/* The location named name, or the default one when name is NULL; NULL when there is none. */
const image_location *image_storage_find(const image_location *locs, size_t n, const char *name);

/* True when vm is a VM name this tool accepts: [A-Za-z0-9_][A-Za-z0-9._-]*, at most
 * IMAGE_NAME_MAX bytes (so never "", ".", ".." or anything with a slash). */
int image_vm_name_ok(const char *vm);

/* Writes location_path + "/" + vm + "/.manifest-digest" into out (outlen bytes), with a
 * leading "~" of location_path expanded against home (absolute, required only then). Refuses
 * (LM_EINPUT) a bad VM name, "~user", a relative or ".."-holding path, and truncation. */
int image_digest_path(char *out, size_t outlen, const char *location_path, const char *home,
    const char *vm, char *err);

/* Accepts exactly "sha256:" + 64 lowercase hex digits, optionally followed by one "\n" (len
 * bytes of text, which may hold NULs); copies the digest without the newline into out.
 * Anything else is LM_EINPUT. */
int image_digest_parse(char out[IMAGE_DIGEST_LEN + 1], const char *text, size_t len, char *err);

/* On this machine: runs `lume config storage list` (lume is a path or a name on $PATH, run by
 * lm_run), takes the location named location (the default one when NULL), and reads that VM's
 * .manifest-digest (O_NOFOLLOW, a regular file, at most 128 bytes) into out. $HOME expands "~".
 * Errors name the VM: not in that location, no digest (a VM made by `lume create`), a malformed
 * digest. */
int image_digest_local(char out[IMAGE_DIGEST_LEN + 1], const char *lume, const char *vm,
    const char *location, char *err);

/* image_digest_local in two steps, so a caller of many VMs runs lume once: the locations of
 * `lume config storage list` on this machine into out[0..*n) (as image_storage_parse), then
 * one VM's digest from them (errors as image_digest_local's). */
int image_storage_local(image_location *out, size_t max, size_t *n, const char *lume, char *err);
int image_digest_read(char out[IMAGE_DIGEST_LEN + 1], const image_location *locs, size_t n, const char *vm,
    const char *location, char *err);

#endif
