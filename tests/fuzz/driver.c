/* The regression driver: `regress NAME FILE...` runs harness NAME (tests/fuzz/fuzz_NAME.c) once
 * on each file, as libFuzzer would run one input, in this build's ASan and UBSan. It prints
 * nothing while all is well; the sanitizers report and abort on a fault, after "# NAME: FILE"
 * on stderr has named the input. Exit 2 on usage or an unreadable file. */
#include "fuzz.h"
#include "core/util.h"

static const struct {
	const char *name;
	int (*fn)(const uint8_t *, size_t);
} harnesses[] = {
#define X(name) {#name, fuzz_##name},
	FUZZ_HARNESSES
#undef X
};

int
main(int argc, char **argv)
{
	int (*fn)(const uint8_t *, size_t) = NULL;
	char err[LM_ERRLEN];

	for (size_t i = 0; argc > 1 && i < sizeof harnesses / sizeof harnesses[0]; i++)
		if (strcmp(argv[1], harnesses[i].name) == 0)
			fn = harnesses[i].fn;
	if (fn == NULL) {
		fprintf(stderr, "usage: regress NAME FILE...; NAME one of:");
		for (size_t i = 0; i < sizeof harnesses / sizeof harnesses[0]; i++)
			fprintf(stderr, " %s", harnesses[i].name);
		fprintf(stderr, "\n");
		return 2;
	}
	for (int i = 2; i < argc; i++) {
		char *data;
		size_t len;

		if (lm_read_file(&data, &len, argv[i], 64u << 20, err) != LM_OK) {
			fprintf(stderr, "regress: %s\n", err);
			return 2;
		}
		fprintf(stderr, "# %s: %s\n", argv[1], argv[i]);
		/* A copy of exactly len bytes, so ASan sees a read past the input as libFuzzer's does. */
		{
			uint8_t *copy = malloc(len ? len : 1);

			if (copy == NULL)
				return 2;
			memcpy(copy, data, len);
			free(data);
			fn(copy, len);
			free(copy);
		}
	}
	return 0;
}
