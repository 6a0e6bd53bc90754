/* verdict: the forms other tools read. A key's three ids, against what ssh-keygen -l and openssl
 * printed for the same keys (known answers, computed by those tools, not by this code); ECDSA
 * P-256 keys, as cosign and openssl make them, signing and trusted; the envelope inside a
 * Sigstore bundle v0.3 and what a hostile bundle gets; an envelope of the old form (keyid
 * lume-metal's "sha256:<hex>", or none) still opening. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/verdict.h"
#include "unit.h"

static char dir[] = "/tmp/lm-unit-verdict-forms.XXXXXX";
static const char D[] = "sha256:1111111111111111111111111111111111111111111111111111111111111111";

/* The fuzz harness's Ed25519 test key, and a P-256 key made by `openssl genpkey -algorithm EC`. */
static const char ed_pem[] = "-----BEGIN PRIVATE KEY-----\n"
    "MC4CAQAwBQYDK2VwBCIEIE/SSQX6noTdIKVTwm5/9XAKTfpmNqxsOoaZpfA8C8Yx\n-----END PRIVATE KEY-----\n";
static const char ec_pem[] = "-----BEGIN PRIVATE KEY-----\n"
    "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgKEtHMCuOLGPkUVY9\n"
    "7WAT1f/Zh6c1O2hE/+m5GbogNtqhRANCAATZhusr0/hQgyKfNpr8A6sKfXbHYgHj\n"
    "n8jhcT9NemdU1mQX6nrLs6RPZSKAJmBe0Q0KCZslMHGsx6nQ/u06wEUn\n-----END PRIVATE KEY-----\n";
/* The same P-256 public key with its point compressed (openssl ec -conv_form compressed). */
static const char ec_compressed_pub[] = "-----BEGIN PUBLIC KEY-----\n"
    "MDkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDIgAD2YbrK9P4UIMinzaa/AOrCn12x2IB\n45/I4XE/TXpnVNY=\n-----END PUBLIC KEY-----\n";
static const char p384_pub[] = "-----BEGIN PUBLIC KEY-----\n"
    "MHYwEAYHKoZIzj0CAQYFK4EEACIDYgAEBaLv/wXYmDf7LsxJeBbDLLfOWzm6cfIs\n"
    "mY3rWfeIF8QKeI4KNGC204PXcFYfToYEro5xU2hQIaOMx4aVrUpAnJBHWIQKQC6V\n"
    "ZfIg3C0Z6G4c93j+QgfCc+4AguJWNW6h\n-----END PUBLIC KEY-----\n";
static const char rsa_pub[] = "-----BEGIN PUBLIC KEY-----\n"
    "MIGfMA0GCSqGSIb3DQEBAQUAA4GNADCBiQKBgQDC6+8CrtFn1vLVUgFORNrB4nob\n"
    "0DEh7Qcp2O3jlyWROPLVFp8t4vRllPMuFvujC4iFdqW2uUVhQkOqyUlrBqzl3KZF\n"
    "UNJO27ro9qVh+gvlDmKYdLd5G1L6QRV9Y+vE6dcrcFNyQ5lsJRGMuVPnZL6RDFor\n"
    "9sxHGm9nRaRCRx50IwIDAQAB\n-----END PUBLIC KEY-----\n";

/* Writes text to dir/name with mode; its path into out. */
static const char *
put(char *out, size_t len, const char *name, const char *text, mode_t mode)
{
	FILE *f;

	snprintf(out, len, "%s/%s", dir, name);
	if ((f = fopen(out, "w")) == NULL || fputs(text, f) < 0 || fclose(f) != 0 || chmod(out, mode) != 0)
		printf("# cannot write %s\n", out);
	return out;
}

/* A statement about D holding one golden record (caller frees). */
static cJSON *
statement(void)
{
	cJSON *k = cJSON_CreateObject(), *recs = cJSON_CreateArray(), *r = cJSON_CreateObject(), *st;

	cJSON_AddStringToObject(k, "imageDigest", D);
	cJSON_AddNullToObject(k, "image");
	cJSON_AddStringToObject(r, "kind", "golden");
	cJSON_AddStringToObject(r, "verdict", "pass");
	cJSON_AddStringToObject(r, "vm", "b1");
	cJSON_AddStringToObject(r, "time", "2026-01-31T23:59:59Z");
	cJSON_AddItemToArray(recs, r);
	st = verdict_statement("127.0.0.1:5000/org/shim", D, "127.0.0.1:5000/org/shim:1", k, recs);
	cJSON_Delete(k);
	cJSON_Delete(recs);
	return st;
}

