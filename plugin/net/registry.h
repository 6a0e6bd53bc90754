/* registry: asks an OCI registry (ghcr.io, or a test registry on loopback) which manifest digest
 * a tag names, over libcurl: `HEAD /v2/<repo>/manifests/<tag>`, `Docker-Content-Digest`. `lume
 * push` records nothing locally, so this is how the digest of a pushed image is learnt. */
#ifndef LM_REGISTRY_H
#define LM_REGISTRY_H

#include <stddef.h>

#define REGISTRY_DIGEST_LEN 71          /* "sha256:" + 64 hex */
#define REGISTRY_TIMEOUT_MS 30000       /* the whole exchange, token request included */
#define REGISTRY_HEADERS_MAX 65536      /* bytes of response headers read per request */
#define REGISTRY_BODY_MAX 65536         /* bytes of a token answer read */

/* Registry credentials. Both strings belong to the struct; registry_creds_clear wipes and frees
 * them. Never logged, never put on a command line or in an error message. */
typedef struct {
	char *user, *secret;
} registry_creds;

/* Reads the credentials Lume 0.5.3's push reads: user GITHUB_USERNAME, else GHCR_USERNAME;
 * secret GITHUB_TOKEN, else GHCR_TOKEN. Returns 1 when both are set and non-empty (*out
 * filled), 0 when not (anonymous: *out empty), LM_EFAIL when out of memory. */
int registry_creds_from_env(registry_creds *out);
void registry_creds_clear(registry_creds *c);

/* The manifest digest the registry answers for repo:tag (e.g. "127.0.0.5:5000", "trycua/
 * macos-tahoe-cua", "latest") into out. registry is HOST[:PORT] as Lume's --registry takes it:
 * plain http when HOST is a loopback address (127.0.0.0/8, ::1, localhost), https otherwise.
 * Sends Accept for the OCI and Docker manifest and index types. On a 401 it follows the
 * challenge: Bearer realm/service/scope (GET realm?service=&scope= with creds as Basic when
 * given, then `token` or `access_token`, then the HEAD again with that token; the realm must be
 * https, or http on loopback) or Basic (the HEAD again with creds). creds may be NULL or empty
 * (anonymous). Header and token bodies are bounded (REGISTRY_*_MAX), redirects are not
 * followed, the digest must be "sha256:" + 64 lowercase hex.
 * Errors name the registry: "registry R is unreachable", "registry R did not answer within N
 * ms", "registry R refused the credentials (401)", "registry R requires credentials (401)",
 * "registry R: no such tag REPO:TAG" (404), a malformed digest or challenge. LM_EINPUT for a
 * malformed registry, repo or tag; LM_EFAIL otherwise. */
int registry_manifest_digest(char out[REGISTRY_DIGEST_LEN + 1], const char *registry, const char *repo,
    const char *tag, const registry_creds *creds, char *err);

/* The same with a deadline of timeout_ms for the whole exchange. */
int registry_manifest_digest_timeout(char out[REGISTRY_DIGEST_LEN + 1], const char *registry,
    const char *repo, const char *tag, const registry_creds *creds, long timeout_ms, char *err);

#endif
