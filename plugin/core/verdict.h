/* verdict: a ledger's records as a signed statement that travels with the image. A verdict is
 * a DSSE envelope (payloadType application/vnd.in-toto+json) over an in-toto Statement v1
 * whose subject is the image (its repository and {"sha256": hex} of its manifest digest) and
 * whose predicate (VERDICT_PREDICATE_TYPE) is {"key": the ledger key, "records": [...],
 * "image": the reference, "lumeMetal": version}, on its own or inside a Sigstore bundle v0.3
 * (what cosign and sigstore-go verify). Signed through libcrypto over DSSE's PAE, with the
 * algorithm of the key: Ed25519, or ECDSA P-256 with SHA-256 (the signature DER, as DSSE and
 * cosign have it). A key has three ids (verdict_key.c):
 *  - lume-metal's, its signer id everywhere lume-metal names one: "sha256:" + hex of the SHA-256
 *    of the raw public key (Ed25519's 32 bytes; P-256's uncompressed point, 65);
 *  - the envelope's keyid: OpenSSH's fingerprint, "SHA256:" + unpadded base64 of the SHA-256 of
 *    the SSH public key blob, as `ssh-keygen -l` prints it and go-securesystemslib computes it;
 *  - the bundle's hint: base64 of the SHA-256 of the DER SubjectPublicKeyInfo (RFC 6962's key
 *    id, what cosign writes).
 * Key files are PEM: the private key PKCS#8 ("BEGIN PRIVATE KEY", no passphrase, mode 0600),
 * the public key SubjectPublicKeyInfo ("BEGIN PUBLIC KEY"), as `openssl pkey` reads them and
 * cosign writes its public key. Everything an envelope or a bundle holds is untrusted: bounded,
 * checked, and handed back only when a trusted key verified it. Never prints. */
#ifndef LM_VERDICT_H
#define LM_VERDICT_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "core/util.h"

#define VERDICT_ARTIFACT_TYPE "application/vnd.lume-metal.verdict.v1+json"
#define VERDICT_ENVELOPE_TYPE "application/vnd.dsse.envelope.v1+json"
#define VERDICT_BUNDLE_TYPE "application/vnd.dev.sigstore.bundle.v0.3+json"
#define VERDICT_PAYLOAD_TYPE "application/vnd.in-toto+json"
#define VERDICT_STATEMENT_TYPE "https://in-toto.io/Statement/v1"
#define VERDICT_PREDICATE_TYPE "https://lume-metal.dev/verdict/v1"
#define VERDICT_KEYID_LEN 71            /* "sha256:" + 64 hex */
#define VERDICT_FPR_LEN 50              /* "SHA256:" + 43 base64 */
#define VERDICT_HINT_LEN 44             /* base64 of 32 bytes */
#define VERDICT_ENVELOPE_MAX (256u << 10) /* bytes of an envelope or a bundle read or written */
#define VERDICT_DEPTH_MAX 16            /* JSON nesting of an envelope or a statement */
#define VERDICT_RECORDS_MAX 16          /* records one statement may hold */
#define VERDICT_SIGS_MAX 8              /* signatures one envelope may hold */
#define VERDICT_TRUST_MAX 32            /* trusted keys */
#define VERDICT_KEYFILE_MAX 16384

typedef struct verdict_key verdict_key;

/* Writes a new Ed25519 key pair: path (the private key, mode 0600) and path.pub (the public
 * key, 0644), each opened O_CREAT|O_EXCL|O_NOFOLLOW, so an existing file (or a link) is never
 * overwritten (LM_EINPUT naming it); on any failure neither is left behind. keyid gets the
 * key's id, fpr (may be NULL) its fingerprint. */
int verdict_key_generate(char keyid[VERDICT_KEYID_LEN + 1], char fpr[VERDICT_FPR_LEN + 1], const char *path,
    char *err);

/* Loads a key file, Ed25519 or ECDSA on P-256: a private key (priv set; PEM, no passphrase;
 * refused when group or others may read it, like ssh) or a public one (read as a trusted-key
 * file is, below, and holding exactly one key). *out (caller frees with verdict_key_free).
 * LM_EINPUT naming path and why. */
int verdict_key_load(verdict_key **out, const char *path, int priv, char *err);
/* The key's ids (above), owned by k: lume-metal's, the OpenSSH fingerprint, the bundle hint. */
const char *verdict_key_id(const verdict_key *k);
const char *verdict_key_fingerprint(const verdict_key *k);
const char *verdict_key_hint(const verdict_key *k);
void verdict_key_free(verdict_key *k);

/* Signs len bytes of data with the private key k (Ed25519, or ECDSA P-256 over SHA-256, DER):
 * *sig (caller frees), *siglen bytes. LM_EINPUT for a public key. */
int verdict_key_sign_raw(unsigned char **sig, size_t *siglen, const verdict_key *k, const void *data, size_t len,
    char *err);
/* 1 when sig (siglen bytes) is k's signature of data, by k's algorithm; else 0. */
int verdict_key_verify(const verdict_key *k, const void *data, size_t len, const unsigned char *sig, size_t siglen);

/* The keys a controller trusts (owned; verdict_trust_clear frees them). */
typedef struct {
	verdict_key *keys[VERDICT_TRUST_MAX];
	size_t n;
} verdict_trust;