/* doc (a bundle or an envelope) after edit, printed (caller frees). */
static char *
edited(const char *doc, void (*edit)(cJSON *))
{
	cJSON *j = cJSON_Parse(doc);
	char *s;

	edit(j);
	s = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	return s;
}

static cJSON *
env_of(cJSON *b)
{
	return cJSON_GetObjectItemCaseSensitive(b, "dsseEnvelope");
}

static cJSON *
sig0(cJSON *env)
{
	return cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(env, "signatures"), 0);
}

static void
mt_v02(cJSON *b)
{
	cJSON_ReplaceItemInObjectCaseSensitive(b, "mediaType",
	    cJSON_CreateString("application/vnd.dev.sigstore.bundle+json;version=0.2"));
}

static void
message_signature(cJSON *b)
{
	cJSON_DeleteItemFromObjectCaseSensitive(b, "dsseEnvelope");
	cJSON_AddObjectToObject(b, "messageSignature");
}

static void
two_sigs(cJSON *b)
{
	cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(env_of(b), "signatures"), cJSON_Duplicate(sig0(env_of(b)), 1));
}

static void
no_sigs(cJSON *b)
{
	cJSON_ReplaceItemInObjectCaseSensitive(env_of(b), "signatures", cJSON_CreateArray());
}

static void
no_material(cJSON *b)
{
	cJSON_DeleteItemFromObjectCaseSensitive(b, "verificationMaterial");
}

static const char *old_id; /* the keyid old_keyid puts in */

static void
old_keyid(cJSON *env)
{
	cJSON_ReplaceItemInObjectCaseSensitive(sig0(env), "keyid", cJSON_CreateString(old_id));
}

static void
no_keyid(cJSON *env)
{
	cJSON_DeleteItemFromObjectCaseSensitive(sig0(env), "keyid");
}

