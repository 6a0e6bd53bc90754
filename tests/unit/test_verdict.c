/* verdict: Ed25519 key files, DSSE envelopes over in-toto statements, and what a hostile
 * envelope gets: refused with a reason, never its records. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/verdict.h"
#include "unit.h"

static char dir[] = "/tmp/lm-unit-verdict.XXXXXX";
static const char D[] = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
static const char D2[] = "sha256:2222222222222222222222222222222222222222222222222222222222222222";

static cJSON *
key_of(const char *digest)
{
	cJSON *k = cJSON_CreateObject();

	cJSON_AddStringToObject(k, "imageDigest", digest);
	cJSON_AddNullToObject(k, "image");
	cJSON_AddStringToObject(k, "guestOS", "26.5");
	cJSON_AddStringToObject(k, "hostChip", "Apple M1 Ultra");
	return k;
}

static cJSON *
records(void)
{
	cJSON *a = cJSON_CreateArray(), *r = cJSON_CreateObject();

	cJSON_AddStringToObject(r, "kind", "golden");
	cJSON_AddStringToObject(r, "verdict", "pass");
	cJSON_AddStringToObject(r, "vm", "b1");
	cJSON_AddStringToObject(r, "time", "2026-01-31T23:59:59Z");
	cJSON_AddStringToObject(r, "payloadSha256", "ab");
	cJSON_AddNumberToObject(cJSON_AddObjectToObject(r, "validation"), "meanKld", 0.0001);
	cJSON_AddItemToArray(a, r);
	return a;
}

/* An envelope signed by k about digest (caller frees). */
static char *
signed_env(size_t *len, const verdict_key *k, const char *digest, const cJSON *recs)
{
	cJSON *key = key_of(digest), *st = verdict_statement("127.0.0.1:5000/org/shim", digest, "127.0.0.1:5000/org/shim:1",
	    key, recs);
	char *env = NULL, err[LM_ERRLEN];

	if (st == NULL || verdict_sign(&env, len, st, k, err) != LM_OK)
		printf("# sign: %s\n", err);
	cJSON_Delete(st);
	cJSON_Delete(key);
	return env;
}

/* The envelope env with its "payload" replaced by base64 of text. */
static char *
with_payload(const char *env, const char *b64)
{
	cJSON *e = cJSON_Parse(env);
	char *s;

	cJSON_ReplaceItemInObjectCaseSensitive(e, "payload", cJSON_CreateString(b64));
	s = cJSON_PrintUnformatted(e);
	cJSON_Delete(e);
	return s;
}

