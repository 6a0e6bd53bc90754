/* verdict: see verdict.h. */
#include "core/verdict.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ledger.h"


int
verdict_pae(lm_buf *out, const char *type, const void *body, size_t len)
{
	if (lm_buf_addf(out, "DSSEv1 %zu %s %zu ", strlen(type), type, len) != 0 || lm_buf_add(out, body, len) != 0)
		return -1;
	return 0;
}

cJSON *
verdict_statement(const char *name, const char *digest, const char *reference, const cJSON *key,
    const cJSON *records)
{
	cJSON *s, *subj, *d, *p;

	if (name == NULL || digest == NULL || key == NULL || records == NULL || !lm_is_digest(digest) ||
	    (s = cJSON_CreateObject()) == NULL)
		return NULL;
	cJSON_AddStringToObject(s, "_type", VERDICT_STATEMENT_TYPE);
	subj = cJSON_AddArrayToObject(s, "subject");
	d = cJSON_CreateObject();
	cJSON_AddItemToArray(subj, d);
	cJSON_AddStringToObject(d, "name", name);
	cJSON_AddStringToObject(cJSON_AddObjectToObject(d, "digest"), "sha256", digest + 7);
	cJSON_AddStringToObject(s, "predicateType", VERDICT_PREDICATE_TYPE);
	p = cJSON_AddObjectToObject(s, "predicate");
	cJSON_AddItemToObject(p, "key", cJSON_Duplicate(key, 1));
	cJSON_AddItemToObject(p, "records", cJSON_Duplicate(records, 1));
	if (reference)
		cJSON_AddStringToObject(p, "image", reference);
	cJSON_AddStringToObject(p, "lumeMetal", LM_VERSION);
	if (cJSON_GetObjectItemCaseSensitive(p, "lumeMetal") == NULL ||
	    !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(p, "records"))) {
		cJSON_Delete(s);
		return NULL;
	}
	return s;
}

/* The envelope of statement signed by k, as a JSON object into *env (caller frees). */
static int
envelope_of(cJSON **env, const cJSON *statement, const verdict_key *k, char *err)
{
	char *payload = cJSON_PrintUnformatted(statement), *p64 = NULL, *s64 = NULL;
	unsigned char *sig = NULL;
	size_t siglen = 0;
	lm_buf pae = {0};
	cJSON *one;
	int rc = LM_OK;

	*env = NULL;
	if (payload == NULL || verdict_pae(&pae, VERDICT_PAYLOAD_TYPE, payload, strlen(payload)) != 0)
		rc = lm_err(err, LM_EFAIL, "out of memory");
	else if ((rc = verdict_key_sign_raw(&sig, &siglen, k, pae.data, pae.len, err)) != LM_OK)
		;
	else if ((p64 = lm_base64(payload, strlen(payload), 1)) == NULL || (s64 = lm_base64(sig, siglen, 1)) == NULL ||
	    (*env = cJSON_CreateObject()) == NULL)
		rc = lm_err(err, LM_EFAIL, "out of memory");
	else {
		cJSON_AddStringToObject(*env, "payloadType", VERDICT_PAYLOAD_TYPE);
		cJSON_AddStringToObject(*env, "payload", p64);
		cJSON_AddItemToArray(cJSON_AddArrayToObject(*env, "signatures"), one = cJSON_CreateObject());
		/* The keyid is a hint (DSSE): the key's OpenSSH fingerprint, the id go-securesystemslib (and so
		 * sigstore-go and cosign) computes for a key, and skips a signature when they differ. */
		cJSON_AddStringToObject(one, "keyid", verdict_key_fingerprint(k));
		cJSON_AddStringToObject(one, "sig", s64);
	}
	lm_buf_free(&pae);
	free(payload);
	free(sig);
	free(p64);
	free(s64);
	return rc;
}

/* obj as compact JSON into *out (caller frees), *len bytes, at most VERDICT_ENVELOPE_MAX. */
static int
print_bounded(char **out, size_t *len, const cJSON *obj, const char *what, char *err)
{
	if ((*out = cJSON_PrintUnformatted(obj)) == NULL)
		return lm_err(err, LM_EFAIL, "out of memory");
	if ((*len = strlen(*out)) > VERDICT_ENVELOPE_MAX) {
		free(*out);
		*out = NULL;
		return lm_err(err, LM_EINPUT, "the signed verdict's %s is larger than %u bytes", what, VERDICT_ENVELOPE_MAX);
	}
	return LM_OK;
}

int
verdict_sign(char **out, size_t *len, const cJSON *statement, const verdict_key *k, char *err)
{
	cJSON *env;
	int rc = envelope_of(&env, statement, k, err);

	*out = NULL;
	if (rc == LM_OK)
		rc = print_bounded(out, len, env, "envelope", err);
	cJSON_Delete(env);
	return rc;
}

