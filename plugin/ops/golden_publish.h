/* golden_publish: golden signs exactly what it pushed. `lume push` writes the build under a tag
 * only this run knows (golden_nonce_tag), never under the public tags, so nobody can have
 * re-tagged it between the push and the digest: golden_publish_resolve reads that tag's
 * manifest and takes the digest from its bytes. golden_publish_point then puts those same bytes
 * under each public tag (IMAGE:TAG and the additional tags), asks the registry to delete the
 * nonce tag (OCI distribution 1.1; a registry that does not delete tags, as distribution 2.8
 * or ghcr.io, keeps it, said), and reads every public tag back: each must name that digest,
 * else another push re-tagged it in between and nothing may be recorded or signed. Credentials
 * as registry_creds_from_env reads them. Never prints. */
#ifndef LM_GOLDEN_PUBLISH_H
#define LM_GOLDEN_PUBLISH_H

#include <stddef.h>

#include "core/util.h"
#include "net/registry.h"

#define GOLDEN_NONCE_LEN 39               /* "golden-" + 32 hex digits */
#define GOLDEN_MANIFEST_MAX (4u << 20)    /* bytes of the pushed manifest (distribution's own bound) */
#define GOLDEN_REGISTRY_MS 120000         /* the registry calls of resolve and point together */

/* What one push made; golden_pushed_free releases it. */
typedef struct {
	char tag[GOLDEN_NONCE_LEN + 1];       /* the nonce tag lume pushed to */
	char digest[REGISTRY_DIGEST_LEN + 1]; /* the pushed manifest's: the SHA-256 of its bytes */
	char media_type[128];                 /* its mediaType (an OCI image manifest when it has none) */
	char *manifest;                       /* its bytes (owned) */
	size_t len;
	int removed;                          /* the registry deleted the nonce tag */
	char kept[LM_ERRLEN];                 /* when not: what it answered */
	registry_creds creds;                 /* owned; the client borrows them */
	registry_client *client;
} golden_pushed;

/* A fresh nonce tag into p->tag (16 bytes from getentropy, as hex), p otherwise emptied. */
int golden_nonce_tag(golden_pushed *p, char *err);

/* p->tag's manifest in registry (HOST[:PORT]) repo: p->manifest, p->len, p->media_type and
 * p->digest. Errors name the registry (registry.h). */
int golden_publish_resolve(golden_pushed *p, const char *registry, const char *repo, char *err);

/* Points tag and each of tags (ntags) at p->manifest, deletes the nonce tag where the registry
 * allows it (p->removed, else p->kept), then reads each public tag back; a tag that names
 * another digest (or none) is LM_EFAIL: "REPO:TAG names sha256:..., not the pushed ...: another
 * push re-tagged it". */
int golden_publish_point(golden_pushed *p, const char *tag, const char *const *tags, size_t ntags, char *err);

void golden_pushed_free(golden_pushed *p);

#endif
