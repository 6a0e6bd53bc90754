/* registry: asks an OCI registry (ghcr.io, or a test registry on loopback) which manifest digest
 * a tag names, over libcurl: `HEAD /v2/<repo>/manifests/<tag>`, `Docker-Content-Digest`. `lume
 * push` records nothing locally, so this is how the digest of a pushed image is learnt. The
 * credentials (registry_creds_*) are in registry_creds.c; the referrers listing, over
 * registry_get, in net/referrers.h. */
#ifndef LM_REGISTRY_H
#define LM_REGISTRY_H

#include <stddef.h>

#define REGISTRY_DIGEST_LEN 71          /* "sha256:" + 64 hex */
#define REGISTRY_TIMEOUT_MS 30000       /* the whole exchange, token request included */
#define REGISTRY_HEADERS_MAX 65536      /* bytes of response headers read per request */
#define REGISTRY_BODY_MAX 65536         /* bytes of a token answer read */

/* The reference rules, the one place (docker's reference grammar, distribution/reference, which
 * the OCI distribution spec follows): a name REGISTRY/REPO is at most REGISTRY_NAME_MAX bytes in
 * all (NameTotalLengthMax), a tag at most REGISTRY_TAG_MAX. */
#define REGISTRY_NAME_MAX 255
#define REGISTRY_TAG_MAX 128
/* True when r is HOST[:PORT] as Lume's --registry takes it: HOST a domain name (components of
 * [A-Za-z0-9-] neither starting nor ending with '-', joined by '.'), an IPv4 address or [IPv6];
 * PORT 1 to 5 digits; at most REGISTRY_NAME_MAX - 2 bytes (room for "/" and a repository of one
 * byte). *loopback (may be NULL) then says whether HOST is 127.0.0.0/8, ::1 or localhost. */
int registry_host_ok(const char *r, int *loopback);
/* True when s is a repository: components [a-z0-9]+ joined by ".", "_", "__" or "-"+, separated
 * by "/". NULL is not. */
int registry_repo_ok(const char *s);
/* True when s is a tag: [A-Za-z0-9_][A-Za-z0-9_.-]*, at most REGISTRY_TAG_MAX bytes. */
int registry_tag_ok(const char *s);
/* registry_host_ok and registry_repo_ok, and REGISTRY/REPO at most REGISTRY_NAME_MAX bytes. */
int registry_name_ok(const char *registry, const char *repo, int *loopback);
/* registry_name_ok with an error in err naming what is wrong: LM_OK or LM_EINPUT. */
int registry_name_check(const char *registry, const char *repo, int *loopback, char *err);

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

/* The credentials for registry (HOST[:PORT]) and nothing else, as Docker keeps them per host:
 * auth_file's (a Docker config, {"auths": {"HOST[:PORT]" or "https://HOST/...": {"auth":
 * base64 of USER:SECRET} or {"username", "password"}}}; a regular file only its owner can read,
 * else refused), else the environment's (registry_creds_from_env) when registry is env_registry
 * (NULL: ghcr.io), the registry `lume push` sends them to; else none. Host names compare case-
 * insensitively. Returns 1 (*out filled), 0 (anonymous), LM_EINPUT naming auth_file when it
 * cannot be used, LM_EFAIL out of memory. Secrets read are wiped once copied. */
int registry_creds_for(registry_creds *out, const char *registry, const char *env_registry, const char *auth_file,
    char *err);