static void
other_sig(cJSON *env)
{
	/* a well-formed signature of other bytes: 64 zero bytes */
	cJSON_ReplaceItemInObjectCaseSensitive(sig0(env), "sig", cJSON_CreateString("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	    "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=="));
}

int
main(void)
{
	char err[LM_ERRLEN], p[4096], q[4096], list[8300], *env = NULL, *bundle = NULL, *s;
	verdict_key *ed = NULL, *ec = NULL, *k = NULL;
	verdict_trust tr = {0}, none = {0};
	verdict_opened o;
	size_t len = 0, blen = 0;
	cJSON *st = statement(), *j;

	if (mkdtemp(dir) == NULL || setenv("HOME", dir, 1) != 0 || st == NULL)
		return 1;

	/* The three ids, as ssh-keygen -l and openssl print them for these keys. */
	UNIT_OK(verdict_key_load(&ed, put(p, sizeof p, "ed", ed_pem, 0600), 1, err) == LM_OK, "an Ed25519 key loads (%s)", err);
	UNIT_OK(verdict_key_load(&ec, put(p, sizeof p, "ec", ec_pem, 0600), 1, err) == LM_OK,
	    "an ECDSA P-256 PKCS#8 key (openssl genpkey) loads (%s)", err);
	if (ed == NULL || ec == NULL)
		return 1;
	UNIT_OK(strcmp(verdict_key_fingerprint(ed), "SHA256:NIqx/QodarXi/C7f8i/3NuTNoRnl0CpdBAFNoPoexKk") == 0,
	    "Ed25519: the fingerprint is ssh-keygen -l's (%s)", verdict_key_fingerprint(ed));
	UNIT_OK(strcmp(verdict_key_hint(ed), "0lVAOJErWJM+o+6mwrY4s33XBb0ljb/AcN34c3EtNls=") == 0,
	    "... the hint base64 of the SHA-256 of its DER SPKI (openssl)");
	UNIT_OK(strcmp(verdict_key_id(ed), "sha256:2b5c1c85461938e2bc9461fc33216d2c52222f711cba8c1207bc0b4d12102c40") == 0,
	    "... lume-metal's id the SHA-256 of its 32 raw bytes, as before");
	UNIT_OK(strcmp(verdict_key_fingerprint(ec), "SHA256:mqX8oyDua4/eGqU9mGtLyOy1Rx11FuZQMCmSxbj6zKE") == 0,
	    "P-256: the fingerprint is ssh-keygen -l's (%s)", verdict_key_fingerprint(ec));
	UNIT_OK(strcmp(verdict_key_hint(ec), "5PD518Tt5hUGotCenhD0SBOdg2o+ppa2DhOXS9n//5w=") == 0, "... the hint openssl's");
	UNIT_OK(strcmp(verdict_key_id(ec), "sha256:781835bbf0cd2d19990e113f057c54b41dec632ec2091067e09f475097fddce1") == 0,
	    "... lume-metal's id the SHA-256 of its uncompressed point");
	UNIT_OK(verdict_key_load(&k, put(p, sizeof p, "ecc.pub", ec_compressed_pub, 0644), 0, err) == LM_OK &&
	    strcmp(verdict_key_id(k), verdict_key_id(ec)) == 0 && strcmp(verdict_key_hint(k), verdict_key_hint(ec)) == 0 &&
	    strcmp(verdict_key_fingerprint(k), verdict_key_fingerprint(ec)) == 0,
	    "the same P-256 key written with its point compressed has the same three ids (%s)", err);
	verdict_key_free(k);
	k = NULL;

	/* Trusted-key files: P-256 public keys too (cosign.pub's form); other curves and RSA refused. */
	put(p, sizeof p, "p384.pub", p384_pub, 0644);
	UNIT_OK(verdict_trust_load(&tr, p, err) == LM_EINPUT && tr.n == 0, "a P-384 public key is refused");
	UNIT_HAS(err, "p384.pub:1: not an Ed25519 or ECDSA P-256 key", "... naming the file, the line and why");
	UNIT_OK(verdict_trust_load(&tr, put(p, sizeof p, "rsa.pub", rsa_pub, 0644), err) == LM_EINPUT, "an RSA one too");
	snprintf(list, sizeof list, "%s", put(p, sizeof p, "ecc.pub", ec_compressed_pub, 0644));
	UNIT_OK(verdict_trust_load(&tr, list, err) == LM_OK && tr.n == 1, "a P-256 public key is trusted (%s)", err);

	/* An ECDSA signature: DER, over the PAE with SHA-256; opened with the trusted public key. */
	UNIT_OK(verdict_sign(&env, &len, st, ec, err) == LM_OK, "a P-256 key signs an envelope (%s)", err);
	UNIT_OK(env != NULL && strstr(env, "\"keyid\":\"SHA256:mqX8oyDua4/eGqU9mGtLyOy1Rx11FuZQMCmSxbj6zKE\"") != NULL,
	    "... its keyid the fingerprint");
	UNIT_OK(verdict_open(&o, env, len, D, &tr) == LM_OK && o.status == VERDICT_TRUSTED &&
	    strcmp(o.signer, verdict_key_id(ec)) == 0, "... and it opens trusted, its signer lume-metal's id of the key");
	verdict_opened_clear(&o);
	{
		cJSON *e = cJSON_Parse(env);
		unsigned char *der = NULL;
		size_t dl = 0;

		UNIT_OK(lm_unbase64(&der, &dl, cJSON_GetObjectItemCaseSensitive(sig0(e), "sig")->valuestring) == 0 && dl >= 8 &&
		    dl <= 72 && der[0] == 0x30 && der[1] == dl - 2, "... the signature a DER SEQUENCE (%zu bytes)", dl);
		free(der);
		cJSON_Delete(e);
	}
	verdict_trust_clear(&tr);
	free(env);
	env = NULL;

	/* The bundle: the Ed25519 key trusted. */
	UNIT_OK(verdict_trust_load(&tr, put(q, sizeof q, "ed.pub", "-----BEGIN PUBLIC KEY-----\n"
	    "MCowBQYDK2VwAyEA57SNl+YKDFB1a4bZQ4PJ1XJB6m+eHjUZJ2l1mxBKF40=\n-----END PUBLIC KEY-----\n", 0644), err) == LM_OK,
	    "the Ed25519 public key is trusted (%s)", err);
	UNIT_OK(tr.n == 1 && strcmp(verdict_key_id(tr.keys[0]), verdict_key_id(ed)) == 0, "... the same key");
	UNIT_OK(verdict_sign_bundle(&bundle, &blen, st, ed, err) == LM_OK, "a bundle is signed (%s)", err);
	j = cJSON_Parse(bundle);
	UNIT_OK(j != NULL && strcmp(cJSON_GetObjectItemCaseSensitive(j, "mediaType")->valuestring, VERDICT_BUNDLE_TYPE) == 0,
	    "... of mediaType " VERDICT_BUNDLE_TYPE);
	UNIT_OK(strstr(bundle, "\"verificationMaterial\":{\"publicKey\":{\"hint\":\"0lVAOJErWJM+o+6mwrY4s33XBb0ljb/AcN34c3EtNls=\"},"
	    "\"tlogEntries\":[]}") != NULL, "... its verification material the key's hint and no tlog entry");
	UNIT_OK(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(env_of(j), "signatures")) == 1 &&
	    strcmp(cJSON_GetObjectItemCaseSensitive(sig0(env_of(j)), "keyid")->valuestring, verdict_key_fingerprint(ed)) == 0,
	    "... its dsseEnvelope one signature, keyid the fingerprint");
	UNIT_OK(verdict_open_bundle(&o, bundle, blen, D, &tr) == LM_OK && o.status == VERDICT_TRUSTED &&
	    cJSON_GetArraySize(o.records) == 1, "the bundle opens trusted, its records handed back");
	verdict_opened_clear(&o);
	UNIT_OK(verdict_open_bundle(&o, bundle, blen, D, &none) == LM_EREFUSED && o.status == VERDICT_UNTRUSTED,
	    "with no key trusted: untrusted");
	UNIT_HAS(o.why, verdict_key_fingerprint(ed), "... naming the keyid it carries");
	verdict_opened_clear(&o);
	UNIT_OK(verdict_open(&o, bundle, blen, D, &tr) == LM_EREFUSED && o.status == VERDICT_BAD,
	    "a bundle read as a plain envelope: refused");
	verdict_opened_clear(&o);
	env = cJSON_PrintUnformatted(env_of(j));
	UNIT_OK(verdict_open(&o, env, strlen(env), D, &tr) == LM_OK, "the envelope inside opens as a plain one");
	verdict_opened_clear(&o);
	UNIT_OK(verdict_open_bundle(&o, env, strlen(env), D, &tr) == LM_EREFUSED && o.status == VERDICT_BAD,
	    "a plain envelope read as a bundle: refused");
	verdict_opened_clear(&o);
	{
		static const struct {
			void (*edit)(cJSON *);
			int status;
			const char *why, *name;
		} hostile[] = {
			{mt_v02, VERDICT_BAD, "mediaType is not", "a bundle of another version"},
			{message_signature, VERDICT_BAD, "no dsseEnvelope", "a message-signature bundle"},
			{two_sigs, VERDICT_BAD, "more than one signature", "two signatures"},
			{no_sigs, VERDICT_UNSIGNED, "unsigned", "no signature: unsigned"},
			{no_material, VERDICT_TRUSTED, "", "no verification material: the hint decides nothing"},
		};

		for (size_t i = 0; i < sizeof hostile / sizeof hostile[0]; i++) {
			s = edited(bundle, hostile[i].edit);
			UNIT_OK(verdict_open_bundle(&o, s, strlen(s), D, &tr) == (hostile[i].status == VERDICT_TRUSTED ? LM_OK :
			    LM_EREFUSED) && o.status == hostile[i].status && strstr(o.why, hostile[i].why) != NULL,
			    "bundle: %s (%s)", hostile[i].name, o.why);
			verdict_opened_clear(&o);
			free(s);
		}
	}
	cJSON_Delete(j);

	/* An envelope of the old form: its keyid lume-metal's sha256:<hex>, or none; still trusted. */
	old_id = verdict_key_id(ed);
	s = edited(env, old_keyid);
	UNIT_OK(verdict_open(&o, s, strlen(s), D, &tr) == LM_OK && strcmp(o.signer, verdict_key_id(ed)) == 0,
	    "an old envelope (keyid sha256:<hex>) opens trusted");
	verdict_opened_clear(&o);
	free(s);
	s = edited(env, no_keyid);
	UNIT_OK(verdict_open(&o, s, strlen(s), D, &tr) == LM_OK, "one without a keyid (as cosign signs) too");
	verdict_opened_clear(&o);
	free(s);
	s = edited(env, other_sig);
	UNIT_OK(verdict_open(&o, s, strlen(s), D, &tr) == LM_EREFUSED && o.status == VERDICT_BAD,
	    "a bad signature whose keyid is a trusted key's fingerprint: refused");
	UNIT_HAS(o.why, "does not verify with the trusted key", "... as a signature over other bytes");
	verdict_opened_clear(&o);
	free(s);
	free(env);
	free(bundle);
	cJSON_Delete(st);
	verdict_trust_clear(&tr);
	verdict_key_free(ed);
	verdict_key_free(ec);
	snprintf(list, sizeof list, "rm -rf '%s'", dir);
	if (system(list) != 0)
		return 1;
	UNIT_DONE();
}
