/* test_util: lm_wipe, the one way secrets are wiped (explicit_bzero, memset_s on macOS, else a
 * volatile memset); the cJSON getters every module reads JSON with. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"
#include "core/util.h"

#include <cjson/cJSON.h>

/* Whether n bytes at p are all zero. */
static int
zero(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != 0)
			return 0;
	return 1;
}

int
main(void)
{
	char pw[64];
	unsigned char *heap = malloc(4097);
	size_t lens[] = {1, 7, 63, 4095};

	memset(pw, 'x', sizeof pw);
	lm_wipe(pw, sizeof pw);
	UNIT_OK(zero((unsigned char *)pw, sizeof pw), "lm_wipe zeroes a password buffer on the stack");

	for (size_t k = 0; heap != NULL && k < sizeof lens / sizeof *lens; k++) {
		size_t n = lens[k];

		memset(heap, 0xa5, 4097);
		lm_wipe(heap + 1, n); /* an unaligned start */
		UNIT_OK(zero(heap + 1, n) && heap[0] == 0xa5 && heap[n + 1] == 0xa5,
		    "lm_wipe zeroes %zu bytes at an unaligned start, and nothing around them", n);
	}
	free(heap);

	memset(pw, 'y', sizeof pw);
	lm_wipe(pw, 0);
	lm_wipe(NULL, 16);
	UNIT_OK(pw[0] == 'y', "lm_wipe of 0 bytes, or of NULL, changes nothing");

	{
		cJSON *o = cJSON_Parse("{\"s\":\"x\",\"n\":2.5,\"o\":{},\"z\":null,\"a\":[1],\"S\":\"y\"}");
		const char *s = lm_jstr(o, "s");

		UNIT_OK(o != NULL && s != NULL && strcmp(s, "x") == 0, "lm_jstr: a string member's text");
		UNIT_OK(lm_jstr(o, "n") == NULL && lm_jstr(o, "missing") == NULL && lm_jstr(NULL, "s") == NULL,
		    "lm_jstr: NULL for a number, an absent member, a NULL object");
		UNIT_OK(lm_jstr(o, "S") != NULL && strcmp(lm_jstr(o, "S"), "y") == 0, "lm_jstr: keys compare case-sensitively");
		UNIT_OK(strcmp(lm_jstr_or(o, "z", ""), "") == 0 && strcmp(lm_jstr_or(o, "s", "d"), "x") == 0,
		    "lm_jstr_or: the default for a null, the text for a string");
		UNIT_OK(lm_jnum(o, "n") == 2.5 && isnan(lm_jnum(o, "s")) && isnan(lm_jnum(NULL, "n")),
		    "lm_jnum: a number's value, NAN otherwise");
		UNIT_OK(lm_jobj(o, "o") != NULL && lm_jobj(o, "a") == NULL && lm_jobj(o, "s") == NULL,
		    "lm_jobj: an object member, NULL for an array or a string");
		cJSON_Delete(o);
		o = cJSON_CreateObject();
		lm_jadd_str(o, "s", "x");
		lm_jadd_str(o, "n", NULL);
		lm_jadd_num(o, "f", 1.5);
		lm_jadd_num(o, "nan", NAN);
		lm_jadd_num(o, "inf", INFINITY);
		s = cJSON_PrintUnformatted(o);
		UNIT_OK(s && strcmp(s, "{\"s\":\"x\",\"n\":null,\"f\":1.5,\"nan\":null,\"inf\":null}") == 0,
		    "lm_jadd_str, lm_jadd_num: null for NULL and for what is not finite");
		free((char *)s);
		cJSON_Delete(o);
	}
	{
		char d[72];

		lm_digest(d, "", 0);
		UNIT_OK(strcmp(d, "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855") == 0,
		    "lm_digest: sha256: and the SHA-256 of the bytes");
		UNIT_OK(lm_is_digest(d) && !lm_is_digest(d + 7) && !lm_is_digest(NULL) && !lm_is_digest("sha256:"),
		    "lm_is_digest: a digest; not bare hex, NULL or the prefix alone");
		d[70] = 'A';
		UNIT_OK(!lm_is_digest(d), "lm_is_digest: not upper-case hex");
	}
	UNIT_DONE();
}
