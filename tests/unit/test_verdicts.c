/* verdicts: which registry and repository an image reference names. */
#include <stdio.h>
#include <string.h>

#include "ops/verdicts.h"
#include "unit.h"

static void
want(const char *ref, const verdicts_cfg *cfg, const char *reg, const char *repo, const char *tag, const char *digest)
{
	verdicts_ref r;
	char err[LM_ERRLEN] = "";
	int rc = verdicts_ref_parse(&r, ref, cfg, err);

	UNIT_OK(rc == LM_OK && strcmp(r.registry, reg) == 0 && strcmp(r.repo, repo) == 0 && strcmp(r.tag, tag) == 0 &&
	    strcmp(r.digest, digest) == 0, "%s: registry %s, repository %s, tag '%s', digest '%.14s' (got %s %s %s %s%s)",
	    ref, reg, repo, tag, digest, r.registry, r.repo, r.tag, r.digest, err);
}

int
main(void)
{
	static const char D[] = "sha256:2222222222222222222222222222222222222222222222222222222222222222";
	verdicts_cfg mine = {.registry_default = "registry.example:5000", .organization = "my-org"};
	verdicts_ref r;
	char ref[200], err[LM_ERRLEN];

	want("ghcr.io/my-org/macos-tahoe-shim:26.5", NULL, "ghcr.io", "my-org/macos-tahoe-shim", "26.5", "");
	want("127.0.0.1:5000/org/shim:1", NULL, "127.0.0.1:5000", "org/shim", "1", "");
	want("localhost/org/shim", NULL, "localhost", "org/shim", "latest", "");
	snprintf(ref, sizeof ref, "ghcr.io/org/shim@%s", D);
	want(ref, NULL, "ghcr.io", "org/shim", "", D);
	want("macos-tahoe-cua:latest", NULL, "ghcr.io", "trycua/macos-tahoe-cua", "latest", "");
	want("macos-tahoe-cua:latest", &mine, "registry.example:5000", "my-org/macos-tahoe-cua", "latest", "");
	want("org/shim:2", &mine, "registry.example:5000", "org/shim", "2", "");
	UNIT_OK(verdicts_ref_parse(&r, "ghcr.io/org/shim@sha256:abc", NULL, err) == LM_EINPUT, "a short digest is refused");
	UNIT_HAS(err, "64 lowercase hex", "... saying what a digest is");
	UNIT_OK(verdicts_ref_parse(&r, "", NULL, err) == LM_EINPUT, "an empty reference is refused");
	UNIT_OK(verdicts_ref_parse(&r, NULL, NULL, err) == LM_EINPUT, "no reference is refused");
	UNIT_DONE();
}
