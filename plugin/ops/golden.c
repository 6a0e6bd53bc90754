/* golden: see golden.h. */
#include "ops/golden.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "net/guest.h"
#include "core/image.h"
#include "core/ledger.h"
#include "net/lume.h"
#include "net/registry.h"
#include "core/util.h"
#include "ops/golden_publish.h"
#include "ops/validate.h"
#include "ops/verdicts.h"

static const char *const step_names[GOLDEN_NSTEPS] = {
	"pull", "clone", "run", "ssh", "deploy", "workload", "stamp", "stop", "push", "digest", "tag", "record", "attach",
	"delete",
};

const char *
golden_step_name(int step)
{
	return step >= 0 && step < GOLDEN_NSTEPS ? step_names[step] : "?";
}

int
golden_image_tag_ok(const char *s)
{
	const char *colon = s ? strchr(s, ':') : NULL;
	size_t ilen, tlen;

	if (colon == NULL || strchr(colon + 1, ':') != NULL)
		return 0;
	ilen = (size_t)(colon - s), tlen = strlen(colon + 1);
	if (ilen == 0 || ilen > 200 || tlen == 0 || tlen > 128 || strchr("/.-", s[0]) || strchr(".-", colon[1]))
		return 0;
	if (strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789._/-") != ilen)
		return 0;
	return strspn(colon + 1, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") == tlen;
}

int
golden_registry_ok(const char *s)
{
	size_t n;

	if (s == NULL || *s == '\0' || strlen(s) > 253)
		return 0;
	if (*s == '[') {
		const char *close = strchr(s, ']');

		return close && close > s + 1 && strspn(s + 1, "0123456789abcdefABCDEF:") == (size_t)(close - s - 1) &&
		    close[1] == ':' && close[2] && strspn(close + 2, "0123456789") == strlen(close + 2);
	}
	n = strcspn(s, ":");
	if (n == 0 || strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.-") != n || s[0] == '-')
		return 0;
	return s[n] == '\0' || (s[n + 1] && strlen(s + n + 1) <= 5 && strspn(s + n + 1, "0123456789") == strlen(s + n + 1));
}

static const char *
kstr(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

cJSON *
golden_key(const cJSON *deploy_key, const char *digest)
{
	ledger_identity id = {
		.digest = digest, .guest_os = kstr(deploy_key, "guestOS"), .guest_build = kstr(deploy_key, "guestBuild"),
		.guest_model = kstr(deploy_key, "guestModel"), .host_chip = kstr(deploy_key, "hostChip"),
		.host_model = kstr(deploy_key, "hostModel"), .host_os = kstr(deploy_key, "hostOS"),
		.host_build = kstr(deploy_key, "hostBuild"),
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

/* One build as it runs. */
typedef struct {
	const golden_opts *o;
	cJSON *r, *steps, *cur;
	int64_t t0, ts;
	int step;
	char *cmd[GOLDEN_NSTEPS];       /* each step's command, for the plan and the result */
	char repo[320], tag[160], reference[640];
	const char *registry, *org;
	golden_pushed pushed;           /* the push under its own tag (golden_publish.h) */
	char push_ref[256];             /* IMAGE:<that tag>, as lume push takes it */
	validate_opts vo;               /* the workload step's: deploy.validate, its pass deferred */
	cJSON *vrec;                    /* that pass's record, filed under the pushed digest; owned */
} build;

/* Adds the step's entry; announce: its "start" progress line too. */
static void
step_begin(build *g, int step, int announce)
{
	g->step = step;
	g->ts = lm_now_ms();
	g->cur = cJSON_CreateObject();
	cJSON_AddStringToObject(g->cur, "step", step_names[step]);
	cJSON_AddStringToObject(g->cur, "command", g->cmd[step] ? g->cmd[step] : "");
	cJSON_AddItemToArray(g->steps, g->cur);
	if (announce && g->o->progress)
		g->o->progress(g->o->ctx, step, "start", g->cmd[step], lm_now_ms() - g->t0);
}

static void
step_start(build *g, int step)
{
	step_begin(g, step, 1);
}

static void
step_end(build *g, const char *state, const char *msg)
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
step_skip(build *g, int step, const char *why)
{
	step_begin(g, step, 0);
	step_end(g, "skipped", why);
}

/* Ends the build as state with message; returns rc. */
static int
finish(build *g, const char *state, const char *message, int rc)
{
	cJSON_ReplaceItemInObjectCaseSensitive(g->r, "state", cJSON_CreateString(state));
	if (message)
		cJSON_AddStringToObject(g->r, "message", message);
	return rc;
}

static char *
argv_text(const char *const *argv)
{
	lm_buf b = {0};

	if (lume_argv_text(&b, argv) < 0) {
		lm_buf_free(&b);
		return NULL;
	}
	return b.data ? b.data : strdup("");
}

static char *
text(const char *fmt, const char *a, const char *b)
{
	lm_buf t = {0};

	if (lm_buf_addf(&t, fmt, a, b ? b : "") < 0) {
		lm_buf_free(&t);
		return NULL;
	}
	return t.data;
}

/* Fills g->cmd: every step's concrete command. */
static int
plan(build *g)
{
	const golden_opts *o = g->o;
	const char *lume = o->deploy.lume;
	lm_buf b = {0};
	int loopback;

	if (o->pull) {
		const char *a[10] = {lume, "pull", o->pull, o->source};
		size_t n = 4;

		if (o->pull_registry)
			a[n++] = "--registry", a[n++] = o->pull_registry;
		if (o->pull_organization)
			a[n++] = "--organization", a[n++] = o->pull_organization;
		g->cmd[GOLDEN_PULL] = argv_text(a);
	}
	{
		const char *a[] = {lume, "clone", o->source, o->build, NULL};

		g->cmd[GOLDEN_CLONE] = argv_text(a);
	}
	{
		const char *a[] = {lume, "run", o->build, "--no-display", NULL};
		char *t = argv_text(a);

		g->cmd[GOLDEN_RUN] = t ? text("%s (detached)%s", t, NULL) : NULL;
		free(t);
	}
	{
		const char *a[] = {lume, "get", o->build, "--format", "json", NULL};
		char *t = argv_text(a), wait[64];

		snprintf(wait, sizeof wait, " (until running with SSH, at most %d s)", o->deploy.wait_s);
		g->cmd[GOLDEN_SSH] = t ? text("%s%s", t, wait) : NULL;
		free(t);
	}
	g->cmd[GOLDEN_DEPLOY] = text("deploy %s --payload %s --force: upload, verify, probe stock and shimmed against "
	    "the profile, activate only on a pass", o->build, o->deploy.info ? o->deploy.info->sha256 : "?");
	g->cmd[GOLDEN_WORKLOAD] = text(o->model ? "validate --model %s" : "none (no --model)", o->model, NULL);
	{
		const char *a[] = {GUEST_ROOT, NULL};
		remote_cmd *stamp_cmd;

		if (rcmd_script(&stamp_cmd, RSCRIPT_STAMP, a) == LM_OK)
			g->cmd[GOLDEN_STAMP] = text("%s < image.json%s", rcmd_text(stamp_cmd), NULL);
		rcmd_free(stamp_cmd);
	}
	{
		const char *a[] = {lume, "stop", o->build, NULL};

		g->cmd[GOLDEN_STOP] = argv_text(a);
	}
	{
		const char *a[10] = {lume, "push", o->build, g->push_ref}; /* the build's own tag, none else */
		size_t n = 4;

		if (o->registry)
			a[n++] = "--registry", a[n++] = o->registry;
		if (o->organization)
			a[n++] = "--organization", a[n++] = o->organization;
		g->cmd[GOLDEN_PUSH] = argv_text(a);
	}
	loopback = strncmp(g->registry, "127.", 4) == 0 || strncmp(g->registry, "localhost", 9) == 0 ||
	    strncmp(g->registry, "[::1]", 5) == 0;
	if (lm_buf_addf(&b, "GET %s://%s/v2/%s/manifests/%s: the manifest lume pushed, its digest the SHA-256 of its "
	    "bytes", loopback ? "http" : "https", g->registry, g->repo, g->pushed.tag) == 0)
		g->cmd[GOLDEN_DIGEST] = b.data;
	else
		lm_buf_free(&b);
	b = (lm_buf){0};
	if (lm_buf_addf(&b, "PUT %s://%s/v2/%s/manifests/%s", loopback ? "http" : "https", g->registry, g->repo,
	    g->tag) == 0) {
		int ok = 1;

		for (size_t i = 0; i < o->ntags && ok; i++)
			ok = lm_buf_addf(&b, ", %s", o->tags[i]) == 0;
		if (ok && lm_buf_addf(&b, ": those bytes; DELETE .../manifests/%s where the registry deletes tags; GET "
		    "each tag back: it must name the pushed digest", g->pushed.tag) == 0)
			g->cmd[GOLDEN_TAG] = b.data, b.data = NULL;
	}
	lm_buf_free(&b);
	g->cmd[GOLDEN_RECORD] = text(o->model ? "ledger %s/ledger: the workload's validate record and one record of "
	    "kind golden, verdict pass, under imageDigest <the pushed digest>, image %s as their label" : "ledger %s/ledger: "
	    "one record of kind golden, verdict pass, under imageDigest <the pushed digest>, image %s as its label",
	    o->deploy.state, g->reference);
	g->cmd[GOLDEN_ATTACH] = o->deploy.verdicts && o->deploy.verdicts->signing_key ? text("ledger push %s "
	    "(signed by %s): the verdict as an OCI artifact whose subject is the pushed manifest", g->reference,
	    o->deploy.verdicts->signing_key) : text("none: no signing-key in the config file", NULL, NULL);
	{
		const char *a[] = {lume, "delete", o->build, "--force", NULL};

		g->cmd[GOLDEN_DELETE] = o->keep ? text("none: --keep keeps %s, stopped", o->build, NULL) : argv_text(a);
	}
	for (int i = o->pull ? 0 : 1; i < GOLDEN_NSTEPS; i++)
		if (g->cmd[i] == NULL)
			return LM_EFAIL;
	return LM_OK;
}

/* Stops the build VM when it runs, and deletes it unless keep. */
static void
cleanup(build *g, int running)
{
	const golden_opts *o = g->o;
	char err[LM_ERRLEN];

	if (running) {
		step_start(g, GOLDEN_STOP);
		if (lume_stop(o->deploy.lume, o->build, lm_now_ms() + GOLDEN_SHORT_S * 1000, err) != LM_OK)
			step_end(g, "failed", err);
		else
			step_end(g, "done", NULL);
	}
	if (o->keep) {
		cJSON_ReplaceItemInObjectCaseSensitive(g->r, "kept", cJSON_CreateTrue());
		step_skip(g, GOLDEN_DELETE, "--keep: the build VM is kept");
		return;
	}
	step_start(g, GOLDEN_DELETE);
	if (lume_delete(o->deploy.lume, o->build, lm_now_ms() + GOLDEN_SHORT_S * 1000, err) != LM_OK)
		step_end(g, "failed", err);
	else
		step_end(g, "done", NULL);
}

/* A step failed: it ends "failed", the build too with msg, and the build VM is cleaned up
 * (stopped when running is 1, then deleted unless keep; running -1: nothing made yet). */
static int
fail(build *g, const char *msg, int rc, int running)
{
	step_end(g, "failed", msg);
	finish(g, "failed", msg, rc);
	if (running >= 0)
		cleanup(g, running);
	return rc;
}

/* Writes the stamp into the build VM's GUEST_ROOT/image.json in one exec. */
static int
stamp(build *g, const char *json, char *err)
{
	const golden_opts *o = g->o;
	const char *a[] = {GUEST_ROOT, NULL};
	guest_target *t = NULL;
	ssh_conn *c = NULL;
	ssh_opts so = o->deploy.ssh;
	remote_cmd *cmd = NULL;
	ssh_result res = {0};
	int why = 0, rc;

	so.deadline_ms = lm_now_ms() + (int64_t)o->deploy.timeout_s * 1000;
	if ((rc = guest_target_lume(&t, o->build, o->deploy.ssh.user, err)) != LM_OK)
		return rc;
	t->port = o->port;
	if ((rc = guest_connect(&c, &why, t, &so, o->deploy.lume, o->deploy.wait_s, err)) != LM_OK)
		goto done;
	if ((rc = rcmd_script(&cmd, RSCRIPT_STAMP, a)) != LM_OK) {
		rc = lm_err(err, LM_EFAIL, "out of memory");
		goto done;
	}
	if ((rc = ssh_exec(c, cmd, json, strlen(json), &res, err)) != LM_OK)
		goto done;
	if (res.signal[0] || res.exit_code != 0)
		rc = lm_err(err, LM_EFAIL, "writing image.json in the guest failed (exit %d): %.200s", res.exit_code,
		    res.err.data ? res.err.data : "");
	ssh_result_free(&res);
done:
	rcmd_free(cmd);
	ssh_close(c);
	guest_target_free(t);
	return rc;
}

/* The golden record: the verdict and the figures of the deploy, under key. */
static cJSON *
record_new(build *g, const cJSON *dep, const char *digest, const char *base)
{
	const golden_opts *o = g->o;
	const cJSON *install = cJSON_GetObjectItemCaseSensitive(dep, "install");
	cJSON *rec = cJSON_CreateObject();
	char host[256] = "";

	gethostname(host, sizeof host - 1);
	cJSON_AddStringToObject(rec, "kind", "golden");
	ledger_add_str(rec, "vm", o->build);
	ledger_add_str(rec, "controller", host);
	cJSON_AddStringToObject(rec, "verdict", "pass");
	ledger_add_str(rec, "image", g->reference);
	cJSON_AddStringToObject(rec, "digest", digest);
	if (base)
		cJSON_AddStringToObject(rec, "baseDigest", base);
	else
		cJSON_AddNullToObject(rec, "baseDigest");
	ledger_add_str(rec, "sourceVm", o->source); /* not "source": imported records say "registry" there */
	if (o->pull)
		ledger_add_str(rec, "pull", o->pull);
	cJSON_AddStringToObject(rec, "payloadSha256", o->deploy.info->sha256);
	ledger_add_str(rec, "profile", o->deploy.info->profile);
	ledger_add_str(rec, "workload", o->deploy.info->workload);
	ledger_add_str(rec, "target", o->deploy.info->target);
	cJSON_AddItemToObject(rec, "reasons", cJSON_CreateArray());
	cJSON_AddItemToObject(rec, "stock", ledger_probe_summary(cJSON_GetObjectItemCaseSensitive(install, "stock")));
	cJSON_AddItemToObject(rec, "shimmed", ledger_probe_summary(cJSON_GetObjectItemCaseSensitive(install,
	    "shimmed")));
	if (cJSON_GetObjectItemCaseSensitive(g->r, "validate")) /* the workload's own figures */
		cJSON_AddItemToObject(rec, "validation", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(
		    cJSON_GetObjectItemCaseSensitive(g->r, "validate"), "validation"), 1));
	return rec;
}

/* The workload validation's passing record, which validate_one handed back instead of writing
 * it under the build VM's key (vo.defer_pass), filed once, under key (the pushed image's),
 * labelled with the reference and the digest as the golden record is: a VM pulled from the tag
 * then passes the validate gate of a workload with "requireValidation" without running
 * llama-perplexity again. Nothing to do without --model. */
static int
record_validation(build *g, const cJSON *key, const char *digest, char *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(g->vrec, "verdict");

	if (cJSON_GetObjectItemCaseSensitive(g->r, "validate") == NULL)
		return LM_OK;
	if (!cJSON_IsString(v) || strcmp(v->valuestring, "pass") != 0)
		return lm_err(err, LM_EFAIL, "the build VM's validation handed back no passing record");
	cJSON_DeleteItemFromObjectCaseSensitive(g->vrec, "noDigest");
	cJSON_DeleteItemFromObjectCaseSensitive(g->vrec, "image");
	cJSON_DeleteItemFromObjectCaseSensitive(g->vrec, "digest");
	ledger_add_str(g->vrec, "image", g->reference);
	cJSON_AddStringToObject(g->vrec, "digest", digest);
	cJSON_AddStringToObject(g->vrec, "golden", "validated on the build VM before the push");
	return ledger_append(g->o->deploy.state, key, g->vrec, err);
}

static void
now_utc(char out[32])
{
	time_t t = time(NULL);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* The deploy options of a step on the build VM: o's, with full validation, and with pull the
 * base's reference (REGISTRY/ORG/BASE:TAG, in pref) labelling the verdict. */
static void
build_opts(session_opts *d, const golden_opts *o, char *pref, size_t plen)
{
	*d = o->deploy;
	d->force = 1; /* full validation: whatever the ledger says and whatever is installed */
	d->dry_run = 0;
	d->require_validation = 0; /* the workload step validates, when asked */
	if (o->pull && d->image == NULL) {
		snprintf(pref, plen, "%s/%s/%s", o->pull_registry ? o->pull_registry : "ghcr.io",
		    o->pull_organization ? o->pull_organization : "trycua", o->pull);
		d->image = pref;
	}
}

/* Runs fn (deploy_one, validate_one) on the build VM; *res gets its result. */
static int
run_on_build(build *g, int (*fn)(cJSON **, guest_target *, const session_opts *, char *), session_opts *d,
    char *pref, size_t plen, cJSON **res, char *err)
{
	guest_target *t = NULL;
	int rc;

	*res = NULL;
	build_opts(d, g->o, pref, plen);
	if (d->validate) {
		/* A pass is filed once, under the pushed digest (record_validation); a fail at once. */
		g->vo = *d->validate;
		g->vo.defer_pass = 1;
		d->validate = &g->vo;
	}
	if ((rc = guest_target_lume(&t, g->o->build, g->o->deploy.ssh.user, err)) != LM_OK)
		return rc;
	t->port = g->o->port;
	rc = fn(res, t, d, err);
	guest_target_free(t);
	if (rc == LM_OK && *res == NULL)
		rc = lm_err(err, LM_EFAIL, "out of memory");
	return rc;
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

int
golden_build(cJSON **out, const golden_opts *o, char *err)
{
	build g = {.o = o};
	cJSON *dep = NULL, *key = NULL, *rec = NULL;
	char msg[LM_ERRLEN], base[IMAGE_DIGEST_LEN + 1] = "", digest[REGISTRY_DIGEST_LEN + 1] = "", when[32];
	const char *colon, *st;
	char *json = NULL, source[IMAGE_NAME_MAX + 1];
	const char *asked = o->source;
	golden_opts mine;
	int rc = LM_EFAIL, running = 0, picked = 0;

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
	if (!image_vm_name_ok(o->source) || !image_vm_name_ok(o->build))
		return lm_err(err, LM_EINPUT, "VM names are letters, digits, . _ - (at most %d): %s", IMAGE_NAME_MAX,
		    image_vm_name_ok(o->source) ? o->build : o->source);
	if (strcmp(o->source, o->build) == 0)
		return lm_err(err, LM_EINPUT, "the build VM must not be the source %s: it is cloned, changed and deleted",
		    o->source);
	g.registry = o->registry ? o->registry : "ghcr.io";
	g.org = o->organization ? o->organization : "trycua";
	if (!golden_registry_ok(g.registry) || (o->pull_registry && !golden_registry_ok(o->pull_registry)))
		return lm_err(err, LM_EINPUT, "--registry: expected HOST[:PORT]");
	if (*g.org == '\0' || strspn(g.org, "abcdefghijklmnopqrstuvwxyz0123456789._-") != strlen(g.org) ||
	    strlen(g.org) > 100)
		return lm_err(err, LM_EINPUT, "--organization: expected lowercase letters, digits, . _ -");
	for (size_t i = 0; i < o->ntags; i++)
		if (o->tags[i][0] == '\0' || o->tags[i][0] == '.' || o->tags[i][0] == '-' || strlen(o->tags[i]) > 128 ||
		    strspn(o->tags[i], "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") !=
		    strlen(o->tags[i]))
			return lm_err(err, LM_EINPUT, "--additional-tags: %s is not a tag", o->tags[i]);
	colon = strchr(o->image_tag, ':');
	snprintf(g.repo, sizeof g.repo, "%s/%.*s", g.org, (int)(colon - o->image_tag), o->image_tag);
	snprintf(g.tag, sizeof g.tag, "%s", colon + 1);
	snprintf(g.reference, sizeof g.reference, "%s/%s:%s", g.registry, g.repo, g.tag);
	if ((rc = golden_nonce_tag(&g.pushed, err)) != LM_OK)
		return rc;
	snprintf(g.push_ref, sizeof g.push_ref, "%.*s:%s", (int)(colon - o->image_tag), o->image_tag, g.pushed.tag);

	if ((g.r = cJSON_CreateObject()) == NULL)
		return lm_err(err, LM_EFAIL, "out of memory");
	*out = g.r;
	cJSON_AddStringToObject(g.r, "source", o->source);
	if (o->pull)
		cJSON_AddStringToObject(g.r, "pull", o->pull);
	if (picked) {
		char note[2 * IMAGE_NAME_MAX + 64];

		snprintf(note, sizeof note, "%s is taken (a VM of that name exists): pulling %s as %s", asked, o->pull,
		    o->source);
		cJSON_AddStringToObject(g.r, "sourcePicked", note);
	}
	cJSON_AddStringToObject(g.r, "build", o->build);
	cJSON_AddStringToObject(g.r, "image", o->image_tag);
	cJSON_AddStringToObject(g.r, "reference", g.reference);
	cJSON_AddStringToObject(g.r, "registry", g.registry);
	cJSON_AddStringToObject(g.r, "state", "failed");
	cJSON_AddFalseToObject(g.r, "pushed");
	cJSON_AddFalseToObject(g.r, "recorded");
	cJSON_AddBoolToObject(g.r, "kept", 0);
	g.steps = cJSON_AddArrayToObject(g.r, "steps");
	g.t0 = lm_now_ms();
	if (plan(&g) != LM_OK) {
		rc = lm_err(err, LM_EFAIL, "out of memory");
		goto done;
	}
	if (o->dry_run) {
		for (int i = o->pull ? 0 : 1; i < GOLDEN_NSTEPS; i++) {
			cJSON *s = cJSON_CreateObject();

			cJSON_AddStringToObject(s, "step", step_names[i]);
			cJSON_AddStringToObject(s, "command", g.cmd[i]);
			cJSON_AddStringToObject(s, "state", "planned");
			cJSON_AddItemToArray(g.steps, s);
		}
		rc = finish(&g, "planned", "dry run: nothing was run", LM_OK);
		goto done;
	}
	if (o->pull) {
		step_start(&g, GOLDEN_PULL);
		if ((rc = lume_pull(o->deploy.lume, o->pull, o->source, o->pull_registry, o->pull_organization,
		    lm_now_ms() + GOLDEN_LONG_S * 1000, msg)) != LM_OK) {
			rc = fail(&g, msg, rc, -1);
			goto done;
		}
		step_end(&g, "done", NULL);
	}
	/* The base image's digest, when the source was pulled (a VM of `lume create` has none). */
	if (image_digest_local(base, o->deploy.lume, o->source, NULL, msg) != LM_OK)
		base[0] = '\0';
	if (base[0])
		cJSON_AddStringToObject(g.r, "baseDigest", base);
	else
		cJSON_AddNullToObject(g.r, "baseDigest");

	step_start(&g, GOLDEN_CLONE);
	if ((rc = lume_clone(o->deploy.lume, o->source, o->build, lm_now_ms() + GOLDEN_LONG_S * 1000, msg)) != LM_OK) {
		rc = fail(&g, msg, rc, -1);
		goto done;
	}
	step_end(&g, "done", NULL);

	step_start(&g, GOLDEN_RUN);
	if ((rc = lume_run_detached(o->deploy.lume, o->build, NULL, NULL, msg)) != LM_OK) {
		rc = fail(&g, msg, rc, 0);
		goto done;
	}
	running = 1;
	step_end(&g, "done", NULL);

	step_start(&g, GOLDEN_SSH);
	{
		lume_vm *vm = NULL;

		rc = lume_resolve(&vm, o->deploy.lume, o->build, o->deploy.wait_s, 0, msg);
		if (rc == LM_OK)
			snprintf(msg, sizeof msg, "%s", vm->ip);
		lume_vm_free(vm);
	}
	if (rc != LM_OK) {
		rc = fail(&g, msg, LM_EFAIL, running);
		goto done;
	}
	step_end(&g, "done", msg);

	step_start(&g, GOLDEN_DEPLOY);
	{
		session_opts d;
		char pref[640];

		if ((rc = run_on_build(&g, deploy_one, &d, pref, sizeof pref, &dep, msg)) != LM_OK)
			cJSON_Delete(dep), dep = NULL;
		if (rc != LM_OK) {
			rc = fail(&g, msg, LM_EFAIL, running);
			goto done;
		}
	}
	cJSON_AddItemToObject(g.r, "deploy", dep);
	st = cJSON_GetObjectItemCaseSensitive(dep, "state")->valuestring;
	if (strcmp(st, "deployed") != 0 && strcmp(st, "unchanged") != 0) {
		const char *m = kstr(dep, "message");
		int named = strcmp(st, "validation-failed") == 0 || strcmp(st, "refused") == 0;

		/* The build's state names validation-failed and refused; any other goes in the message. */
		snprintf(msg, sizeof msg, "%s%s%s; nothing pushed", named ? "" : st, named || !m ? "" : ": ", m ? m : named ?
		    st : "");
		step_end(&g, "failed", msg);
		rc = strcmp(st, "refused") == 0 ? LM_EREFUSED : LM_EFAIL;
		finish(&g, named ? st : "failed", msg, rc);
		cleanup(&g, running);
		goto done;
	}
	step_end(&g, "done", st);

	if (o->deploy.validate == NULL)
		step_skip(&g, GOLDEN_WORKLOAD, "no --model");
	else {
		session_opts d;
		char pref[640];
		cJSON *val = NULL;

		step_start(&g, GOLDEN_WORKLOAD);
		rc = run_on_build(&g, validate_one, &d, pref, sizeof pref, &val, msg);
		g.vrec = val ? cJSON_DetachItemFromObjectCaseSensitive(val, "record") : NULL;
		if (g.vrec) { /* the validation's own time, not the record step's */
			now_utc(when);
			cJSON_AddStringToObject(g.vrec, "time", when);
		}
		if (rc == LM_OK && (st = cJSON_GetObjectItemCaseSensitive(val, "state")->valuestring) &&
		    strcmp(st, "validated") != 0) {
			const char *m = kstr(val, "message");

			rc = LM_EFAIL;
			snprintf(msg, sizeof msg, "workload validation: %s%s%s; nothing pushed", st, m ? ": " : "", m ? m : "");
			cJSON_AddItemToObject(g.r, "validate", val);
			step_end(&g, "failed", msg);
			finish(&g, strcmp(st, "validation-failed") == 0 ? st : "failed", msg, rc);
			cleanup(&g, running);
			goto done;
		}
		if (rc != LM_OK) {
			cJSON_Delete(val);
			rc = fail(&g, msg, LM_EFAIL, running);
			goto done;
		}
		cJSON_AddItemToObject(g.r, "validate", val);
		step_end(&g, "done", "validated");
	}

	step_start(&g, GOLDEN_STAMP);
	now_utc(when);
	if ((json = golden_stamp_json(g.reference, base[0] ? base : NULL, o->deploy.info, "pass", when)) == NULL) {
		rc = lm_err(msg, LM_EFAIL, "out of memory");
	} else
		rc = stamp(&g, json, msg);
	if (rc != LM_OK) {
		rc = fail(&g, msg, LM_EFAIL, running);
		goto done;
	}
	cJSON_AddItemToObject(g.r, "stamp", cJSON_Parse(json));
	step_end(&g, "done", NULL);

	step_start(&g, GOLDEN_STOP);
	if ((rc = lume_stop(o->deploy.lume, o->build, lm_now_ms() + GOLDEN_SHORT_S * 1000, msg)) != LM_OK) {
		rc = fail(&g, msg, LM_EFAIL, 0);
		goto done;
	}
	running = 0;
	step_end(&g, "done", NULL);

	step_start(&g, GOLDEN_PUSH);
	if ((rc = lume_push(o->deploy.lume, o->build, g.push_ref, o->registry, o->organization, NULL, 0,
	    lm_now_ms() + GOLDEN_LONG_S * 1000, msg)) != LM_OK) {
		char m2[LM_ERRLEN + 200];

		snprintf(m2, sizeof m2, "push of %s to registry %s failed: %s; not pushed, nothing recorded", o->image_tag,
		    g.registry, msg);
		rc = fail(&g, m2, LM_EFAIL, 0);
		goto done;
	}
	cJSON_ReplaceItemInObjectCaseSensitive(g.r, "pushed", cJSON_CreateTrue());
	step_end(&g, "done", NULL);

	/* The digest is the pushed manifest's, read from the tag only this run knows; the public tags
	 * are pointed at those very bytes and read back before anything is recorded or signed. */
	step_start(&g, GOLDEN_DIGEST);
	if ((rc = golden_publish_resolve(&g.pushed, g.registry, g.repo, msg)) != LM_OK) {
		char m2[LM_ERRLEN + 300];

		snprintf(m2, sizeof m2, "pushed %s but could not read its digest from %s: %s; nothing recorded",
		    o->image_tag, g.registry, msg);
		rc = fail(&g, m2, LM_EFAIL, 0);
		goto done;
	}
	memcpy(digest, g.pushed.digest, sizeof digest);
	cJSON_AddStringToObject(g.r, "digest", digest);
	step_end(&g, "done", digest);

	step_start(&g, GOLDEN_TAG);
	rc = golden_publish_point(&g.pushed, g.tag, o->tags, o->ntags, msg);
	{
		cJSON *pt = cJSON_AddObjectToObject(g.r, "pushTag");

		cJSON_AddStringToObject(pt, "tag", g.pushed.tag);
		cJSON_AddBoolToObject(pt, "removed", g.pushed.removed);
		if (!g.pushed.removed)
			cJSON_AddStringToObject(pt, "message", g.pushed.kept[0] ? g.pushed.kept : "not asked: the tagging failed");
	}
	if (rc != LM_OK) {
		char m2[LM_ERRLEN + 400];

		snprintf(m2, sizeof m2, "pushed %s as %s (%s) but could not tag it: %s; nothing recorded", o->image_tag,
		    g.push_ref, digest, msg);
		rc = fail(&g, m2, LM_EFAIL, 0);
		goto done;
	}
	if (!g.pushed.removed)
		snprintf(msg, sizeof msg, "%s stays (%.400s)", g.pushed.tag, g.pushed.kept);
	step_end(&g, "done", g.pushed.removed ? NULL : msg);

	step_start(&g, GOLDEN_RECORD);
	if ((key = golden_key(cJSON_GetObjectItemCaseSensitive(dep, "key"), digest)) == NULL ||
	    (rec = record_new(&g, dep, digest, base[0] ? base : NULL)) == NULL) {
		rc = lm_err(msg, LM_EFAIL, "out of memory");
	} else if ((rc = record_validation(&g, key, digest, msg)) == LM_OK) {
		cJSON_AddStringToObject(rec, "time", when);
		rc = ledger_append(o->deploy.state, key, rec, msg);
	}
	if (rc != LM_OK) {
		char m2[LM_ERRLEN + 200];

		snprintf(m2, sizeof m2, "pushed %s (%s) but could not record it in the ledger: %s", o->image_tag, digest,
		    msg);
		rc = fail(&g, m2, LM_EFAIL, 0);
		goto done;
	}
	cJSON_AddItemToObject(g.r, "key", cJSON_Duplicate(key, 1));
	cJSON_AddItemToObject(g.r, "record", cJSON_Duplicate(rec, 1));
	cJSON_ReplaceItemInObjectCaseSensitive(g.r, "recorded", cJSON_CreateTrue());
	step_end(&g, "done", NULL);

	/* The verdict travels with the image: signed, attached in its registry (verdicts.h). */
	if (o->deploy.verdicts == NULL || o->deploy.verdicts->signing_key == NULL)
		step_skip(&g, GOLDEN_ATTACH, "no signing-key in the config file: the verdict stays in this ledger");
	else {
		cJSON *att = NULL;

		step_start(&g, GOLDEN_ATTACH);
		if ((rc = verdicts_push(&att, o->deploy.state, g.reference, digest, o->deploy.verdicts, msg)) != LM_OK) {
			char m2[LM_ERRLEN + 1400];

			cJSON_Delete(att);
			snprintf(m2, sizeof m2, "pushed and recorded %s (%s), but its verdict was not attached: %s; `lume-metal "
			    "ledger push %s` attaches it", o->image_tag, digest, msg, g.reference);
			rc = fail(&g, m2, rc == LM_EINPUT ? LM_EINPUT : LM_EFAIL, 0);
			goto done;
		}
		cJSON_AddItemToObject(g.r, "attached", att);
		step_end(&g, "done", kstr(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(att, "artifacts"), 0), "digest"));
	}

	cleanup(&g, 0);
	rc = finish(&g, "published", NULL, LM_OK);
done:
	if (rc != LM_OK && err && *out && !cJSON_HasObjectItem(g.r, "message"))
		lm_err(err, rc, "golden build failed");
	else if (rc != LM_OK && err && *out)
		lm_err(err, rc, "%s", kstr(g.r, "message"));
	free(json);
	cJSON_Delete(key);
	cJSON_Delete(rec);
	golden_pushed_free(&g.pushed);
	cJSON_Delete(g.vrec);
	for (int i = 0; i < GOLDEN_NSTEPS; i++)
		free(g.cmd[i]);
	return rc;
}
