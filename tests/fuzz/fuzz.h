/* What the fuzz harnesses share (tests/fuzz/README.md). Each harness is one FUZZ_TARGET(name):
 * LLVMFuzzerTestOneInput in its libFuzzer build (build/fuzz/fuzz-NAME), fuzz_NAME in the
 * regression build (build/fuzz/regress, tests/fuzz/driver.c), which runs every harness over its
 * corpus under ASan and UBSan in `make test`.
 *
 * An input that holds several parts (a schema and a document, llama-bench's JSON and its
 * stderr, one answer after another) separates them with FUZZ_RS, ASCII's record separator. */
#ifndef LM_FUZZ_H
#define LM_FUZZ_H

#include <dirent.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FUZZ_RS 0x1e

/* The harnesses, for the driver: X(name) for each tests/fuzz/fuzz_NAME.c. */
#define FUZZ_HARNESSES X(lume) X(hosts) X(manifest) X(schema) X(bench) X(ledger) X(payload) X(deploy) X(image) X(identity) \
	X(config) X(verdict) X(hostfile) X(trust)

#ifdef FUZZ_DRIVER
#define FUZZ_TARGET(name) int fuzz_##name(const uint8_t *data, size_t size)
#define X(name) FUZZ_TARGET(name);
FUZZ_HARNESSES
#undef X
#else
#define FUZZ_TARGET(name) int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
#endif

/* A NUL-terminated copy of d[0..n) (caller frees); aborts when out of memory. */
static inline char *
fuzz_str(const uint8_t *d, size_t n)
{
	char *s = malloc(n + 1);

	if (s == NULL)
		abort();
	if (n)
		memcpy(s, d, n);
	s[n] = '\0';
	return s;
}

/* Part i of d (parts separated by FUZZ_RS): *part and its length, or NULL when there is none. */
static inline const uint8_t *
fuzz_part(const uint8_t *d, size_t n, unsigned i, size_t *len)
{
	const uint8_t *end, *p, *rs;

	if (d == NULL)
		d = (const uint8_t *)"", n = 0;
	end = d + n;
	p = d;

	for (; i > 0; i--) {
		if ((rs = memchr(p, FUZZ_RS, (size_t)(end - p))) == NULL)
			return NULL;
		p = rs + 1;
	}
	rs = memchr(p, FUZZ_RS, (size_t)(end - p));
	*len = (size_t)((rs ? rs : end) - p);
	return p;
}

/* Removes path and, for a directory, everything under it. */
static inline void
fuzz_rmtree(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	char sub[4096];

	if (d == NULL) {
		unlink(path);
		return;
	}
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
		    snprintf(sub, sizeof sub, "%s/%s", path, e->d_name) < (int)sizeof sub)
			fuzz_rmtree(sub);
	closedir(d);
	rmdir(path);
}

/* This harness's scratch directory, made on first use under $TMPDIR and removed at exit. One
 * per harness (each file has its own copy of these functions). */
static char fuzz_scratch[4096];

static inline void
fuzz_scratch_rm(void)
{
	fuzz_rmtree(fuzz_scratch);
}

static inline const char *
fuzz_dir(void)
{
	if (fuzz_scratch[0] == '\0') {
		const char *t = getenv("TMPDIR");

		snprintf(fuzz_scratch, sizeof fuzz_scratch, "%s/lm-fuzz.XXXXXX", t && *t ? t : "/tmp");
		if (mkdtemp(fuzz_scratch) == NULL) {
			perror(fuzz_scratch);
			abort();
		}
		atexit(fuzz_scratch_rm);
	}
	return fuzz_scratch;
}

/* FUZZ_VERBOSE set: the harnesses say on stderr what each call returned, which is how to read
 * what an input does (FUZZ_VERBOSE=1 build/fuzz/regress NAME FILE). */
static inline int
fuzz_verbose(void)
{
	static int verbose = -1;

	if (verbose < 0)
		verbose = getenv("FUZZ_VERBOSE") != NULL;
	return verbose;
}

/* Says what returned rc (and err when rc is not 0) when verbose. Returns rc. */
static inline int
fuzz_note(const char *what, int rc, const char *err)
{
	if (fuzz_verbose())
		fprintf(stderr, "%s: %d%s%s\n", what, rc, rc != 0 && err ? ": " : "", rc != 0 && err ? err : "");
	return rc;
}

/* dir/name (static storage, overwritten by the next call). */
static inline const char *
fuzz_path(const char *name)
{
	static char p[4200];

	snprintf(p, sizeof p, "%s/%s", fuzz_dir(), name);
	return p;
}

/* Writes d[0..n) to path, replacing it; aborts on failure (the harness, not the code under test). */
static inline void
fuzz_write(const char *path, const void *d, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	if (fd < 0 || (n > 0 && write(fd, d, n) != (ssize_t)n) || close(fd) != 0) {
		perror(path);
		abort();
	}
}

#endif