/* Loads list: public key files separated by commas (blanks around each dropped; "~/" is
 * $HOME/). An empty list trusts nothing. Each file is strict:
 *  - every key in it is trusted: one or more -----BEGIN/END PUBLIC KEY----- blocks (SPKI,
 *    Ed25519 or ECDSA P-256), blank lines between; a key listed twice (in a file or in two)
 *    counts once;
 *  - anything else is refused as "FILE:LINE: why": a line outside a block (a comment, text), a
 *    private key, a certificate or another PEM block, a non-base64 line inside a block, a block
 *    that does not decode to one public key, a key of another type or curve, a file with no key;
 *  - sshd's StrictModes: the file (links resolved) must be owned by root or this user and
 *    writable by neither its group nor others, and so each directory above it, up to and
 *    including $HOME when the file is under it, else up to /;
 *  - past VERDICT_TRUST_MAX keys in all, "FILE:LINE: more than 32 trusted keys: refused".
 * LM_EINPUT naming the file and why; nothing kept then. */
int verdict_trust_load(verdict_trust *out, const char *list, char *err);
void verdict_trust_clear(verdict_trust *t);

/* DSSE's pre-authentication encoding into out: "DSSEv1" SP LEN(type) SP type SP LEN(body) SP
 * body, LEN in ASCII decimal. 0, or -1 out of memory. */
int verdict_pae(lm_buf *out, const char *type, const void *body, size_t len);

/* The Statement (caller frees) about the image name (REGISTRY/REPO) at digest ("sha256:<hex>")
 * with predicate {"key": key, "records": records, "image": reference, "lumeMetal"} (copies).
 * NULL when a pointer is NULL, the digest is malformed, or out of memory. */
cJSON *verdict_statement(const char *name, const char *digest, const char *reference, const cJSON *key,
    const cJSON *records);

/* The envelope of statement signed by k, as compact JSON into *out (caller frees), *len bytes:
 * {"payloadType", "payload", "signatures": [{"keyid": k's fingerprint, "sig"}]}. LM_EINPUT for
 * a public key, or past VERDICT_ENVELOPE_MAX bytes. */
int verdict_sign(char **out, size_t *len, const cJSON *statement, const verdict_key *k, char *err);
/* The same envelope inside a Sigstore bundle v0.3, as compact protobuf JSON: {"mediaType":
 * VERDICT_BUNDLE_TYPE, "verificationMaterial": {"publicKey": {"hint": k's hint}, "tlogEntries":
 * []}, "dsseEnvelope": the envelope}. */
int verdict_sign_bundle(char **out, size_t *len, const cJSON *statement, const verdict_key *k, char *err);

/* What an envelope turned out to be. */
enum { VERDICT_TRUSTED, VERDICT_UNTRUSTED, VERDICT_UNSIGNED, VERDICT_BAD };

typedef struct {
	int status;       /* one of the above */
	char signer[VERDICT_KEYID_LEN + 1]; /* the trusted key that verified it (lume-metal's id); else
	                                     * the keyid an untrusted signature names (printable ASCII,
	                                     * "" none) */
	char why[LM_ERRLEN]; /* when not trusted: why, in words */
	cJSON *key;       /* trusted only: the predicate's ledger key (owned) */
	cJSON *records;   /* trusted only: its records, each as ledger_record_problem wants (owned) */
	char statement[VERDICT_KEYID_LEN + 1]; /* trusted only: "sha256:" + hex of the signed payload's
	                                        * bytes, what names one statement however it is wrapped */
	char time[40];    /* trusted only: its signed time, the newest of its records' "time" */
} verdict_opened;

/* The status word: "trusted", "untrusted", "unsigned", "refused". */
const char *verdict_status_name(int status);

/* Opens the envelope env (len bytes) found for the image at digest: bounded (at most
 * VERDICT_ENVELOPE_MAX bytes, VERDICT_DEPTH_MAX levels, VERDICT_SIGS_MAX signatures), its
 * signatures checked against every key of trust over the PAE of its payload, and, when one
 * verifies, its statement checked: the Statement v1 type, VERDICT_PREDICATE_TYPE, a subject
 * whose sha256 is digest's, a predicate key object whose "imageDigest" is digest (strings or
 * null, at most 16 fields) and 1..VERDICT_RECORDS_MAX records ledger_record_problem accepts,
 * none of which carries the importer's field "imported" (ledger.h: what only an import sets).
 * LM_OK with out->status VERDICT_TRUSTED and out->key and out->records set; otherwise
 * LM_EREFUSED with out->status and out->why (unsigned; signed by an untrusted key, named; a
 * signature that does not verify with the trusted key it names, by either id; anything
 * malformed). Clear out with verdict_opened_clear either way. */
int verdict_open(verdict_opened *out, const void *env, size_t len, const char *digest, const verdict_trust *trust);
/* The same for a Sigstore bundle (bundle, len bytes, the same bounds) holding the envelope: its
 * mediaType VERDICT_BUNDLE_TYPE (or the older form of 0.3, "...bundle+json;version=0.3"), its
 * content a dsseEnvelope (not a messageSignature) of at most one signature, as Sigstore's own
 * verifiers want; the verification material is a hint and decides nothing. */
int verdict_open_bundle(verdict_opened *out, const void *bundle, size_t len, const char *digest,
    const verdict_trust *trust);
void verdict_opened_clear(verdict_opened *o);

/* Whether the JSON text s (len bytes) nests deeper than max levels of arrays and objects
 * (strings skipped): 1 when deeper, else 0. Cheap, before a parse. */
int verdict_too_deep(const char *s, size_t len, int max);

#endif
