/* A verdict as a registry hands it back, read both ways: verdict_open (a DSSE envelope) and
 * verdict_open_bundle (a Sigstore bundle holding one), against a trusted key (the harness's own,
 * below: the corpus's signed seeds are signed with it, so the statement checks are reached), for
 * the image digest sha256:11...11. A trusted answer must hand back only records
 * ledger_record_problem accepts; anything else must be refused with a reason. */
#include "core/ledger.h"
#include "core/verdict.h"
#include "fuzz.h"

/* A test-only Ed25519 key: it signs the seeds of tests/fuzz/verdict/corpus/ and nothing else. */
static const char key_pem[] = "-----BEGIN PRIVATE KEY-----\n"
    "MC4CAQAwBQYDK2VwBCIEIE/SSQX6noTdIKVTwm5/9XAKTfpmNqxsOoaZpfA8C8Yx\n-----END PRIVATE KEY-----\n";
static const char digest[] = "sha256:1111111111111111111111111111111111111111111111111111111111111111";

/* What either reader must answer: records ledger_record_problem accepts, or a refusal with why. */
static void
check(const char *what, int rc, verdict_opened *o)
{
	const cJSON *r;
	char why[160];

	fuzz_note(what, rc, o->why);
	if (rc == LM_OK) {
		if (o->status != VERDICT_TRUSTED || !cJSON_IsObject(o->key) || !cJSON_IsArray(o->records))
			__builtin_trap();
		cJSON_ArrayForEach(r, o->records)
			if (ledger_record_problem(r, why) != NULL)
				__builtin_trap(); /* a trusted verdict's records are ledger records */
	} else if (o->status == VERDICT_TRUSTED || o->why[0] == '\0' || o->key != NULL || o->records != NULL)
		__builtin_trap(); /* a refusal says why and hands nothing back */
	verdict_opened_clear(o);
}

FUZZ_TARGET(verdict)
{
	static verdict_trust trust;
	static int loaded;
	verdict_opened o;
	char err[LM_ERRLEN];

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
	check("verdict_open", verdict_open(&o, data, size, digest, &trust), &o);
	check("verdict_open_bundle", verdict_open_bundle(&o, data, size, digest, &trust), &o);
	return 0;
}
