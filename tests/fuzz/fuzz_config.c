/* The config file: config_load on the input written to a file, then every key read back. */
#include "core/config.h"
#include "fuzz.h"
#include "core/util.h"

FUZZ_TARGET(config)
{
	const char *path = fuzz_path("config");
	config *c = NULL;
	char err[LM_ERRLEN];

	fuzz_write(path, data, size);
	if (fuzz_note("config_load", config_load(&c, path, err), err) == LM_OK) {
		for (size_t k = 0; config_keys[k]; k++) {
			int line = 0;
			const char *v = config_get(c, config_keys[k], &line);

			if (v != NULL && (*v == '\0' || line < 1))
				__builtin_trap(); /* a value is never empty and always has its line */
		}
		config_free(c);
	}
	return 0;
}
