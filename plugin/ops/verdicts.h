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
 * tag; each artifact of that type (at most VERDICTS_EXAMINE_MAX, the newest by their
 * annotation first: a hint, since it is not signed) not already recorded here is read by
 * digest, its subject checked, its envelope read (bounded, digest checked) and opened against
 * the trusted keys. Untrusted ones count for nothing; of the trusted ones, the newest
 * VERDICTS_ARTIFACTS_MAX by signed time are kept. Only those records are ever imported
 * (verdicts_import) into the local ledger, each marked with the importer's "imported" object
 * (core/ledger.h), and one statement (however often re-wrapped) is imported once.
 *
 * Consult (verdicts_consult): the gate of deploy and status asks the registry for a VM's image
 * version on every run (not only when the local ledger has none, so a failing verdict published
 * later reaches every controller), once per image version per process: the VMs of one version
 * wait for the first one's lookup. The gate then takes the newest verdict by signed time among
 * local and imported records (ledger_verdict). Only a registry the operator named is asked
 * (verdicts_allowed): a reference the guest claims is a label. Never prints. */
#ifndef LM_VERDICTS_H
#define LM_VERDICTS_H

#include <cjson/cJSON.h>

#include "core/verdict.h"
#include "net/registry.h"
#include "ops/session.h"

#define VERDICTS_ARTIFACTS_MAX 32    /* trusted artifacts of one image kept, the newest by signed time */
#define VERDICTS_EXAMINE_MAX 64      /* artifacts of one image read and checked in one lookup */
#define VERDICTS_TIMEOUT_MS 30000    /* a lookup's whole exchange with the registry */

/* What a run knows about verdicts in registries (borrowed for the run). */
typedef struct verdicts_cfg {
	int registry;                 /* consult the registry (verdicts=registry, --verdicts registry) */
	const char *signing_key;      /* the private key file (signing-key=), or NULL */
	const verdict_trust *trust;   /* the trusted public keys (trusted-key=); may be empty */
	const char *registry_default; /* for a reference without one: registry= (else ghcr.io); the
	                               * registry the environment's credentials are for */
	const char *organization;     /* ... and organization= (else trycua) */
	const char *registries;       /* verdict-registries=: more hosts a guest's label may name */
	const char *auth_file;        /* registry-auth=: a Docker config's auths (registry.h) */
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

/* The client for vr's repository (caller frees), with that registry's own credentials and no
 * other's (registry_creds_for; *creds, cleared by the caller); push asks for push access. */
int verdicts_client(registry_client **c, registry_creds *creds, const verdicts_ref *vr, int push,
    const verdicts_cfg *cfg, char *err);

/* The image manifest of vr (digest when not NULL, else vr's digest, else its tag): d its digest
 * (of the bytes), mt its media type, *size its size. LM_EFAIL naming the registry. */
int verdicts_image(registry_client *c, const verdicts_ref *vr, const char *digest, char d[REGISTRY_DIGEST_LEN + 1],
    char mt[128], long long *size, char *err);

/* Whether a lookup may go to registry (HOST[:PORT]) for a reference the operator did not give
 * (a guest's image.json): it is registry_default (ghcr.io when unset) or one of registries
 * (comma-separated), compared case-insensitively. */
int verdicts_allowed(const verdicts_cfg *cfg, const char *registry);

/* Signs and pushes the records of the image version reference names (its digest: digest, or
 * what the registry answers for its tag) under state's ledger (caller frees *out, also on a
 * failure after the lookup): {"image", "repository", "digest", "signer", "referrersApi",
 * "artifacts": [{"digest", "key", "records"}], "requests"}. LM_EINPUT without a signing key or
 * with no record of that digest (nothing pushed); LM_EFAIL naming the registry. */
int verdicts_push(cJSON **out, const char *state, const char *reference, const char *digest,
    const verdicts_cfg *cfg, char *err);

/* Reads the verdicts attached to the image version (digest, or the tag's) into *out (caller
 * frees): {"image", "repository", "digest", "referrersApi", "requests", "listed", "artifacts":
 * [{"artifact", "status" (verdict_status_name, "known": recorded here already and not read
 * again, "older": trusted but past the newest VERDICTS_ARTIFACTS_MAX, "unread": past
 * VERDICTS_EXAMINE_MAX), "signer", "reason", and when trusted "key", "records", "statement",
 * "time"}]}. known (may be NULL): artifact digests whose records this ledger holds. LM_EFAIL
 * naming the registry when it cannot be read. */
int verdicts_fetch(cJSON **out, const char *reference, const char *digest, const verdicts_cfg *cfg,
    const cJSON *known, char *err);

/* Writes the trusted artifacts' records of fetched (verdicts_fetch's) into state's ledger, each
 * under its own key, with the importer's "imported" {"from":"registry", "repository", "signer",
 * "artifact", "statement"}; a record already there (the same statement, kind and time, however
 * the statement was wrapped) is not written again. *added gets the records written. */
int verdicts_import(int *added, const char *state, const cJSON *fetched, char *err);

/* The gate's lookup for one VM of an open session: when o->verdicts asks for the registry and
 * the VM has a digest and a reference (--image; or the guest's image.json when its registry is
 * one verdicts_allowed names, else nothing is asked and no credential leaves), the registry's
 * verdicts for that version are fetched and imported, once per version per process. r gets
 * "verdicts": {"source":"registry", "repository", "state" ("imported", "current": nothing new,
 * "none", "untrusted", "unreachable", "skipped"), "message", "signer", "artifact"}. Returns 1
 * when records were imported, else 0. The caller reads the ledger after it either way. */
int verdicts_consult(cJSON *r, const session_vm *s, const session_opts *o);

/* After a gate refused r: appends the lookup's message (r's "verdicts") to r's "message", so a
 * refusal names the registry's untrusted signer or its failure. */
void verdicts_annotate(cJSON *r);

#endif
