/* golden_steps: the steps of a golden build, one function each, and their table (golden_int.h).
 * A step does its one thing and says how it went; golden.c's loop starts, ends and fails them
 * all the same way, and cleans up after a failure. */
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
#include "core/util.h"
#include "ops/golden_int.h"
#include "ops/verdicts.h"

static void
now_utc(char out[32])
{
	time_t t = time(NULL);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Writes the stamp into the build VM's GUEST_ROOT/image.json in one exec. */
static int
stamp(golden_run *g, const char *json, char *err)
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

/* The golden record: the verdict and the figures of the deploy, for the pushed digest. */
static cJSON *
record_new(golden_run *g)
{
	const golden_opts *o = g->o;
	const cJSON *install = cJSON_GetObjectItemCaseSensitive(g->dep, "install");
	cJSON *rec = cJSON_CreateObject();
	char host[256] = "";

	gethostname(host, sizeof host - 1);
	cJSON_AddStringToObject(rec, "kind", "golden");
	ledger_add_str(rec, "vm", o->build);
	ledger_add_str(rec, "controller", host);
	cJSON_AddStringToObject(rec, "verdict", "pass");
	ledger_add_str(rec, "image", g->reference);
	cJSON_AddStringToObject(rec, "digest", g->pushed.digest);
	if (g->base[0])
		cJSON_AddStringToObject(rec, "baseDigest", g->base);
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
record_validation(golden_run *g, const cJSON *key, const char *digest, char *err)
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
run_on_build(golden_run *g, int (*fn)(cJSON **, guest_target *, const session_opts *, char *), session_opts *d,
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


static int
pull(golden_run *g, char *msg)
{
	const golden_opts *o = g->o;

	return lume_pull(o->deploy.lume, o->pull, o->source, o->pull_registry, o->pull_organization,
	    lm_now_ms() + GOLDEN_LONG_S * 1000, msg);
}

/* The clone, after the base image's digest (when the source was pulled; a VM of `lume create`
 * has none). */
static int
clone(golden_run *g, char *msg)
{
	const golden_opts *o = g->o;
	char why[LM_ERRLEN];
	int rc;

	if (image_digest_local(g->base, o->deploy.lume, o->source, NULL, why) != LM_OK)
		g->base[0] = '\0';
	if (g->base[0])
		cJSON_AddStringToObject(g->r, "baseDigest", g->base);
	else
		cJSON_AddNullToObject(g->r, "baseDigest");
	rc = lume_clone(o->deploy.lume, o->source, o->build, lm_now_ms() + GOLDEN_LONG_S * 1000, msg);
	g->made = rc == LM_OK;
	return rc;
}

static int
run(golden_run *g, char *msg)
{
	int rc = lume_run_detached(g->o->deploy.lume, g->o->build, NULL, NULL, msg);

	g->running = rc == LM_OK;
	return rc;
}

/* Until the build VM runs with SSH: its address. */
static int
ssh(golden_run *g, char *msg)
{
	lume_vm *vm = NULL;
	int rc = lume_resolve(&vm, g->o->deploy.lume, g->o->build, g->o->deploy.wait_s, 0, msg);

	if (rc == LM_OK)
		snprintf(msg, LM_ERRLEN, "%s", vm->ip);
	lume_vm_free(vm);
	return rc == LM_OK ? LM_OK : LM_EFAIL;
}

/* deploy_one with full validation; anything but deployed or unchanged fails the build, which
 * takes the deploy's state when it is validation-failed or refused. */
static int
deploy(golden_run *g, char *msg)
{
	session_opts d;
	char pref[640];
	const char *st, *m;
	int named;

	if (run_on_build(g, deploy_one, &d, pref, sizeof pref, &g->dep, msg) != LM_OK) {
		cJSON_Delete(g->dep);
		g->dep = NULL;
		return LM_EFAIL;
	}
	cJSON_AddItemToObject(g->r, "deploy", g->dep);
	st = cJSON_GetObjectItemCaseSensitive(g->dep, "state")->valuestring;
	if (strcmp(st, "deployed") == 0 || strcmp(st, "unchanged") == 0) {
		snprintf(msg, LM_ERRLEN, "%s", st);
		return LM_OK;
	}
	m = lm_jstr(g->dep, "message");
	named = strcmp(st, "validation-failed") == 0 || strcmp(st, "refused") == 0;
	/* The build's state names validation-failed and refused; any other goes in the message. */
	snprintf(msg, LM_ERRLEN, "%s%s%s; nothing pushed", named ? "" : st, named || !m ? "" : ": ", m ? m : named ?
	    st : "");
	g->fail_state = named ? st : NULL;
	return strcmp(st, "refused") == 0 ? LM_EREFUSED : LM_EFAIL;
}

static const char *
no_model(golden_run *g)
{
	return g->o->deploy.validate == NULL ? "no --model" : NULL;
}

/* validate_one on the build VM; its passing record is kept for the pushed digest (g->vrec). */
static int
workload(golden_run *g, char *msg)
{
	session_opts d;
	char pref[640];
	cJSON *val = NULL;
	const char *st, *m;
	int rc = run_on_build(g, validate_one, &d, pref, sizeof pref, &val, msg);

	g->vrec = val ? cJSON_DetachItemFromObjectCaseSensitive(val, "record") : NULL;
	if (g->vrec) { /* the validation's own time, not the record step's */
		now_utc(g->when);
		cJSON_AddStringToObject(g->vrec, "time", g->when);
	}
	if (rc == LM_OK && (st = cJSON_GetObjectItemCaseSensitive(val, "state")->valuestring) &&
	    strcmp(st, "validated") != 0) {
		m = lm_jstr(val, "message");
		snprintf(msg, LM_ERRLEN, "workload validation: %s%s%s; nothing pushed", st, m ? ": " : "", m ? m : "");
		cJSON_AddItemToObject(g->r, "validate", val);
		g->fail_state = strcmp(st, "validation-failed") == 0 ? st : NULL;
		return LM_EFAIL;
	}
	if (rc != LM_OK) {
		cJSON_Delete(val);
		return LM_EFAIL;
	}
	cJSON_AddItemToObject(g->r, "validate", val);
	snprintf(msg, LM_ERRLEN, "validated");
	return LM_OK;
}

static int
stamp_step(golden_run *g, char *msg)
{
	char *json;
	int rc;

	now_utc(g->when);
	json = golden_stamp_json(g->reference, g->base[0] ? g->base : NULL, g->o->deploy.info, "pass", g->when);
	if (json == NULL)
		return lm_err(msg, LM_EFAIL, "out of memory");
	if ((rc = stamp(g, json, msg)) == LM_OK)
		cJSON_AddItemToObject(g->r, "stamp", cJSON_Parse(json));
	free(json);
	return rc == LM_OK ? LM_OK : LM_EFAIL;
}

/* A stop that fails is not tried again by the clean-up. */
static int
stop(golden_run *g, char *msg)
{
	g->running = 0;
	return lume_stop(g->o->deploy.lume, g->o->build, lm_now_ms() + GOLDEN_SHORT_S * 1000, msg) == LM_OK ? LM_OK
	    : LM_EFAIL;
}

/* lume push under the tag only this run knows (the public tags come after the digest). */
static int
push(golden_run *g, char *msg)
{
	const golden_opts *o = g->o;
	char why[LM_ERRLEN];

	if (lume_push(o->deploy.lume, o->build, g->push_ref, o->registry, o->organization, NULL, 0,
	    lm_now_ms() + GOLDEN_LONG_S * 1000, why) != LM_OK) {
		snprintf(msg, LM_ERRLEN + 200, "push of %s to registry %s failed: %s; not pushed, nothing recorded",
		    o->image_tag, g->registry, why);
		return LM_EFAIL;
	}
	cJSON_ReplaceItemInObjectCaseSensitive(g->r, "pushed", cJSON_CreateTrue());
	return LM_OK;
}

/* The digest is the pushed manifest's, read from the tag only this run knows; the public tags
 * are pointed at those very bytes and read back before anything is recorded or signed. */
static int
digest(golden_run *g, char *msg)
{
	char why[LM_ERRLEN];

	if (golden_publish_resolve(&g->pushed, g->registry, g->repo, why) != LM_OK) {
		snprintf(msg, LM_ERRLEN + 300, "pushed %s but could not read its digest from %s: %s; nothing recorded",
		    g->o->image_tag, g->registry, why);
		return LM_EFAIL;
	}
	cJSON_AddStringToObject(g->r, "digest", g->pushed.digest);
	snprintf(msg, LM_ERRLEN, "%s", g->pushed.digest);
	return LM_OK;
}

static int
tag(golden_run *g, char *msg)
{
	char why[LM_ERRLEN];
	int rc = golden_publish_point(&g->pushed, g->tag, g->o->tags, g->o->ntags, why);
	cJSON *pt = cJSON_AddObjectToObject(g->r, "pushTag");

	cJSON_AddStringToObject(pt, "tag", g->pushed.tag);
	cJSON_AddBoolToObject(pt, "removed", g->pushed.removed);
	if (!g->pushed.removed)
		cJSON_AddStringToObject(pt, "message", g->pushed.kept[0] ? g->pushed.kept : "not asked: the tagging failed");
	if (rc != LM_OK) {
		snprintf(msg, LM_ERRLEN + 400, "pushed %s as %s (%s) but could not tag it: %s; nothing recorded",
		    g->o->image_tag, g->push_ref, g->pushed.digest, why);
		return LM_EFAIL;
	}
	if (!g->pushed.removed)
		snprintf(msg, LM_ERRLEN, "%s stays (%.400s)", g->pushed.tag, g->pushed.kept);
	return LM_OK;
}

/* The workload's validate record (with --model), then the golden record, under the key of the
 * pushed digest. */
static int
record(golden_run *g, char *msg)
{
	const char *digest = g->pushed.digest;
	char why[LM_ERRLEN];
	int rc;

	if ((g->key = golden_key(cJSON_GetObjectItemCaseSensitive(g->dep, "key"), digest)) == NULL ||
	    (g->rec = record_new(g)) == NULL) {
		rc = lm_err(why, LM_EFAIL, "out of memory");
	} else if ((rc = record_validation(g, g->key, digest, why)) == LM_OK) {
		cJSON_AddStringToObject(g->rec, "time", g->when);
		rc = ledger_append(g->o->deploy.state, g->key, g->rec, why);
	}
	if (rc != LM_OK) {
		snprintf(msg, LM_ERRLEN + 200, "pushed %s (%s) but could not record it in the ledger: %s", g->o->image_tag,
		    digest, why);
		return LM_EFAIL;
	}
	cJSON_AddItemToObject(g->r, "key", cJSON_Duplicate(g->key, 1));
	cJSON_AddItemToObject(g->r, "record", cJSON_Duplicate(g->rec, 1));
	cJSON_ReplaceItemInObjectCaseSensitive(g->r, "recorded", cJSON_CreateTrue());
	return LM_OK;
}

static const char *
no_signing_key(golden_run *g)
{
	const verdicts_cfg *v = g->o->deploy.verdicts;

	return v == NULL || v->signing_key == NULL ? "no signing-key in the config file: the verdict stays in this ledger"
	    : NULL;
}

/* The verdict travels with the image: signed, attached in its registry (verdicts.h). */
static int
attach(golden_run *g, char *msg)
{
	const golden_opts *o = g->o;
	cJSON *att = NULL;
	char why[LM_ERRLEN];
	const char *d;
	int rc;

	if ((rc = verdicts_push(&att, o->deploy.state, g->reference, g->pushed.digest, o->deploy.verdicts, why)) !=
	    LM_OK) {
		cJSON_Delete(att);
		snprintf(msg, LM_ERRLEN + 1400, "pushed and recorded %s (%s), but its verdict was not attached: %s; "
		    "`lume-metal ledger push %s` attaches it", o->image_tag, g->pushed.digest, why, g->reference);
		return rc == LM_EINPUT ? LM_EINPUT : LM_EFAIL;
	}
	cJSON_AddItemToObject(g->r, "attached", att);
	if ((d = lm_jstr(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(att, "artifacts"), 0), "digest")))
		snprintf(msg, LM_ERRLEN, "%s", d);
	return LM_OK;
}

static const char *
kept(golden_run *g)
{
	if (!g->o->keep)
		return NULL;
	cJSON_ReplaceItemInObjectCaseSensitive(g->r, "kept", cJSON_CreateTrue());
	return "--keep: the build VM is kept";
}

static int
delete(golden_run *g, char *msg)
{
	return lume_delete(g->o->deploy.lume, g->o->build, lm_now_ms() + GOLDEN_SHORT_S * 1000, msg);
}

const golden_step golden_steps[GOLDEN_NSTEPS] = {
	[GOLDEN_PULL] = {"pull", pull, NULL, 0},
	[GOLDEN_CLONE] = {"clone", clone, NULL, 0},
	[GOLDEN_RUN] = {"run", run, NULL, 0},
	[GOLDEN_SSH] = {"ssh", ssh, NULL, 0},
	[GOLDEN_DEPLOY] = {"deploy", deploy, NULL, 0},
	[GOLDEN_WORKLOAD] = {"workload", workload, no_model, 0},
	[GOLDEN_STAMP] = {"stamp", stamp_step, NULL, 0},
	[GOLDEN_STOP] = {"stop", stop, NULL, 0},
	[GOLDEN_PUSH] = {"push", push, NULL, 0},
	[GOLDEN_DIGEST] = {"digest", digest, NULL, 0},
	[GOLDEN_TAG] = {"tag", tag, NULL, 0},
	[GOLDEN_RECORD] = {"record", record, NULL, 0},
	[GOLDEN_ATTACH] = {"attach", attach, no_signing_key, 0},
	[GOLDEN_DELETE] = {"delete", delete, kept, 1},
};