int
verdict_sign_bundle(char **out, size_t *len, const cJSON *statement, const verdict_key *k, char *err)
{
	cJSON *env, *b, *vm;
	int rc = envelope_of(&env, statement, k, err);

	*out = NULL;
	if (rc != LM_OK)
		return rc;
	if ((b = cJSON_CreateObject()) == NULL) {
		cJSON_Delete(env);
		return lm_err(err, LM_EFAIL, "out of memory");
	}
	/* Sigstore's bundle v0.3 in protobuf JSON (sigstore_bundle.proto): a public key named by its
	 * hint, no transparency log entry, the envelope as dsseEnvelope. */
	cJSON_AddStringToObject(b, "mediaType", VERDICT_BUNDLE_TYPE);
	vm = cJSON_AddObjectToObject(b, "verificationMaterial");
	cJSON_AddStringToObject(cJSON_AddObjectToObject(vm, "publicKey"), "hint", verdict_key_hint(k));
	cJSON_AddArrayToObject(vm, "tlogEntries");
	cJSON_AddItemToObject(b, "dsseEnvelope", env);
	rc = print_bounded(out, len, b, "bundle", err);
	cJSON_Delete(b);
	return rc;
}

const char *
verdict_status_name(int status)
{
	switch (status) {
	case VERDICT_TRUSTED: return "trusted";
	case VERDICT_UNTRUSTED: return "untrusted";
	case VERDICT_UNSIGNED: return "unsigned";
	default: return "refused";
	}
}

int
verdict_too_deep(const char *s, size_t len, int max)
{
	int depth = 0, in_str = 0;

	for (size_t i = 0; i < len; i++) {
		char c = s[i];

		if (in_str) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_str = 0;
		} else if (c == '"')
			in_str = 1;
		else if (c == '[' || c == '{') {
			if (++depth > max)
				return 1;
		} else if (c == ']' || c == '}')
			depth--;
	}
	return 0;
}

void
verdict_opened_clear(verdict_opened *o)
{
	if (o == NULL)
		return;
	cJSON_Delete(o->key);
	cJSON_Delete(o->records);
	o->key = o->records = NULL;
}

