/* registry_int: what registry.c (requests, authorization, the client) and registry_ops.c (the
 * client's calls) share, included after net/registry.h (its types). Not for other modules: their
 * interface is registry.h. */
#ifndef LM_REGISTRY_INT_H
#define LM_REGISTRY_INT_H

#include <stddef.h>
#include <stdint.h>

#include "core/util.h"

/* What one request's headers said. */
typedef struct {
	size_t bytes;
	int over;
	char digest[REGISTRY_DIGEST_LEN + 2];
	int digest_seen, digest_bad;
	char challenge[4096]; /* the first WWW-Authenticate (Bearer preferred) */
	int challenge_bearer, challenge_over;
	char ctype[128];      /* Content-Type, cut */
	char location[2048];  /* Location, "" when longer */
	int oci_subject;      /* OCI-Subject seen (a registry that indexes referrers itself) */
	char host[300];       /* who answered, when a followed redirect led away: HOST[:PORT]; else "" */
	char next[2048];      /* the target of a Link with rel="next" (RFC 8288), "" when none or longer */
} heads;

typedef struct {
	lm_buf b;
	int over;
	size_t max; /* 0: REGISTRY_BODY_MAX */
} body;

typedef struct {
	const char *registry;
	long timeout_ms;
	int64_t deadline;
	char *err;
	int loopback;         /* the registry is on loopback: plain http, to loopback only */
} ctx;

/* What one request sends beyond its URL: a method other than HEAD/GET, a body and its type,
 * whether redirects are followed (a blob's storage: at most 3, see request_sp). */
typedef struct {
	const char *method;  /* NULL: HEAD without bd, GET with it */
	const char *ctype;   /* Content-Type of up, or NULL */
	const void *up;
	size_t uplen;
	int follow;
} sendspec;

struct registry_client {
	char registry[256], repo[256], base[300]; /* base: "http[s]://REGISTRY" */
	const registry_creds *creds;
	int push, loopback, basic, requests;
	char *auth;         /* "Authorization: Bearer ..." once a token was had (wiped on free) */
	ctx c;
	char err[LM_ERRLEN];
};

/* Who answered, for an error: "registry R", or "HOST (where registry R redirected)". */
const char *registry_who(char out[600], const ctx *c, const char *host);

/* One call of path ("/v2/...") with the client's authorization; a 401 is answered once from its
 * challenge and the call made again. bd NULL: no body read; sp NULL: HEAD or GET. */
int registry_call(registry_client *c, const char *path, body *bd, heads *h, long *status, const sendspec *sp,
    char *err);

#endif
