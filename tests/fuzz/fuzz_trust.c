/* A trusted-key file: verdict_trust_load on the input written to a file (0600, in a folder that
 * is $HOME, so StrictModes passes and the parser is what is reached). Trusted: 1 to
 * VERDICT_TRUST_MAX distinct keys, each id sha256:<64 hex>; refused: no key kept, and the
 * message names the file. */
#include <stdlib.h>
#include <string.h>

#include "core/verdict.h"
#include "fuzz.h"

FUZZ_TARGET(trust)
{
	const char *path = fuzz_path("trust.pub");
	verdict_trust t;
	char err[LM_ERRLEN];

	if (getenv("HOME") == NULL || strcmp(getenv("HOME"), fuzz_dir()) != 0)
		setenv("HOME", fuzz_dir(), 1);
	fuzz_write(path, data, size);
	if (fuzz_note("verdict_trust_load", verdict_trust_load(&t, path, err), err) == LM_OK) {
		if (t.n < 1 || t.n > VERDICT_TRUST_MAX)
			__builtin_trap();
		for (size_t i = 0; i < t.n; i++) {
			const char *id = verdict_key_id(t.keys[i]);

			if (strlen(id) != VERDICT_KEYID_LEN || strncmp(id, "sha256:", 7) != 0 || !lm_is_sha256(id + 7))
				__builtin_trap();
			for (size_t j = 0; j < i; j++)
				if (strcmp(id, verdict_key_id(t.keys[j])) == 0)
					__builtin_trap(); /* a key counts once */
		}
		verdict_trust_clear(&t);
	} else if (t.n != 0 || strncmp(err, path, strlen(path)) != 0)
		__builtin_trap(); /* a refusal keeps nothing and names the file */
	return 0;
}