int
main(void)
{
	char err[LM_ERRLEN], id[VERDICT_KEYID_LEN + 1], id2[VERDICT_KEYID_LEN + 1], p[4096], p2[4096], pub[4096];
	char pub2[4096], list[8300], *env, *bad;
	verdict_key *k = NULL, *k2 = NULL, *kp = NULL;
	verdict_trust tr = {0}, tr2 = {0}, none = {0};
	verdict_opened o;
	lm_buf pae = {0};
	struct stat st;
	size_t len;
	cJSON *recs = records();

	if (mkdtemp(dir) == NULL || setenv("HOME", dir, 1) != 0) /* trusted-key files: StrictModes up to $HOME */
		return 1;

	/* DSSE's own example of the encoding. */
	verdict_pae(&pae, "http://example.com/HelloWorld", "hello world", 11);
	UNIT_OK(pae.len == strlen("DSSEv1 29 http://example.com/HelloWorld 11 hello world") &&
	    memcmp(pae.data, "DSSEv1 29 http://example.com/HelloWorld 11 hello world", pae.len) == 0,
	    "PAE is DSSE's: DSSEv1 29 http://example.com/HelloWorld 11 hello world");
	lm_buf_free(&pae);

	/* key generate */
	snprintf(p, sizeof p, "%s/ci", dir);
	snprintf(pub, sizeof pub, "%s/ci.pub", dir);
	UNIT_OK(verdict_key_generate(id, NULL, p, err) == LM_OK, "key generate writes a pair (%s)", err);
	UNIT_OK(strncmp(id, "sha256:", 7) == 0 && strlen(id) == VERDICT_KEYID_LEN, "... its id is sha256:<hex> (%s)", id);
	UNIT_OK(stat(p, &st) == 0 && (st.st_mode & 0777) == 0600, "... the private key is mode 0600");
	UNIT_OK(stat(pub, &st) == 0 && (st.st_mode & 0777) == 0644, "... the public key 0644, beside it");
	UNIT_OK(verdict_key_generate(id2, NULL, p, err) == LM_EINPUT, "a second generate to the same path is refused");
	UNIT_HAS(err, "never overwritten", "... saying a key is never overwritten");
	snprintf(p2, sizeof p2, "%s/link", dir);
	if (symlink("/tmp/lm-unit-verdict-nowhere", p2) != 0)
		return 1;
	UNIT_OK(verdict_key_generate(id2, NULL, p2, err) == LM_EINPUT, "a symlink in the key's place is refused");
	UNIT_OK(access("/tmp/lm-unit-verdict-nowhere", F_OK) != 0, "... and nothing is written through it");
	snprintf(p2, sizeof p2, "%s/other", dir);
	snprintf(pub2, sizeof pub2, "%s/other.pub", dir);
	UNIT_OK(verdict_key_generate(id2, NULL, p2, err) == LM_OK && strcmp(id, id2) != 0, "a second key has another id");
	UNIT_OK(verdict_key_load(&k, p, 1, err) == LM_OK && strcmp(verdict_key_id(k), id) == 0,
	    "the private key loads, the same id (%s)", err);
	UNIT_OK(verdict_key_load(&kp, pub, 0, err) == LM_OK && strcmp(verdict_key_id(kp), id) == 0,
	    "the public key loads, the same id");
	UNIT_OK(verdict_key_load(&k2, p2, 1, err) == LM_OK, "the second private key loads");
	verdict_key_free(kp);
	kp = NULL;
	UNIT_OK(verdict_key_load(&kp, pub, 1, err) == LM_EINPUT, "a public key file is no signing key");
	chmod(p2, 0644);
	UNIT_OK(verdict_key_load(&kp, p2, 1, err) == LM_EINPUT, "a private key others can read is refused");
	UNIT_HAS(err, "chmod 600", "... saying chmod 600");
	UNIT_OK(verdict_key_load(&kp, "/etc/hostname", 0, err) == LM_EINPUT, "a file that is no PEM key is refused");

	/* trust: comma-separated */
	snprintf(list, sizeof list, " %s , %s ", pub, pub2);
	UNIT_OK(verdict_trust_load(&tr, list, err) == LM_OK && tr.n == 2, "trusted-key takes a comma-separated list (%s)", err);
	UNIT_OK(verdict_trust_load(&tr2, pub2, err) == LM_OK && tr2.n == 1, "... or one file");
	snprintf(list, sizeof list, "%s,%s/missing.pub", pub, dir);
	UNIT_OK(verdict_trust_load(&none, list, err) == LM_EINPUT && none.n == 0, "a missing file in the list is refused");
	UNIT_HAS(err, "missing.pub", "... naming it");

	/* sign and open */
	env = signed_env(&len, k, D, recs);
	UNIT_OK(env != NULL && strstr(env, "\"payloadType\":\"application/vnd.in-toto+json\"") != NULL,
	    "an envelope is signed, payloadType in-toto");
	UNIT_OK(verdict_open(&o, env, len, D, &tr) == LM_OK && o.status == VERDICT_TRUSTED, "it opens with the key trusted");
	UNIT_OK(strcmp(o.signer, id) == 0, "... naming its signer");
	UNIT_OK(cJSON_GetArraySize(o.records) == 1 && cJSON_IsObject(o.key), "... and hands back the key and the records");
	UNIT_OK(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(o.records, 0),
	    "validation"), "meanKld") != NULL, "... the KLD figures in them");
	verdict_opened_clear(&o);
	UNIT_OK(verdict_open(&o, env, len, D, &tr2) == LM_EREFUSED && o.status == VERDICT_UNTRUSTED,
	    "another key trusted: untrusted");
	UNIT_HAS(o.why, verdict_key_fingerprint(k), "... naming the signer's key by its keyid, the fingerprint");
	UNIT_OK(o.records == NULL && o.key == NULL, "... and no records handed back");
	verdict_opened_clear(&o);
	UNIT_OK(verdict_open(&o, env, len, D, &none) == LM_EREFUSED && o.status == VERDICT_UNTRUSTED, "no key trusted: untrusted");
	verdict_opened_clear(&o);
	UNIT_OK(verdict_open(&o, env, len, D2, &tr) == LM_EREFUSED && o.status == VERDICT_BAD,
	    "a trusted statement about another image: refused");
	UNIT_HAS(o.why, "subject is not this image", "... the subject named");
	verdict_opened_clear(&o);
	/* A signature over other bytes: k's signature with k2's payload. */
	{
		size_t l2;
		cJSON *r2 = records();
		char *env2, *mixed;
		cJSON *e2;

		cJSON_ReplaceItemInObjectCaseSensitive(cJSON_GetArrayItem(r2, 0), "verdict", cJSON_CreateString("fail"));
		env2 = signed_env(&l2, k2, D, r2);
		e2 = cJSON_Parse(env2);
		mixed = with_payload(env, cJSON_GetObjectItemCaseSensitive(e2, "payload")->valuestring);
		UNIT_OK(verdict_open(&o, mixed, strlen(mixed), D, &tr) == LM_EREFUSED && o.status == VERDICT_BAD,
		    "k's signature over another payload: refused");
		UNIT_HAS(o.why, "signed over other bytes", "... a signature over other bytes");
		verdict_opened_clear(&o);
		free(mixed);
		cJSON_Delete(e2);
		free(env2);
		cJSON_Delete(r2);
	}
	/* unsigned */
	{
		cJSON *e = cJSON_Parse(env);
		char *s;

		cJSON_ReplaceItemInObjectCaseSensitive(e, "signatures", cJSON_CreateArray());
		s = cJSON_PrintUnformatted(e);
		UNIT_OK(verdict_open(&o, s, strlen(s), D, &tr) == LM_EREFUSED && o.status == VERDICT_UNSIGNED, "no signature: unsigned");
		verdict_opened_clear(&o);
		free(s);
		cJSON_Delete(e);
	}
	/* hostile shapes */
	bad = with_payload(env, "not*base64");
	UNIT_OK(verdict_open(&o, bad, strlen(bad), D, &tr) == LM_EREFUSED && o.status == VERDICT_BAD, "a payload not base64: refused");
	verdict_opened_clear(&o);
	free(bad);
	{
		size_t n = 100000;
		char *deep = malloc(2 * n + 1);

		memset(deep, '[', n);
		memset(deep + n, ']', n);
		deep[2 * n] = '\0';
		UNIT_OK(verdict_open(&o, deep, 2 * n, D, &tr) == LM_EREFUSED, "100000 levels of arrays: refused");
		UNIT_HAS(o.why, "deeper than", "... as too deep, before a parse");
		verdict_opened_clear(&o);
		UNIT_OK(verdict_open(&o, deep, VERDICT_ENVELOPE_MAX + 1, D, &tr) == LM_EREFUSED, "a huge envelope: refused");
		UNIT_HAS(o.why, "larger than", "... as larger than the bound");
		verdict_opened_clear(&o);
		free(deep);
	}
	UNIT_OK(verdict_open(&o, "{\"payloadType\":\"text/plain\",\"payload\":\"\"}", 41, D, &tr) == LM_EREFUSED &&
	    o.status == VERDICT_BAD, "another payloadType: refused");
	verdict_opened_clear(&o);
	/* a trusted signature over a statement whose records are not ledger records */
	{
		cJSON *r3 = cJSON_CreateArray();
		size_t l3;
		char *e3;

		cJSON_AddItemToArray(r3, cJSON_CreateString("x"));
		e3 = signed_env(&l3, k, D, r3);
		UNIT_OK(verdict_open(&o, e3, l3, D, &tr) == LM_EREFUSED && o.status == VERDICT_BAD,
		    "a signed statement whose record is not a ledger record: refused");
		UNIT_HAS(o.why, "not a ledger record", "... saying so");
		verdict_opened_clear(&o);
		free(e3);
		cJSON_Delete(r3);
	}
	free(env);
	verdict_trust_clear(&tr);
	verdict_trust_clear(&tr2);
	verdict_key_free(k);
	verdict_key_free(k2);
	verdict_key_free(kp);
	cJSON_Delete(recs);
	{
		char cmd[4200];

		snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			return 1;
	}
	UNIT_DONE();
}
