/* A verdict's DSSE envelope, as a registry hands it back: verdict_open against a trusted key
 * (the harness's own, below: the corpus's signed seeds are signed with it, so the statement
 * checks are reached), for the image digest sha256:11...11. A trusted answer must hand back
 * only records ledger_record_problem accepts; anything else must be refused with a reason. */
#include "core/ledger.h"
#include "core/verdict.h"
#include "fuzz.h"

/* A test-only Ed25519 key: it signs the seeds of tests/fuzz/verdict/corpus/ and nothing else. */
static const char key_pem[] = "-----BEGIN PRIVATE KEY-----\n"
    "MC4CAQAwBQYDK2VwBCIEIE/SSQX6noTdIKVTwm5/9XAKTfpmNqxsOoaZpfA8C8Yx\n-----END PRIVATE KEY-----\n";
static const char digest[] = "sha256:1111111111111111111111111111111111111111111111111111111111111111";

FUZZ_TARGET(verdict)
{
	static verdict_trust trust;
	static int loaded;
	verdict_opened o;
	const cJSON *r;
	char err[LM_ERRLEN], why[160];
	int rc;

	if (!loaded) {
		const char *path = fuzz_path("verdict-key.pem");
		verdict_key *k = NULL;

		/* Trusted as loaded: a trusted-key file holds public keys only (verdict_trust_load). */
		fuzz_write(path, (const uint8_t *)key_pem, sizeof key_pem - 1);
		if (verdict_key_load(&k, path, 1, err) != LM_OK)
			__builtin_trap();
		trust.keys[0] = k;
		trust.n = 1;
		loaded = 1;
	}
	(void)verdict_too_deep((const char *)data, size, VERDICT_DEPTH_MAX);
	rc = verdict_open(&o, data, size, digest, &trust);
	fuzz_note("verdict_open", rc, o.why);
	if (rc == LM_OK) {
		if (o.status != VERDICT_TRUSTED || !cJSON_IsObject(o.key) || !cJSON_IsArray(o.records))
			__builtin_trap();
		cJSON_ArrayForEach(r, o.records)
			if (ledger_record_problem(r, why) != NULL)
				__builtin_trap(); /* a trusted verdict's records are ledger records */
	} else if (o.status == VERDICT_TRUSTED || o.why[0] == '\0' || o.key != NULL || o.records != NULL)
		__builtin_trap(); /* a refusal says why and hands nothing back */
	verdict_opened_clear(&o);
	return 0;
}
