/* golden: see golden.h. The steps are golden_steps.c's table; this file checks the input, runs
 * the table through one loop and cleans up after a failure. */
#include "ops/golden.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/image.h"
#include "core/ledger.h"
#include "net/lume.h"
#include "net/registry.h"
#include "core/util.h"
#include "ops/golden_int.h"

const char *
golden_step_name(int step)
{
	return step >= 0 && step < GOLDEN_NSTEPS ? golden_steps[step].name : "?";
}

int
golden_image_tag_ok(const char *s)
{
	const char *colon = s ? strchr(s, ':') : NULL;
	char image[REGISTRY_NAME_MAX];

	if (colon == NULL || lm_fmt(image, sizeof image, "%.*s", (int)(colon - s), s) != LM_OK)
		return 0;
	return registry_repo_ok(image) && registry_tag_ok(colon + 1);
}

cJSON *
golden_key(const cJSON *deploy_key, const char *digest)
{
	ledger_identity id = {
		.digest = digest, .guest_os = lm_jstr(deploy_key, "guestOS"), .guest_build = lm_jstr(deploy_key, "guestBuild"),
		.guest_model = lm_jstr(deploy_key, "guestModel"), .host_chip = lm_jstr(deploy_key, "hostChip"),
		.host_model = lm_jstr(deploy_key, "hostModel"), .host_os = lm_jstr(deploy_key, "hostOS"),
		.host_build = lm_jstr(deploy_key, "hostBuild"),
	};

	return ledger_key_of(&id);
}

char *
golden_stamp_json(const char *reference, const char *base_digest, const payload_info *info, const char *verdict,
    const char *time)
{
	cJSON *s = cJSON_CreateObject();
	char *text;

	if (s == NULL)
		return NULL;
	cJSON_AddStringToObject(s, "image", reference);
	if (base_digest)
		cJSON_AddStringToObject(s, "baseDigest", base_digest);
	else
		cJSON_AddNullToObject(s, "baseDigest");
	cJSON_AddStringToObject(s, "payloadSha256", info->sha256);
	cJSON_AddStringToObject(s, "profile", info->profile ? info->profile : "");
	cJSON_AddStringToObject(s, "verdict", verdict);
	cJSON_AddStringToObject(s, "time", time);
	cJSON_AddStringToObject(s, "lumeMetal", LM_VERSION);
	text = cJSON_PrintUnformatted(s);
	cJSON_Delete(s);
	return text;
}

/* Adds the step's entry; announce: its "start" progress line too. */
static void
step_begin(golden_run *g, int step, int announce)
{
	g->step = step;
	g->ts = lm_now_ms();
	g->cur = cJSON_CreateObject();
	cJSON_AddStringToObject(g->cur, "step", golden_steps[step].name);
	cJSON_AddStringToObject(g->cur, "command", g->cmd[step] ? g->cmd[step] : "");
	cJSON_AddItemToArray(g->steps, g->cur);
	if (announce && g->o->progress)
		g->o->progress(g->o->ctx, step, "start", g->cmd[step], lm_now_ms() - g->t0);
}

static void
step_start(golden_run *g, int step)
{
	step_begin(g, step, 1);
}

static void
step_end(golden_run *g, const char *state, const char *msg)
{
	cJSON_AddStringToObject(g->cur, "state", state);
	cJSON_AddNumberToObject(g->cur, "ms", (double)(lm_now_ms() - g->ts));
	if (msg)
		cJSON_AddStringToObject(g->cur, "message", msg);
	if (g->o->progress)
		g->o->progress(g->o->ctx, g->step, state, msg, lm_now_ms() - g->t0);
}

/* A step that does not run: its entry, and one progress line ("skipped: why"), not two. */
static void
step_skip(golden_run *g, int step, const char *why)
{
	step_begin(g, step, 0);
	step_end(g, "skipped", why);
}

/* Ends the build as state with message; returns rc. */
static int
finish(golden_run *g, const char *state, const char *message, int rc)
{
	cJSON_ReplaceItemInObjectCaseSensitive(g->r, "state", cJSON_CreateString(state));
	if (message)
		cJSON_AddStringToObject(g->r, "message", message);
	return rc;
}

/* Runs step i: its entry and its progress lines, or one "skipped" line when its row says why it
 * does not run. LM_OK, or the failure's code with msg (GOLDEN_MSG_MAX bytes) its message. */
static int
run_step(golden_run *g, int i, char *msg)
{
	const golden_step *s = &golden_steps[i];
	const char *why = s->skip ? s->skip(g) : NULL;
	int rc;

	if (why) {
		step_skip(g, i, why);
		return LM_OK;
	}
	step_start(g, i);
	msg[0] = '\0';
	if ((rc = s->run(g, msg)) != LM_OK) {
		step_end(g, "failed", msg);
		return rc;
	}
	step_end(g, "done", msg[0] ? msg : NULL);
	return LM_OK;
}

