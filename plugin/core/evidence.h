/* evidence: the directory a benchmark leaves behind: named files written under DIR.tmp, a
 * SHA256SUMS over them (shasum -a 256 format), then DIR.tmp renamed to DIR, so a directory
 * that exists is complete. */
#ifndef LM_EVIDENCE_H
#define LM_EVIDENCE_H

#include <stddef.h>

typedef struct {
	const char *name;  /* a plain file name, no '/' */
	const char *data;
	size_t len;
} evidence_file;

/* Writes files and SHA256SUMS into dir, which must not exist yet (LM_EINPUT when it does). */
int evidence_write(const char *dir, const evidence_file *files, size_t n, char *err);

#endif