/* The manifest digest the registry answers for repo:tag (e.g. "127.0.0.5:5000", "trycua/
 * macos-tahoe-cua", "latest") into out. registry is HOST[:PORT] as Lume's --registry takes it:
 * plain http when HOST is a loopback address (127.0.0.0/8, ::1, localhost), https otherwise.
 * Sends Accept for the OCI and Docker manifest and index types. On a 401 it follows the
 * challenge: Bearer realm/service/scope (GET realm?service=&scope= with creds as Basic when
 * given, then `token` or `access_token`, then the HEAD again with that token; the realm must be
 * https, or plain http to a loopback address from a registry on loopback) or Basic (the HEAD again with creds). creds may be NULL or empty
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

/* One repository of one registry for a series of OCI distribution calls (the verdict artifacts
 * of ops/verdicts.h): the challenge of the first 401 (Bearer or Basic, as above; with push,
 * the token's scope asks for pull,push) is answered once and its Authorization kept for the
 * calls after it. Plain http on loopback only, as above. Redirects are not followed, except
 * by registry_blob_get (a blob's storage): at most 3, each hop checked before it is made (https
 * to any host; plain http only from a registry on loopback to a loopback address), without the
 * Authorization or the credentials. Every body read is bounded by the max given; every digest
 * is checked against the bytes. Errors name the registry, and the host that answered when a
 * redirect led elsewhere ("HOST (where registry R redirected) answered ..."). */
typedef struct registry_client registry_client;

#define REGISTRY_MANIFEST_MAX (256u << 10) /* bytes of a manifest or index read */

/* A new client (caller frees with registry_client_free) for registry (HOST[:PORT]) and repo;
 * creds borrowed (may be NULL), for the client's life; the deadline is now + timeout_ms for
 * all its calls. LM_EINPUT for a malformed registry or repository. */
int registry_client_new(registry_client **out, const char *registry, const char *repo, const registry_creds *creds,
    int push, long timeout_ms, char *err);
void registry_client_free(registry_client *c);
/* The registry (HOST[:PORT]) and the repository of c, owned by c. */
const char *registry_client_name(const registry_client *c);
const char *registry_client_repo(const registry_client *c);
/* The HTTP requests the client made (the token service's included). */
int registry_client_requests(const registry_client *c);

/* GET of the manifest ref into *out (caller frees; NUL-terminated), *len bytes, at most max;
 * *digest the SHA-256 of the bytes (for a ref that is a digest, it must be that one). A 404 is
 * LM_OK with *out NULL. */
int registry_manifest_get(registry_client *c, const char *ref, size_t max, char **out, size_t *len,
    char digest[REGISTRY_DIGEST_LEN + 1], char *err);

/* PUT of a manifest of media_type under ref (a tag, or its own digest); *digest gets its digest,
 * *subject (may be NULL) whether the registry answered OCI-Subject (it indexes referrers). */
int registry_manifest_put(registry_client *c, const char *ref, const char *media_type, const void *data, size_t len,
    char digest[REGISTRY_DIGEST_LEN + 1], int *subject, char *err);

/* DELETE of the tag (OCI distribution 1.1: the tag goes, its manifest and other tags stay).
 * LM_OK when the registry answered 202; LM_EFAIL, err saying what it answered, when it does
 * not delete tags (distribution 2.8 answers 400 DIGEST_INVALID; others 405) or the exchange
 * failed. There is no deletion by digest here: that deletes the manifest and every tag naming
 * it. */
int registry_tag_delete(registry_client *c, const char *tag, char *err);

/* Uploads a blob (POST then PUT ?digest=) unless the registry has it (HEAD); *digest gets it. */
int registry_blob_put(registry_client *c, const void *data, size_t len, char digest[REGISTRY_DIGEST_LEN + 1],
    char *err);

/* GET of the blob digest into *out (caller frees), at most max bytes; refused when its
 * SHA-256 is not digest. */
int registry_blob_get(registry_client *c, const char *digest, size_t max, char **out, size_t *len, char *err);

/* GET of path ("/v2/...", with its query) into *out (caller frees; NUL-terminated; NULL unless
 * the answer is 200), *len bytes, at most max; *status the HTTP status, ctype its Content-Type
 * (cut), next the path and query of the answer's Link with rel="next" (RFC 8288; "" when none):
 * a Link to another scheme or host than the registry's is LM_EFAIL, never followed. */
int registry_get(registry_client *c, const char *path, size_t max, long *status, char **out, size_t *len, char ctype[128],
    char next[1024], char *err);

#endif