/* After a failure: the build VM, once made, stopped when it runs and deleted unless keep (their
 * failures are recorded in their steps only). */
static void
cleanup(golden_run *g)
{
	char msg[GOLDEN_MSG_MAX];

	if (!g->made)
		return;
	if (g->running)
		run_step(g, GOLDEN_STOP, msg);
	run_step(g, GOLDEN_DELETE, msg);
}

/* The table, in order (pull only with a pull). The first step to fail ends the build, in its
 * state (fail_state, else "failed") with its message, and the clean-up follows; a soft step's
 * failure does not. */
static int
run_steps(golden_run *g)
{
	char msg[GOLDEN_MSG_MAX];
	int rc;

	for (int i = g->o->pull ? GOLDEN_PULL : GOLDEN_CLONE; i < GOLDEN_NSTEPS; i++) {
		if ((rc = run_step(g, i, msg)) == LM_OK || golden_steps[i].soft)
			continue;
		finish(g, g->fail_state ? g->fail_state : "failed", msg, rc);
		cleanup(g);
		return rc;
	}
	return finish(g, "published", NULL, LM_OK);
}

/* A dry run: every step that would run, with its command, "planned". */
static int
run_planned(golden_run *g)
{
	for (int i = g->o->pull ? GOLDEN_PULL : GOLDEN_CLONE; i < GOLDEN_NSTEPS; i++) {
		cJSON *s = cJSON_CreateObject();

		cJSON_AddStringToObject(s, "step", golden_steps[i].name);
		cJSON_AddStringToObject(s, "command", g->cmd[i]);
		cJSON_AddStringToObject(s, "state", "planned");
		cJSON_AddItemToArray(g->steps, s);
	}
	return finish(g, "planned", "dry run: nothing was run", LM_OK);
}

/* With pull_pick, a name for the pull that no VM of lume's listing has and that is not the
 * build VM's: o->source when free, else o->source-2, -3, ... (up to -99), into out; *picked
 * says whether it differs. A listing that fails is an error: the pull would land on an
 * existing VM, which Lume then keeps instead of pulling. */
static int
pick_source(char out[IMAGE_NAME_MAX + 1], int *picked, const golden_opts *o, char *err)
{
	lume_vm **vms = NULL;
	size_t n = 0;
	char msg[LM_ERRLEN];
	int rc = LM_EFAIL;

	*picked = 0;
	snprintf(out, IMAGE_NAME_MAX + 1, "%s", o->source);
	if (lume_list(&vms, &n, o->deploy.lume, msg) != LM_OK)
		return lm_err(err, LM_EFAIL, "--pull without NAME: cannot list Lume's VMs to find a free name: %s", msg);
	for (int k = 1; k < 100; k++) {
		int taken = strcmp(out, o->build) == 0;

		for (size_t i = 0; i < n && !taken; i++)
			taken = strcmp(vms[i]->name, out) == 0;
		if (!taken) {
			rc = LM_OK;
			break;
		}
		*picked = 1;
		if (lm_fmt(out, IMAGE_NAME_MAX + 1, "%.*s-%d", IMAGE_NAME_MAX - 3, o->source, k + 1) != LM_OK)
			break;
	}
	for (size_t i = 0; i < n; i++)
		lume_vm_free(vms[i]);
	free(vms);
	return rc == LM_OK ? LM_OK : lm_err(err, LM_EFAIL, "--pull without NAME: %s and %s-2 to -99 are all taken: "
	    "name the pulled VM (golden --pull %s NAME IMAGE:TAG)", o->source, o->source, o->pull);
}

/* The names: VM names, the registries, the organization, the tags, and the reference they make
 * (g->repo, g->tag, g->reference, g->push_ref under a fresh nonce tag). */
