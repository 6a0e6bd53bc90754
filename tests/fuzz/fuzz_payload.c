/* A payload for `verify` and deploy: payload_verify on the input as a .tar.gz with a matching
 * .sha256 beside it. An input that starts with gzip's magic is the .tar.gz itself; any other is
 * the tar, gzipped here, so the fuzzer mutates entries, not compressed bytes. */
#include <zlib.h>

#include "fuzz.h"
#include "core/payload.h"
#include "core/util.h"

/* d[0..n) gzipped into *out (caller frees). */
static size_t
gzip(uint8_t **out, const uint8_t *d, size_t n)
{
	z_stream z = {0};
	size_t cap = compressBound((uLong)n) + 64;

	if ((*out = malloc(cap)) == NULL || deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		abort();
	z.next_in = (Bytef *)(uintptr_t)d;
	z.avail_in = (uInt)n;
	z.next_out = *out;
	z.avail_out = (uInt)cap;
	if (deflate(&z, Z_FINISH) != Z_STREAM_END)
		abort();
	deflateEnd(&z);
	return cap - z.avail_out;
}

FUZZ_TARGET(payload)
{
	char path[4200], shapath[4300], line[128], sha[65];
	payload_info *info = NULL;
	char err[LM_ERRLEN];
	uint8_t *gz = NULL;
	size_t n = size;
	const uint8_t *bytes = data;

	if (size < 2 || data[0] != 0x1f || data[1] != 0x8b) {
		n = gzip(&gz, data, size);
		bytes = gz;
	}
	snprintf(path, sizeof path, "%s", fuzz_path("payload.tar.gz"));
	snprintf(shapath, sizeof shapath, "%s.sha256", path);
	fuzz_write(path, bytes, n);
	lm_sha256_hex(sha, bytes, n);
	snprintf(line, sizeof line, "%s  payload.tar.gz\n", sha);
	fuzz_write(shapath, line, strlen(line));
	if (fuzz_note("payload_verify", payload_verify(&info, path, NULL, err), err) == LM_OK)
		payload_info_free(info);
	free(gz);
	return 0;
}