static int
refuse(verdict_opened *o, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int
refuse(verdict_opened *o, int status, const char *fmt, ...)
{
	va_list ap;

	o->status = status;
	va_start(ap, fmt);
	vsnprintf(o->why, sizeof o->why, fmt, ap);
	va_end(ap);
	verdict_opened_clear(o);
	return LM_EREFUSED;
}

/* A keyid as an envelope names it, kept only when it is printable ASCII of a sane length. */
static void
claimed_id(char out[VERDICT_KEYID_LEN + 1], const cJSON *id)
{
	out[0] = '\0';
	if (!cJSON_IsString(id) || strlen(id->valuestring) > VERDICT_KEYID_LEN || id->valuestring[0] == '\0')
		return;
	for (const char *p = id->valuestring; *p; p++)
		if (*p < 0x21 || *p > 0x7e)
			return;
	strcpy(out, id->valuestring);
}

/* The statement's checks (verdict_open, once a trusted key verified it). */
static int
check_statement(verdict_opened *o, const unsigned char *payload, size_t plen, const char *digest)
{
	cJSON *st = NULL, *pred;
	const cJSON *subj, *e, *key, *recs;
	const char *s;
	char why[160];
	int found = 0, n = 0, rc = LM_OK;

	if (verdict_too_deep((const char *)payload, plen, VERDICT_DEPTH_MAX))
		return refuse(o, VERDICT_BAD, "the statement nests deeper than %d levels", VERDICT_DEPTH_MAX);
	if ((st = cJSON_ParseWithLength((const char *)payload, plen)) == NULL || !cJSON_IsObject(st))
		rc = refuse(o, VERDICT_BAD, "the signed payload is not a JSON object");
	else if ((s = lm_jstr(st, "_type")) == NULL || strcmp(s, VERDICT_STATEMENT_TYPE) != 0)
		rc = refuse(o, VERDICT_BAD, "the signed payload is not an in-toto Statement v1");
	else if ((s = lm_jstr(st, "predicateType")) == NULL || strcmp(s, VERDICT_PREDICATE_TYPE) != 0)
		rc = refuse(o, VERDICT_BAD, "the statement's predicateType is not %s", VERDICT_PREDICATE_TYPE);
	if (rc != LM_OK)
		goto done;
	subj = cJSON_GetObjectItemCaseSensitive(st, "subject");
	cJSON_ArrayForEach(e, subj) {
		s = lm_jstr(cJSON_GetObjectItemCaseSensitive(e, "digest"), "sha256");
		found |= s != NULL && strcmp(s, digest + 7) == 0;
	}
	if (!cJSON_IsArray(subj) || !found) {
		rc = refuse(o, VERDICT_BAD, "the statement's subject is not this image (%.24s...): signed for another one",
		    digest);
		goto done;
	}
	pred = cJSON_GetObjectItemCaseSensitive(st, "predicate");
	key = cJSON_GetObjectItemCaseSensitive(pred, "key");
	recs = cJSON_GetObjectItemCaseSensitive(pred, "records");
	if (!cJSON_IsObject(key) || (s = lm_jstr(key, "imageDigest")) == NULL || strcmp(s, digest) != 0) {
		rc = refuse(o, VERDICT_BAD, "the predicate's key is not of this image's digest");
		goto done;
	}
	cJSON_ArrayForEach(e, key) {
		if (++n > 16 || (!cJSON_IsString(e) && !cJSON_IsNull(e)) ||
		    (cJSON_IsString(e) && strlen(e->valuestring) > LEDGER_STR_MAX)) {
			rc = refuse(o, VERDICT_BAD, "the predicate's key is not a ledger key (at most 16 strings or nulls)");
			goto done;
		}
	}
	if (!cJSON_IsArray(recs) || cJSON_GetArraySize(recs) < 1 || cJSON_GetArraySize(recs) > VERDICT_RECORDS_MAX) {
		rc = refuse(o, VERDICT_BAD, "the predicate holds no records, or more than %d", VERDICT_RECORDS_MAX);
		goto done;
	}
	n = 0;
	cJSON_ArrayForEach(e, recs) {
		const char *bad = ledger_record_problem(e, why);

		if (bad != NULL) {
			rc = refuse(o, VERDICT_BAD, "the predicate's record %d is not a ledger record: %s", n, bad);
			goto done;
		}
		if (cJSON_HasObjectItem(e, LEDGER_IMPORTED)) {
			rc = refuse(o, VERDICT_BAD, "the predicate's record %d carries \"" LEDGER_IMPORTED "\", which only "
			    "an import sets: a signer cannot say where its own record came from", n);
			goto done;
		}
		if (ledger_time_cmp(lm_jstr(e, "time"), o->time) > 0)
			snprintf(o->time, sizeof o->time, "%s", lm_jstr(e, "time"));
		n++;
	}
	{
		char hex[65];

		lm_sha256_hex(hex, payload, plen);
		snprintf(o->statement, sizeof o->statement, "sha256:%s", hex);
	}
	o->key = cJSON_DetachItemFromObjectCaseSensitive(pred, "key");
	o->records = cJSON_DetachItemFromObjectCaseSensitive(pred, "records");
done:
	cJSON_Delete(st);
	return rc;
}

/* Opens the envelope doc (an object) whose checks verdict_open lists past the parse. */
static int
open_envelope(verdict_opened *o, const cJSON *doc, const char *digest, const verdict_trust *trust)
{
	const cJSON *sigs = cJSON_GetObjectItemCaseSensitive(doc, "signatures"), *sg;
	const char *t = lm_jstr(doc, "payloadType"), *p = lm_jstr(doc, "payload");
	unsigned char *payload = NULL, *sig = NULL;
	size_t plen = 0, slen = 0;
	lm_buf pae = {0};
	int rc = LM_EREFUSED, nsig = 0, named_trusted = -1;

	if (t == NULL || strcmp(t, VERDICT_PAYLOAD_TYPE) != 0) {
		rc = refuse(o, VERDICT_BAD, "the envelope's payloadType is not %s", VERDICT_PAYLOAD_TYPE);
		goto done;
	}
	if (p == NULL || lm_unbase64(&payload, &plen, p) != 0) {
		rc = refuse(o, VERDICT_BAD, "the envelope's payload is not base64");
		goto done;
	}
	if (sigs != NULL && (!cJSON_IsArray(sigs) || cJSON_GetArraySize(sigs) > VERDICT_SIGS_MAX)) {
		rc = refuse(o, VERDICT_BAD, "the envelope's signatures are not an array of at most %d", VERDICT_SIGS_MAX);
		goto done;
	}
	if (verdict_pae(&pae, VERDICT_PAYLOAD_TYPE, payload, plen) != 0) {
		rc = refuse(o, VERDICT_BAD, "out of memory");
		goto done;
	}
	cJSON_ArrayForEach(sg, sigs) {
		const char *s64 = lm_jstr(sg, "sig");
		char claimed[VERDICT_KEYID_LEN + 1];

		if (s64 == NULL || s64[0] == '\0')
			continue;
		nsig++;
		claimed_id(claimed, cJSON_GetObjectItemCaseSensitive(sg, "keyid"));
		if (o->signer[0] == '\0')
			strcpy(o->signer, claimed);
		free(sig);
		sig = NULL;
		if (lm_unbase64(&sig, &slen, s64) != 0)
			continue;
		/* Every trusted key is tried, each with its own algorithm: a keyid is a hint, not a claim to
		 * believe (an envelope of an older version names its key by lume-metal's id). */
		for (size_t k = 0; trust != NULL && k < trust->n; k++) {
			const verdict_key *key = trust->keys[k];

			if (verdict_key_verify(key, pae.data, pae.len, sig, slen)) {
				strcpy(o->signer, verdict_key_id(key));
				o->status = VERDICT_TRUSTED;
				rc = check_statement(o, payload, plen, digest);
				goto done;
			}
			if (strcmp(claimed, verdict_key_id(key)) == 0 || strcmp(claimed, verdict_key_fingerprint(key)) == 0)
				named_trusted = (int)k;
		}
	}
	if (nsig == 0)
		rc = refuse(o, VERDICT_UNSIGNED, "unsigned: the envelope holds no signature");
	else if (named_trusted >= 0) {
		strcpy(o->signer, verdict_key_id(trust->keys[named_trusted]));
		rc = refuse(o, VERDICT_BAD, "the signature does not verify with the trusted key %s it names: signed over "
		    "other bytes", o->signer);
	} else
		rc = refuse(o, VERDICT_UNTRUSTED, "signed by %s, a key this controller does not trust (trusted-key)",
		    o->signer[0] ? o->signer : "a key with no keyid");
done:
	lm_buf_free(&pae);
	free(payload);
	free(sig);
	return rc;
}

/* The bounds both forms share, then the parse of data (len bytes) into *doc, an object. */
static int
parse_bounded(cJSON **doc, verdict_opened *o, const void *data, size_t len, const char *digest, const char *what)
{
	memset(o, 0, sizeof *o);
	o->status = VERDICT_BAD;
	*doc = NULL;
	if (!lm_is_digest(digest))
		return refuse(o, VERDICT_BAD, "no image digest to check the statement against");
	if (len > VERDICT_ENVELOPE_MAX)
		return refuse(o, VERDICT_BAD, "the %s is larger than %u bytes", what, VERDICT_ENVELOPE_MAX);
	if (verdict_too_deep(data, len, VERDICT_DEPTH_MAX))
		return refuse(o, VERDICT_BAD, "the %s nests deeper than %d levels", what, VERDICT_DEPTH_MAX);
	if ((*doc = cJSON_ParseWithLength(data, len)) == NULL || !cJSON_IsObject(*doc)) {
		cJSON_Delete(*doc);
		*doc = NULL;
		return refuse(o, VERDICT_BAD, "not a %s: not a JSON object", what);
	}
	return LM_OK;
}

int
verdict_open(verdict_opened *o, const void *env, size_t len, const char *digest, const verdict_trust *trust)
{
	cJSON *doc;
	int rc = parse_bounded(&doc, o, env, len, digest, "DSSE envelope");

	if (rc == LM_OK)
		rc = open_envelope(o, doc, digest, trust);
	cJSON_Delete(doc);
	return rc;
}

int
verdict_open_bundle(verdict_opened *o, const void *bundle, size_t len, const char *digest, const verdict_trust *trust)
{
	cJSON *doc;
	const cJSON *env;
	const char *mt;
	int rc = parse_bounded(&doc, o, bundle, len, digest, "Sigstore bundle");

	if (rc != LM_OK)
		return rc;
	env = cJSON_GetObjectItemCaseSensitive(doc, "dsseEnvelope");
	if ((mt = lm_jstr(doc, "mediaType")) == NULL || (strcmp(mt, VERDICT_BUNDLE_TYPE) != 0 &&
	    strcmp(mt, "application/vnd.dev.sigstore.bundle+json;version=0.3") != 0))
		rc = refuse(o, VERDICT_BAD, "the bundle's mediaType is not %s", VERDICT_BUNDLE_TYPE);
	else if (!cJSON_IsObject(env))
		rc = refuse(o, VERDICT_BAD, "the bundle holds no dsseEnvelope (a message signature is not a verdict)");
	else if (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(env, "signatures")) > 1)
		rc = refuse(o, VERDICT_BAD, "the bundle's envelope holds more than one signature (a Sigstore bundle's "
		    "holds one)");
	else
		rc = open_envelope(o, env, digest, trust);
	cJSON_Delete(doc);
	return rc;
}