static int
check_names(golden_run *g, char *err)
{
	const golden_opts *o = g->o;
	const char *colon = strchr(o->image_tag, ':');
	int rc;

	if (!image_vm_name_ok(o->source) || !image_vm_name_ok(o->build))
		return lm_err(err, LM_EINPUT, "VM names are letters, digits, . _ - (at most %d): %s", IMAGE_NAME_MAX,
		    image_vm_name_ok(o->source) ? o->build : o->source);
	if (strcmp(o->source, o->build) == 0)
		return lm_err(err, LM_EINPUT, "the build VM must not be the source %s: it is cloned, changed and deleted",
		    o->source);
	g->registry = o->registry ? o->registry : "ghcr.io";
	g->org = o->organization ? o->organization : "trycua";
	if (!registry_host_ok(g->registry, NULL) || (o->pull_registry && !registry_host_ok(o->pull_registry, NULL)))
		return lm_err(err, LM_EINPUT, "--registry: expected HOST[:PORT]");
	if (!registry_repo_ok(g->org) || strchr(g->org, '/'))
		return lm_err(err, LM_EINPUT, "--organization: expected lowercase letters, digits, . _ -");
	for (size_t i = 0; i < o->ntags; i++)
		if (!registry_tag_ok(o->tags[i]))
			return lm_err(err, LM_EINPUT, "--additional-tags: %s is not a tag", o->tags[i]);
	snprintf(g->repo, sizeof g->repo, "%s/%.*s", g->org, (int)(colon - o->image_tag), o->image_tag);
	if (!registry_name_ok(g->registry, g->repo, NULL))
		return lm_err(err, LM_EINPUT, "IMAGE:TAG: %s/%.100s... is longer than %d bytes", g->registry, g->repo,
		    REGISTRY_NAME_MAX);
	snprintf(g->tag, sizeof g->tag, "%s", colon + 1);
	snprintf(g->reference, sizeof g->reference, "%s/%s:%s", g->registry, g->repo, g->tag);
	if ((rc = golden_nonce_tag(&g->pushed, err)) != LM_OK)
		return rc;
	snprintf(g->push_ref, sizeof g->push_ref, "%.*s:%s", (int)(colon - o->image_tag), o->image_tag, g->pushed.tag);
	return LM_OK;
}

/* The result as it stands before any step: "failed" until one says otherwise. asked: the source
 * the caller named, before pick_source. */
static int
result_new(golden_run *g, const char *asked, int picked)
{
	const golden_opts *o = g->o;

	if ((g->r = cJSON_CreateObject()) == NULL)
		return LM_EFAIL;
	cJSON_AddStringToObject(g->r, "source", o->source);
	if (o->pull)
		cJSON_AddStringToObject(g->r, "pull", o->pull);
	if (picked) {
		char note[2 * IMAGE_NAME_MAX + 64];

		snprintf(note, sizeof note, "%s is taken (a VM of that name exists): pulling %s as %s", asked, o->pull,
		    o->source);
		cJSON_AddStringToObject(g->r, "sourcePicked", note);
	}
	cJSON_AddStringToObject(g->r, "build", o->build);
	cJSON_AddStringToObject(g->r, "image", o->image_tag);
	cJSON_AddStringToObject(g->r, "reference", g->reference);
	cJSON_AddStringToObject(g->r, "registry", g->registry);
	cJSON_AddStringToObject(g->r, "state", "failed");
	cJSON_AddFalseToObject(g->r, "pushed");
	cJSON_AddFalseToObject(g->r, "recorded");
	cJSON_AddBoolToObject(g->r, "kept", 0);
	g->steps = cJSON_AddArrayToObject(g->r, "steps");
	return LM_OK;
}

int
golden_build(cJSON **out, const golden_opts *o, char *err)
{
	golden_run g = {.o = o};
	char source[IMAGE_NAME_MAX + 1];
	const char *asked = o->source;
	golden_opts mine;
	int rc, picked = 0;

	*out = NULL;
	if (!golden_image_tag_ok(o->image_tag))
		return lm_err(err, LM_EINPUT, "IMAGE:TAG: expected name:tag as lume push takes it, e.g. macos-tahoe-shim:26.5");
	if (o->pull && !golden_image_tag_ok(o->pull))
		return lm_err(err, LM_EINPUT, "--pull: expected name:tag as lume pull takes it");
	if (o->pull && o->pull_pick && image_vm_name_ok(o->source)) {
		if ((rc = pick_source(source, &picked, o, err)) != LM_OK)
			return rc;
		mine = *o;
		mine.source = source;
		g.o = o = &mine;
	}
	if ((rc = check_names(&g, err)) != LM_OK)
		return rc;
	if (result_new(&g, asked, picked) != LM_OK) {
		cJSON_Delete(g.r);
		golden_pushed_free(&g.pushed);
		return lm_err(err, LM_EFAIL, "out of memory");
	}
	*out = g.r;
	g.t0 = lm_now_ms();
	if (golden_plan(&g) != LM_OK)
		rc = lm_err(err, LM_EFAIL, "out of memory");
	else
		rc = o->dry_run ? run_planned(&g) : run_steps(&g);
	if (rc != LM_OK && err && !cJSON_HasObjectItem(g.r, "message"))
		lm_err(err, rc, "golden build failed");
	else if (rc != LM_OK && err)
		lm_err(err, rc, "%s", lm_jstr(g.r, "message"));
	cJSON_Delete(g.key);
	cJSON_Delete(g.rec);
	golden_pushed_free(&g.pushed);
	cJSON_Delete(g.vrec);
	for (int i = 0; i < GOLDEN_NSTEPS; i++)
		free(g.cmd[i]);
	return rc;
}
