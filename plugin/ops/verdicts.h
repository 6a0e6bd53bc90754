/* verdicts: the ledger's verdicts travel with the image, as OCI artifacts in its registry.
 *
 * Attach (verdicts_push): the records an image version's ledger documents hold (each
 * document's last deploy|golden record and last validate record, made here: none imported
 * from a registry) are signed (core/verdict.h: a DSSE envelope over an in-toto Statement, one
 * per document) and pushed to the image's repository as an artifact: an OCI image manifest with
 * artifactType VERDICT_ARTIFACT_TYPE, the empty config, the envelope as its one layer, and the
 * image manifest as its subject. A registry that indexes referrers itself says so (OCI-Subject);
 * for one that does not (distribution 2.8, Debian's docker-registry), the fallback tag
 * sha256-<hex of the image digest> is an image index listing the artifacts (read, amended,
 * written back).
 *
 * Fetch (verdicts_fetch): the referrers API (GET /v2/REPO/referrers/DIGEST), else the fallback
 * tag; each artifact of that type (at most VERDICTS_ARTIFACTS_MAX) is read by digest, its
 * subject checked, its envelope read (bounded, digest checked) and opened against the trusted
 * keys. Only a trusted one's records are ever imported (verdicts_import) into the local ledger,
 * each marked "source":"registry", "signer" (the key id) and "artifact" (the manifest digest).
 *
 * Consult (verdicts_consult): the gate of deploy and status asks the registry for a VM's image
 * version when the local ledger has no verdict for it, once per image version per process:
 * the VMs of one version wait for the first one's lookup. Never prints. */
#ifndef LM_VERDICTS_H
#define LM_VERDICTS_H

#include <cjson/cJSON.h>

#include "core/verdict.h"
#include "ops/session.h"

#define VERDICTS_ARTIFACTS_MAX 32    /* artifacts of one image read, the newest */
#define VERDICTS_TIMEOUT_MS 30000    /* a lookup's whole exchange with the registry */

/* What a run knows about verdicts in registries (borrowed for the run). */
typedef struct verdicts_cfg {
	int registry;                 /* consult the registry (verdicts=registry, --verdicts registry) */
	const char *signing_key;      /* the private key file (signing-key=), or NULL */
	const verdict_trust *trust;   /* the trusted public keys (trusted-key=); may be empty */
	const char *registry_default; /* for a reference without one: registry= (else ghcr.io) */
	const char *organization;     /* ... and organization= (else trycua) */
	long timeout_ms;              /* 0: VERDICTS_TIMEOUT_MS */
} verdicts_cfg;

/* An image reference resolved: REGISTRY/REPO:TAG, REGISTRY/REPO@sha256:HEX, or a short
 * NAME:TAG (Lume's form) in registry_default/organization. */
typedef struct {
	char registry[256], repo[256], tag[129];
	char digest[72];              /* "" unless the reference names one */
} verdicts_ref;

/* Parses ref into out. LM_EINPUT naming what is wrong. */
int verdicts_ref_parse(verdicts_ref *out, const char *ref, const verdicts_cfg *cfg, char *err);

/* Signs and pushes the records of the image version reference names (its digest: digest, or
 * what the registry answers for its tag) under state's ledger (caller frees *out, also on a
 * failure after the lookup): {"image", "repository", "digest", "signer", "referrersApi",
 * "artifacts": [{"digest", "key", "records"}], "requests"}. LM_EINPUT without a signing key or
 * with no record of that digest (nothing pushed); LM_EFAIL naming the registry. */
int verdicts_push(cJSON **out, const char *state, const char *reference, const char *digest,
    const verdicts_cfg *cfg, char *err);

/* Reads the verdicts attached to the image version (digest, or the tag's) into *out (caller
 * frees): {"image", "repository", "digest", "referrersApi", "requests", "artifacts":
 * [{"artifact", "status" (verdict_status_name), "signer", "reason", and when trusted "key"
 * and "records"}]}. LM_EFAIL naming the registry when it cannot be read. */
int verdicts_fetch(cJSON **out, const char *reference, const char *digest, const verdicts_cfg *cfg, char *err);

/* Writes the trusted artifacts' records of fetched (verdicts_fetch's) into state's ledger, each
 * under its own key, marked "source":"registry", "signer", "artifact"; a record already there
 * (the same artifact, kind and time) is not written again. *added gets the records written. */
int verdicts_import(int *added, const char *state, const cJSON *fetched, char *err);

/* The gate's lookup for one VM of an open session: when o->verdicts asks for the registry, the
 * VM has a digest and a reference (--image, or the guest's image.json), and the local ledger
 * has no deploy|golden record (or, with o->require_validation, no validate record) for its key:
 * the registry's verdicts for that version are fetched and imported, once per version per
 * process. r gets "verdicts": {"source":"registry", "repository", "state" ("imported", "none",
 * "untrusted", "unreachable", "skipped"), "message", "signer", "artifact"}. Returns 1 when
 * records were imported (the caller reads the ledger again), else 0. */
int verdicts_consult(cJSON *r, const session_vm *s, const session_opts *o);

/* After a gate refused r: appends the lookup's message (r's "verdicts") to r's "message", so a
 * refusal names the registry's untrusted signer or its failure. */
void verdicts_annotate(cJSON *r);

#endif
