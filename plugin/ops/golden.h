/* golden: builds a validated golden image and publishes it. The source VM is never modified:
 * the build runs on a `lume clone` of it, which is started, deployed with full validation,
 * stamped (GUEST_ROOT/image.json), stopped, pushed under a tag of its own, tagged, and deleted
 * (unless keep). The pushed manifest's digest is read from the push's own tag, the public tags
 * are pointed at exactly that manifest (golden_publish.h), and the verdict is recorded once in the
 * ledger under it (kind "golden"), so every VM later pulled from the tag is known by it; with
 * deploy.validate, the workload step's passing validate record is filed under it too (first),
 * and only there: once, so those VMs pass the validate gate of a workload with
 * "requireValidation" (a failing one is filed under the build VM's key, the base image's).
 * Never prints: progress goes through a callback. */
#ifndef LM_GOLDEN_H
#define LM_GOLDEN_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "ops/deploy.h"

/* The steps, in order; GOLDEN_PULL only with a pull. */
enum {
	GOLDEN_PULL, GOLDEN_CLONE, GOLDEN_RUN, GOLDEN_SSH, GOLDEN_DEPLOY, GOLDEN_WORKLOAD, GOLDEN_STAMP,
	GOLDEN_STOP, GOLDEN_PUSH, GOLDEN_DIGEST, GOLDEN_TAG, GOLDEN_RECORD, GOLDEN_ATTACH, GOLDEN_DELETE, GOLDEN_NSTEPS
};

/* The step's name ("pull", "clone", "run", "ssh", "deploy", "workload", "stamp", "stop",
 * "push", "digest", "tag", "record", "attach", "delete"). push writes the build under a tag only
 * this run knows, digest reads that manifest back, tag points IMAGE:TAG and the additional tags
 * at it and checks they name it (ops/golden_publish.h). attach signs the records filed under the
 * pushed digest and attaches them to the image in its registry (ops/verdicts.h), when
 * deploy.verdicts names a signing key; skipped otherwise. */
const char *golden_step_name(int step);

/* Called as each step starts (state "start") and ends ("done", "failed", "skipped"), with the
 * time since the build began. detail (may be NULL) is the step's command or its outcome; it may
 * hold text from Lume, the guest or the registry: escape it before a terminal. */
typedef void (*golden_progress_fn)(void *ctx, int step, const char *state, const char *detail,
    int64_t elapsed_ms);

/* Time limits of the Lume steps. A macOS disk is tens of GB: clone, pull and push get hours. */
#define GOLDEN_LONG_S (6 * 3600)
#define GOLDEN_SHORT_S 300

typedef struct {
	const char *source;       /* a stopped local VM; with pull, the name the pull creates */
	const char *pull;         /* IMAGE:TAG to pull as source first, or NULL */
	int pull_pick;            /* with pull: source is Lume's own name for it (no NAME given), so a
	                           * VM of that name already there makes the build pick a free one,
	                           * source-2, -3, ... ("source" and "sourcePicked" in its result) */
	const char *pull_registry, *pull_organization; /* NULL: Lume's defaults */
	const char *image_tag;    /* IMAGE:TAG to push */
	const char *registry, *organization; /* NULL: Lume's defaults, ghcr.io and trycua */
	const char *const *tags;  /* --additional-tags */
	size_t ntags;
	const char *build;        /* the build VM's name */
	const char *model;        /* for the plan: the model deploy.validate names, or NULL */
	int keep, dry_run;
	int port;                 /* the build VM's SSH port (Lume VMs: 22) */
	/* The deploy of step 3: state, lume, ssh, timeout_s, wait_s (the wait for SSH), payload and
	 * validate (validate.h: when set, the workload step runs validate_one on the build VM, and a
	 * verdict other than "validated" pushes nothing),
	 * info, and image (the base's reference for its verdict; with pull, REGISTRY/ORG/BASE:TAG
	 * when not given). force is set by the build: full validation. */
	session_opts deploy;
	golden_progress_fn progress;
	void *ctx;
} golden_opts;

/* True when s is IMAGE:TAG as Lume takes it: one ':', IMAGE a repository and TAG a tag as
 * net/registry.h has them (registry_repo_ok, registry_tag_ok). The whole name, REGISTRY/ORG/IMAGE,
 * is checked by golden_build (registry_name_ok); --registry by registry_host_ok. */
int golden_image_tag_ok(const char *s);

/* Runs the build. *out (caller frees) is one object, also on failure: "source", "build",
 * "image" (IMAGE:TAG), "reference" (REGISTRY/ORG/IMAGE:TAG), "registry", "state" ("published",
 * "validation-failed", "refused", "failed", or "planned" for a dry run), "message" when not
 * published, "pushed" (true once lume push succeeded), "digest" (the pushed manifest's, or
 * null), "pushTag" ({"tag": the push's own tag, "removed": whether the registry deleted it,
 * "message": why not}, once the tag step ran), "baseDigest", "recorded", "attached" (verdicts_push's result, when a verdict was attached), "kept", "steps" (each {"step", "command", "state", "ms",
 * "message"}), "deploy" (deploy_one's result), "key" (the golden record's ledger key) and
 * "record". Returns the exit class: LM_OK published (or planned), LM_EFAIL failed,
 * LM_EINPUT bad input (err says why; *out may be NULL), LM_EREFUSED refused by a gate. */
int golden_build(cJSON **out, const golden_opts *o, char *err);

/* The golden record's key: deploy_key's guest and host facts (a key of ledger_key_of, or of
 * ledger_key) with imageDigest digest and image null, as ledger_key_of makes it. Caller frees;
 * NULL when out of memory. */
cJSON *golden_key(const cJSON *deploy_key, const char *digest);

/* The stamp written to GUEST_ROOT/image.json, printed unformatted (caller frees): "image"
 * (the reference), "baseDigest" (or null), "payloadSha256", "profile", "verdict", "time",
 * "lumeMetal" (the version). There is no "digest": the pushed digest is not known before the
 * push, and the Mac's .manifest-digest names a pulled VM's image. */
char *golden_stamp_json(const char *reference, const char *base_digest, const payload_info *info,
    const char *verdict, const char *time);

#endif
