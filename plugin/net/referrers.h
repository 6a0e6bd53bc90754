/* referrers: which artifacts of a repository refer to a manifest (OCI distribution 1.1, "Listing
 * referrers"), read through a registry client (net/registry.h): the referrers API, each page of
 * it (a Link with rel="next" names the next one, on the same registry), else the referrers tag
 * schema's fallback tag sha256-<hex>, which must hold an image index. Bounded: at most
 * REFERRERS_PAGES_MAX pages and REFERRERS_LISTED_MAX descriptors in all, each page or index at
 * most REGISTRY_MANIFEST_MAX bytes and VERDICT_DEPTH_MAX levels deep. Never prints. */
#ifndef LM_REFERRERS_H
#define LM_REFERRERS_H

#include <cjson/cJSON.h>

#include "net/registry.h"

#define REFERRERS_PAGES_MAX 16      /* pages of the referrers API read in one listing */
#define REFERRERS_LISTED_MAX 1024   /* descriptors kept in one listing */

/* The referrers of the manifest digest as one image index into *out (caller frees): {"schemaVersion":
 * 2, "mediaType": the index type, "manifests": [every page's descriptors, in the order listed]}.
 * *api is set when the referrers API answered (200 with Content-Type application/vnd.oci.image.
 * index.v1+json); otherwise (404, 400, 405, 406, or a 200 that is not an index: a registry without
 * the API) the fallback tag is read, and *out is NULL when there is none. *truncated is set when
 * a bound stopped the listing (the descriptors past it are not in *out). LM_EFAIL naming the
 * registry for a page or a fallback tag that is not an image index (its "mediaType" and
 * "manifests"), a Link elsewhere, a page listed twice, or a failed exchange. */
int referrers_list(registry_client *c, const char *digest, cJSON **out, int *api, int *truncated, char *err);

#endif
