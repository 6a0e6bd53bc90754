/* deploy: see deploy.h. */
#include "deploy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "deploy_exec.h"
#include "deploy_int.h"
#include "identity.h"
#include "image.h"
#include "ledger.h"
#include "util.h"
#include "validate.h"

/* The guest-side steps, fixed scripts given their inputs as quoted arguments. */
static const char probe_script[] =
    /* a payload for another target cannot run here: say so, not "Exec format error" */
    "case $(uname -s) in Darwin) t=macos ;; *) t=linux-sim ;; esac\n"
    "[ \"$t\" = \"$2\" ] || { rm -rf \"$1\"; echo \"the probe payload is for $2 but this guest runs $t; pass --target $t "
    "(or --payload FILE of that target, or --no-probe)\" >&2; exit 3; }\n"
    "cd \"$1\" || exit 1\n"
    "trap 'rm -rf \"$1\"' EXIT\n"
    "tar -xzf payload.tar.gz bin/lume-metal-probe bin/run-with-shim lib profile.json shim.env || exit 1\n"
    "./bin/lume-metal-probe >stock.json || exit 1\n"
    "./bin/run-with-shim \"$1/bin/lume-metal-probe\" --expect profile.json --stock stock.json >shim.json; rc=$?\n"
    "printf '{\"stock\":%s,\"shimmed\":%s,\"pass\":%s}\\n' \"$(cat stock.json)\" \"$(cat shim.json)\" "
    "\"$([ $rc -eq 0 ] && echo true || echo false)\"\n";
static const char scratch_script[] = "mktemp -d \"${TMPDIR:-/tmp}/lume-metal-probe.XXXXXX\"";
static const char status_script[] =
    "for r in current previous; do f=\"$1/$r/bin/status.sh\"; [ -f \"$f\" ] && exec sh \"$f\"; done\n"
    "printf '{\"root\":null,\"current\":null,\"previous\":null,\"releases\":[],\"installed\":false}\\n'";
static const char rollback_script[] =
    "for r in current previous; do f=\"$1/$r/bin/rollback.sh\"; [ -f \"$f\" ] && exec sh \"$f\" \"$2\"; done\n"
    "printf '{\"result\":\"nothing-to-do\",\"to\":\"%s\",\"reason\":\"nothing is installed\"}\\n' \"$2\"";

const char *
deploy_why_state(int why)
{
	switch (why) {
	case SSH_TIMEOUT: return "timeout";
	case SSH_AUTH: return "auth-failed";
	case SSH_HOSTKEY_MISMATCH: return "hostkey-mismatch";
	case SSH_HOSTKEY_UNKNOWN: return "refused";
	case SSH_NOFDS: return "failed"; /* the controller's descriptors, not the VM's fault */
	default: return "unreachable";
	}
}

static cJSON *
result_new(const guest_target *t, const char *state)
{
	cJSON *r = cJSON_CreateObject();

	cJSON_AddStringToObject(r, "vm", t->name);
	cJSON_AddStringToObject(r, "state", state);
	return r;
}

static void
set_state(cJSON *r, const char *state, const char *message)
{
	cJSON *s = cJSON_CreateString(state);

	if (!cJSON_ReplaceItemInObjectCaseSensitive(r, "state", s))
		cJSON_AddItemToObject(r, "state", s); /* r had none (a sub-result such as "probe") */
	if (message != NULL) {
		cJSON_DeleteItemFromObject(r, "message");
		cJSON_AddStringToObject(r, "message", message);
	}
}

/* Connects within the VM's own deadline; on failure r gets the named state. */
static ssh_conn *
connect_vm(cJSON *r, guest_target *t, const deploy_opts *o)
{
	ssh_opts so = o->ssh;
	ssh_conn *c = NULL;
	char err[LM_ERRLEN];
	int why = 0;

	so.deadline_ms = lm_now_ms() + (int64_t)o->timeout_s * 1000;
	if (guest_connect(&c, &why, t, &so, o->lume, o->wait_s, err) != LM_OK) {
		set_state(r, why ? deploy_why_state(why) : "unreachable", err);
		return NULL;
	}
	if (t->host)
		cJSON_AddStringToObject(r, "address", t->host);
	return c;
}

/* Who the VM is, read on the Mac that runs it (--hosts: what its host's session said; a Lume
 * name: this machine; --host: nobody, so the guest's chip and no build), and its ledger key. */
static cJSON *
key_for(vm_session *s, const guest_target *t, const deploy_opts *o)
{
	const cJSON *img = s->f.image ? cJSON_GetObjectItemCaseSensitive(s->f.image, "image") : NULL;
	ledger_identity id = {0};
	char msg[LM_ERRLEN];

	s->image = o->image ? o->image : cJSON_IsString(img) ? img->valuestring : NULL;
	s->host_source = NULL;
	s->mac.pref = -2;
	if (t->via) {
		if (t->mac) {
			s->mac = *t->mac;
			s->host_source = "host";
		} else
			snprintf(s->host_note, sizeof s->host_note, "%s", t->mac_why ? t->mac_why : "its Mac host's facts were not read");
		if (t->digest)
			snprintf(s->digest, sizeof s->digest, "%s", t->digest);
		else
			snprintf(s->no_digest, sizeof s->no_digest, "%s", t->no_digest ? t->no_digest : "no digest: not read");
	} else if (t->lume) {
		if (identity_mac_local(&s->mac, msg) == LM_OK)
			s->host_source = "local";
		else
			snprintf(s->host_note, sizeof s->host_note, "%s", msg);
		if (identity_digest_local(s->digest, o->lume, t->lume, t->location, msg) != LM_OK)
			snprintf(s->no_digest, sizeof s->no_digest, "no digest: %.480s", msg);
	} else {
		snprintf(s->host_note, sizeof s->host_note, "--host reaches the VM without its Mac: the chip is the guest's, "
		    "the host build unknown");
		snprintf(s->no_digest, sizeof s->no_digest, "no digest: --host reaches the VM without Lume");
	}
	if (s->host_source == NULL) { /* no Mac answered: the guest's chip, said so */
		memset(&s->mac, 0, sizeof s->mac);
		s->mac.pref = -2;
		snprintf(s->mac.chip, sizeof s->mac.chip, "%s", s->f.chip ? s->f.chip : "");
		s->host_source = "guest";
	}
	id.image = s->image;
	id.digest = *s->digest ? s->digest : NULL;
	id.guest_os = s->f.os;
	id.guest_build = s->f.build;
	id.guest_model = s->f.model;
	id.host_chip = *s->mac.chip ? s->mac.chip : NULL;
	id.host_model = *s->mac.model ? s->mac.model : NULL;
	id.host_os = *s->mac.os ? s->mac.os : NULL;
	id.host_build = *s->mac.build ? s->mac.build : NULL;
	return ledger_key_of(&id);
}

static void add_facts(cJSON *r, const vm_session *s);

/* Connects and reads the guest's facts into s, and adds them and the key to r; with x, on the
 * one exec of a deploy (deploy_exec.h), which *x then holds open. On failure r has the state and
 * the reason, and s holds nothing. */
static int
vm_open_x(vm_session *s, cJSON *r, guest_target *t, const deploy_opts *o, deploy_exec **x)
{
	char msg[LM_ERRLEN];

	memset(s, 0, sizeof *s);
	if ((s->c = connect_vm(r, t, o)) == NULL)
		return LM_EFAIL;
	if ((x ? deploy_exec_open(x, s->c, o->info->sha256, o->force, &s->f, msg) : guest_facts_read(&s->f, s->c, msg)) != LM_OK) {
		set_state(r, strstr(msg, "timed out") ? "timeout" : "failed", msg);
		ssh_close(s->c);
		s->c = NULL;
		return LM_EFAIL;
	}
	s->key = key_for(s, t, o);
	add_facts(r, s);
	return LM_OK;
}

static int
vm_open(vm_session *s, cJSON *r, guest_target *t, const deploy_opts *o)
{
	return vm_open_x(s, r, t, o, NULL);
}

/* Ends the session; r gets "sshExecs", the channels the operation opened. */
static void
vm_close(vm_session *s, cJSON *r)
{
	if (s->c && r && !cJSON_HasObjectItem(r, "sshExecs"))
		cJSON_AddNumberToObject(r, "sshExecs", ssh_exec_count(s->c));
	cJSON_Delete(s->key);
	guest_facts_clear(&s->f);
	ssh_close(s->c);
	memset(s, 0, sizeof *s);
}

/* Who the VM is, in a result or a record: the reference, the Mac's facts and where they
 * came from, why there is no digest; what the guest's image.json says, as its claim. */
static void
add_identity(cJSON *o, const vm_session *s)
{
	const cJSON *img = s->f.image ? cJSON_GetObjectItemCaseSensitive(s->f.image, "image") : NULL;
	const cJSON *dig = s->f.image ? cJSON_GetObjectItemCaseSensitive(s->f.image, "digest") : NULL;

	ledger_add_str(o, "image", s->image);
	cJSON_AddStringToObject(o, "hostSource", s->host_source);
	if (strcmp(s->host_source, "guest") == 0)
		ledger_add_str(o, "hostNote", s->host_note);
	if (s->mac.pref >= 0)
		cJSON_AddBoolToObject(o, "hostPreference", s->mac.pref == 1);
	if (!*s->digest)
		ledger_add_str(o, "noDigest", s->no_digest);
	if (cJSON_IsString(img) || cJSON_IsString(dig)) {
		cJSON *c = cJSON_AddObjectToObject(o, "guestClaims");

		ledger_add_str(c, "image", cJSON_IsString(img) ? img->valuestring : NULL);
		ledger_add_str(c, "digest", cJSON_IsString(dig) ? dig->valuestring : NULL);
	}
}

static void
add_facts(cJSON *r, const vm_session *s)
{
	const guest_facts *f = &s->f;
	cJSON *g = cJSON_AddObjectToObject(r, "guest");
	char label[LEDGER_STR_MAX + 64];

	cJSON_AddStringToObject(g, "os", f->os ? f->os : "");
	cJSON_AddStringToObject(g, "build", f->build ? f->build : "");
	cJSON_AddStringToObject(g, "model", f->model ? f->model : "");
	cJSON_AddStringToObject(g, "chip", f->chip ? f->chip : "");
	if (f->current)
		cJSON_AddStringToObject(g, "current", f->current);
	if (f->previous)
		cJSON_AddStringToObject(g, "previous", f->previous);
	cJSON_AddItemToObject(r, "key", cJSON_Duplicate(s->key, 1));
	add_identity(r, s);
	cJSON_AddStringToObject(r, "imageLabel", ledger_key_label(label, sizeof label, s->key, s->image));
}

/* Runs argv in the guest; *out gets the first line of its stdout (caller frees). */
static int
run_line(cJSON *r, ssh_conn *c, const char *const *argv, char **out)
{
	char err[LM_ERRLEN];
	lm_buf cmd = {0};
	ssh_result res;
	int rc;

	*out = NULL;
	rc = ssh_quote_argv(&cmd, argv) == LM_OK ? ssh_exec(c, cmd.data, NULL, 0, &res, err) : LM_EFAIL;
	lm_buf_free(&cmd);
	if (rc == LM_OK && res.exit_code != 0)
		rc = lm_err(err, LM_EFAIL, "%s %s failed: %.200s", argv[0], argv[1], res.err.data ? res.err.data : "");
	if (rc == LM_OK && (*out = strndup(res.out.data ? res.out.data : "", res.out.data ? strcspn(res.out.data, "\n")
	    : 0)) == NULL)
		rc = lm_err(err, LM_EFAIL, "out of memory");
	ssh_result_free(&res);
	if (rc != LM_OK)
		set_state(r, strstr(err, "timed out") ? "timeout" : "failed", err);
	return rc;
}

/* Uploads the payload into dir as name; r gets bytesSent. */
static int
upload_to(cJSON *r, ssh_conn *c, const deploy_opts *o, const char *dir, const char *name)
{
	char err[LM_ERRLEN];
	uint64_t sent = 0;
	int rc = ssh_upload(c, o->payload, dir, name, &sent, err);

	cJSON_AddNumberToObject(r, "bytesSent", (double)sent);
	if (rc != LM_OK)
		set_state(r, strstr(err, "timed out") ? "timeout" : "failed", err);
	return rc;
}

static cJSON *
record_new(const char *kind, const guest_target *t, const deploy_opts *o)
{
	cJSON *rec = cJSON_CreateObject();
	char host[256] = "";

	gethostname(host, sizeof host - 1);
	cJSON_AddStringToObject(rec, "kind", kind);
	/* Which VM, reached how: a record that refuses others names the one that wrote it. */
	ledger_add_str(rec, "vm", t->name);
	ledger_add_str(rec, "address", t->host);
	ledger_add_str(rec, "host", t->via);
	ledger_add_str(rec, "controller", host);
	if (o->info) {
		cJSON_AddStringToObject(rec, "payloadSha256", o->info->sha256);
		cJSON_AddStringToObject(rec, "profile", o->info->profile);
		cJSON_AddStringToObject(rec, "workload", o->info->workload);
		cJSON_AddStringToObject(rec, "target", o->info->target);
	}
	return rec;
}

/* Writes rec under key, with who the VM is as vm_open put it in r (add_identity: every kind
 * of record carries it); a ledger failure turns a good result into "failed". */
static void
record(cJSON *r, const deploy_opts *o, const cJSON *key, const cJSON *rec)
{
	static const char *const who[] = {"image", "hostSource", "hostNote", "hostPreference", "noDigest", "guestClaims"};
	cJSON *full = cJSON_Duplicate(rec, 1);
	const cJSON *v;
	char err[LM_ERRLEN];
	int rc;

	for (size_t i = 0; full && i < sizeof who / sizeof who[0]; i++)
		if ((v = cJSON_GetObjectItemCaseSensitive(r, who[i])) != NULL && !cJSON_HasObjectItem(full, who[i]))
			cJSON_AddItemToObject(full, who[i], cJSON_Duplicate(v, 1));
	rc = full ? ledger_append(o->state, key, full, err) : lm_err(err, LM_EFAIL, "out of memory");
	cJSON_Delete(full);
	if (rc != LM_OK) {
		cJSON_AddStringToObject(r, "ledgerError", err);
		set_state(r, "failed", err);
	}
}

/* o's string k, or "" (never NULL). */
static const char *
str_of(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(v) ? v->valuestring : "";
}

/* Whether the ledger holds a deploy record of this VM with this payload: last (the key's last
 * deploy record) first, else the key's whole document. A ledger that cannot be read counts as
 * recorded (the deploy goes on as unchanged; status and ledger show name the problem). */
static int
recorded_for(const deploy_opts *o, const cJSON *key, const guest_target *t, const cJSON *last)
{
	char err[LM_ERRLEN];
	cJSON *doc = NULL;
	const cJSON *rec;
	int found = 0;

	if (last && strcmp(str_of(last, "vm"), t->name) == 0 && strcmp(str_of(last, "payloadSha256"),
	    o->info->sha256) == 0)
		return 1;
	if (ledger_load(&doc, o->state, key, err) != LM_OK)
		return 1;
	cJSON_ArrayForEach(rec, cJSON_GetObjectItemCaseSensitive(doc, "records"))
		if (strcmp(str_of(rec, "kind"), "deploy") == 0 && strcmp(str_of(rec, "vm"), t->name) == 0 &&
		    strcmp(str_of(rec, "payloadSha256"), o->info->sha256) == 0 && strcmp(str_of(rec, "verdict"), "pass") == 0)
			found = 1;
	cJSON_Delete(doc);
	return found;
}

/* The workload's process as install.sh confirmed it after the bootstrap ("process" in its
 * JSON), kept in the record as two fields, never the guest's object: its pid and whether the
 * shim was active there. Nothing when the install did not get that far. */
static void
record_process(cJSON *rec, const cJSON *proc)
{
	const cJSON *pid = cJSON_GetObjectItemCaseSensitive(proc, "pid");
	const cJSON *act = cJSON_GetObjectItemCaseSensitive(proc, "shimActive");
	cJSON *p;

	if (!cJSON_IsNumber(pid) || pid->valuedouble < 1 || pid->valuedouble > 2147483647.0 ||
	    (p = cJSON_AddObjectToObject(rec, "process")) == NULL)
		return;
	cJSON_AddNumberToObject(p, "pid", (double)(long)pid->valuedouble);
	if (cJSON_IsBool(act))
		cJSON_AddBoolToObject(p, "shimActive", cJSON_IsTrue(act));
	else
		cJSON_AddNullToObject(p, "shimActive");
}

/* The payload is current but the ledger has no record of its install on this VM (a run that
 * was interrupted or killed after the guest activated it): the record is made from the result
 * install.sh kept in the guest (install.json), marked "reconciled". r's message says which. */
static void
reconcile(cJSON *r, vm_session *s, const guest_target *t, const deploy_opts *o)
{
	static const char *const a[] = {"sh", "-c", "cd \"$HOME/Library/Application Support/lume-metal\" && "
	    "cat install.json", NULL};
	cJSON *res = NULL, *rec;
	const cJSON *stock;
	char msg[LM_ERRLEN];
	int code = 0;

	if (guest_run_json(&res, &code, s->c, a, NULL, msg) != LM_OK || code != 0 ||
	    strcmp(str_of(res, "result"), "installed") != 0 || strcmp(str_of(res, "sha256"), o->info->sha256) != 0 ||
	    !cJSON_IsObject(stock = cJSON_GetObjectItemCaseSensitive(res, "stock"))) {
		set_state(r, "unchanged", "this payload is already current, but the ledger has no record of its "
		    "install on this VM and the guest kept no result for it (install.json): --force validates and "
		    "records it");
		cJSON_Delete(res);
		return;
	}
	rec = record_new("deploy", t, o);
	cJSON_AddStringToObject(rec, "verdict", "pass");
	cJSON_AddItemToObject(rec, "reasons", cJSON_CreateArray());
	cJSON_AddItemToObject(rec, "stock", ledger_probe_summary(stock));
	cJSON_AddItemToObject(rec, "shimmed", ledger_probe_summary(cJSON_GetObjectItemCaseSensitive(res, "shimmed")));
	record_process(rec, cJSON_GetObjectItemCaseSensitive(res, "process"));
	cJSON_AddTrueToObject(rec, "reconciled");
	set_state(r, "unchanged", "this payload is already current; its install was not in the ledger (a run "
	    "interrupted or killed after the guest activated it): recorded now from the guest's install.json");
	cJSON_AddTrueToObject(r, "reconciled");
	record(r, o, s->key, rec);
	cJSON_Delete(rec);
	cJSON_Delete(res);
}

/* The stock probe's answer last recorded for this image version (last: the key's last deploy or
 * golden record), when it passed with this very payload and profile and --force does not ask
 * for a full validation; else NULL. Borrowed from last. */
static const cJSON *
stock_recorded(const cJSON *last, const deploy_opts *o)
{
	const cJSON *stock = last ? cJSON_GetObjectItemCaseSensitive(last, "stock") : NULL;

	if (o->force || stock == NULL || strcmp(str_of(last, "verdict"), "pass") != 0 ||
	    strcmp(str_of(last, "payloadSha256"), o->info->sha256) != 0 ||
	    strcmp(str_of(last, "profile"), o->info->profile) != 0 || !cJSON_IsObject(stock) ||
	    !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(stock, "device")))
		return NULL;
	return stock;
}

/* --dry-run's plan for one VM: the current release (or null), the new one, and what would
 * happen: "install", "unchanged" or "refused" (the state's message says why). */
static void
plan_data(cJSON *r, const vm_session *s, const deploy_opts *o, const char *action)
{
	if (s->f.current)
		cJSON_AddStringToObject(r, "current", s->f.current);
	else
		cJSON_AddNullToObject(r, "current");
	cJSON_AddStringToObject(r, "new", o->info->sha256);
	cJSON_AddStringToObject(r, "action", action);
}

int
deploy_one(cJSON **out, guest_target *t, const deploy_opts *o, char *err)
{
	cJSON *r = result_new(t, "failed"), *last = NULL, *res = NULL, *rec;
	deploy_exec *x = NULL;
	vm_session s;
	const cJSON *v, *known;
	char msg[LM_ERRLEN];
	int code = 0, recorded = 0, rc;
	uint64_t sent = 0;

	(void)err;
	*out = r;
	cJSON_AddStringToObject(r, "sha256", o->info->sha256);
	if (vm_open_x(&s, r, t, o, &x) != LM_OK)
		return LM_OK;
	if (ledger_load_last(&last, &recorded, o->state, s.key, "deploy|golden", msg) != LM_OK) {
		set_state(r, "failed", msg);
		goto done;
	}
	v = last ? cJSON_GetObjectItemCaseSensitive(last, "verdict") : NULL;
	if (cJSON_IsString(v) && strcmp(v->valuestring, "fail") == 0 && !o->force) {
		const char *vm = t->via && strrchr(t->name, '/') ? strrchr(t->name, '/') + 1 : t->name;
		char who[400], why[1024];

		/* One VM's failure refuses every VM of its image version: say whose, and how to clear it. */
		snprintf(why, sizeof why, "this image version is recorded as failing validation; --force validates it "
		    "again: lume-metal deploy %s%s%s --force; refused by the record of %s", t->lume || t->via ? "" : "--host ",
		    vm, t->via ? " --hosts FILE" : "", ledger_record_who(who, sizeof who, last));
		set_state(r, "refused", why);
		if (o->dry_run)
			plan_data(r, &s, o, "refused");
		goto done;
	}
	if (s.f.current && strcmp(s.f.current, o->info->sha256) == 0 && !o->force) {
		set_state(r, "unchanged", "this payload is already current");
		cJSON_AddNumberToObject(r, "bytesSent", 0);
		deploy_exec_skip(x);
		x = NULL;
		if (o->dry_run)
			plan_data(r, &s, o, "unchanged");
		else if (!recorded_for(o, s.key, t, last))
			reconcile(r, &s, t, o);
		goto done;
	}
	/* The workload's own numbers, once per image version (validate.h). */
	if (o->require_validation && validate_gate(r, &s, t, o) != LM_OK)
		goto done;
	if (o->dry_run) {
		cJSON *plan = cJSON_AddArrayToObject(r, "plan");

		cJSON_AddItemToArray(plan, cJSON_CreateString("upload the payload to staging/"));
		cJSON_AddItemToArray(plan, cJSON_CreateString("verify every file, unpack into releases/<sha>/"));
		cJSON_AddItemToArray(plan, cJSON_CreateString("probe stock and shimmed against the profile"));
		cJSON_AddItemToArray(plan, cJSON_CreateString("on a pass: switch current, bootstrap the LaunchAgent"));
		cJSON_AddItemToArray(plan, cJSON_CreateString("record the verdict in the ledger"));
		plan_data(r, &s, o, "install");
		set_state(r, "skipped", recorded ? "dry run: nothing changed (image version recorded)"
		    : "dry run: nothing changed (image version not yet recorded: it would be validated in full)");
		goto done;
	}
	/* This image version's stock answer is recorded with this payload and profile: the guest
	 * runs only the shimmed probe, against it. */
	if ((known = stock_recorded(last, o)) != NULL)
		cJSON_AddStringToObject(r, "stockProbe", "recorded");
	rc = deploy_exec_install(x, o->payload, known, &sent, &res, &code, msg);
	x = NULL;
	cJSON_AddNumberToObject(r, "bytesSent", (double)sent);
	if (rc != LM_OK) {
		set_state(r, strstr(msg, "timed out") ? "timeout" : "failed", msg);
		goto done;
	}
	cJSON_AddItemToObject(r, "install", res);
	{
		const cJSON *result = cJSON_GetObjectItemCaseSensitive(res, "result");
		const cJSON *reason = cJSON_GetObjectItemCaseSensitive(res, "reason");
		const cJSON *stock = cJSON_GetObjectItemCaseSensitive(res, "stock");
		int installed = cJSON_IsString(result) && code == 0 &&
		    (strcmp(result->valuestring, "installed") == 0 || strcmp(result->valuestring, "unchanged") == 0);

		if (installed)
			set_state(r, strcmp(result->valuestring, "unchanged") == 0 ? "unchanged" : "deployed", NULL);
		else
			set_state(r, cJSON_IsObject(stock) ? "validation-failed" : "failed",
			    cJSON_IsString(reason) ? reason->valuestring : "install.sh failed");
		/* A verdict is recorded only when the probe ran: a full disk says nothing of the image. */
		if (cJSON_IsObject(stock)) {
			/* The guest's answers only as a bounded summary: a record stays a few KiB. */
			rec = record_new("deploy", t, o);
			cJSON_AddStringToObject(rec, "verdict", installed ? "pass" : "fail");
			cJSON_AddItemToObject(rec, "reasons", cJSON_CreateArray());
			if (!installed && cJSON_IsString(reason))
				ledger_add_reason(rec, reason->valuestring);
			cJSON_AddItemToObject(rec, "stock", ledger_probe_summary(stock));
			cJSON_AddItemToObject(rec, "shimmed", ledger_probe_summary(cJSON_GetObjectItemCaseSensitive(res,
			    "shimmed")));
			record_process(rec, cJSON_GetObjectItemCaseSensitive(res, "process"));
			if (o->force)
				cJSON_AddTrueToObject(rec, "forced");
			if (stock_recorded(last, o) != NULL)
				cJSON_AddTrueToObject(rec, "stockRecorded");
			record(r, o, s.key, rec);
			cJSON_Delete(rec);
		}
	}
done:
	deploy_exec_skip(x);
	cJSON_Delete(last);
	vm_close(&s, r);
	return LM_OK;
}

/* Uploads the payload to a scratch directory (mktemp -d in the guest) and runs its probe
 * stock and shimmed there; r gets "stock", "shimmed" and "pass". Nothing is installed and the
 * scratch directory is removed. */
static int
probe_in_guest(cJSON *r, ssh_conn *c, const deploy_opts *o)
{
	static const char *const mk[] = {"sh", "-c", scratch_script, NULL};
	char msg[LM_ERRLEN], *dir = NULL;
	cJSON *res = NULL;
	int code = 0, rc = LM_EFAIL;

	if (run_line(r, c, mk, &dir) != LM_OK)
		return LM_EFAIL;
	if (dir[0] != '/') {
		set_state(r, "failed", "mktemp -d in the guest gave no directory");
		goto done;
	}
	if (upload_to(r, c, o, dir, "payload.tar.gz") != LM_OK)
		goto done;
	{
		const char *a[] = {"sh", "-c", probe_script, "sh", dir, o->info->target, NULL};

		if (guest_run_json(&res, &code, c, a, NULL, msg) != LM_OK) {
			set_state(r, strstr(msg, "timed out") ? "timeout" : "failed", msg);
			goto done;
		}
	}
	cJSON_AddItemToObject(r, "stock", cJSON_DetachItemFromObject(res, "stock"));
	cJSON_AddItemToObject(r, "shimmed", cJSON_DetachItemFromObject(res, "shimmed"));
	cJSON_AddBoolToObject(r, "pass", cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(res, "pass")));
	cJSON_Delete(res);
	rc = LM_OK;
done:
	free(dir);
	return rc;
}

int
deploy_probe(cJSON **out, guest_target *t, const deploy_opts *o, char *err)
{
	cJSON *r = result_new(t, "failed");
	vm_session s;

	(void)err;
	*out = r;
	if (vm_open(&s, r, t, o) != LM_OK)
		return LM_OK;
	if (probe_in_guest(r, s.c, o) == LM_OK)
		set_state(r, cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "pass")) ? "probed" : "validation-failed", NULL);
	vm_close(&s, r);
	return LM_OK;
}

/* Runs one of the fixed root scripts; r gets its JSON under field. */
static int
run_root_script(cJSON *r, ssh_conn *c, const char *script, const char *arg, const char *field, int *code)
{
	const char *a[] = {"sh", "-c", script, "sh", GUEST_ROOT, arg, NULL};
	char msg[LM_ERRLEN];
	cJSON *res;

	if (guest_run_json(&res, code, c, a, NULL, msg) != LM_OK) {
		set_state(r, strstr(msg, "timed out") ? "timeout" : "failed", msg);
		return LM_EFAIL;
	}
	cJSON_AddItemToObject(r, field, res);
	return LM_OK;
}

int
deploy_status(cJSON **out, guest_target *t, const deploy_opts *o, char *err)
{
	cJSON *r = result_new(t, "failed"), *last = NULL;
	const cJSON *v;
	vm_session s;
	char msg[LM_ERRLEN];
	int code = 0;

	(void)err;
	*out = r;
	if (vm_open(&s, r, t, o) != LM_OK)
		return LM_OK;
	if (run_root_script(r, s.c, status_script, NULL, "status", &code) != LM_OK)
		goto done;
	if (ledger_load_last(&last, NULL, o->state, s.key, "deploy|golden", msg) != LM_OK) {
		/* A verdict that cannot be read is no "ok": failed, saying which document. */
		cJSON_AddStringToObject(r, "ledgerError", msg);
		set_state(r, "failed", msg);
		goto done;
	}
	v = last ? cJSON_GetObjectItemCaseSensitive(last, "verdict") : NULL;
	cJSON_AddStringToObject(r, "verdict", cJSON_IsString(v) ? v->valuestring : "unrecorded");
	set_state(r, cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(r, "status"),
	    "driftDetected")) ? "drift" : "ok", NULL);
done:
	cJSON_Delete(last);
	vm_close(&s, r);
	return LM_OK;
}

int
deploy_rollback(cJSON **out, guest_target *t, const deploy_opts *o, char *err)
{
	cJSON *r = result_new(t, "failed"), *rec, *res;
	vm_session s;
	const cJSON *result;
	int code = 0;

	(void)err;
	*out = r;
	if (vm_open(&s, r, t, o) != LM_OK)
		return LM_OK;
	if (run_root_script(r, s.c, rollback_script, o->to, "rollback", &code) != LM_OK)
		goto done;
	res = cJSON_GetObjectItemCaseSensitive(r, "rollback");
	result = cJSON_GetObjectItemCaseSensitive(res, "result");
	if (code == 0 && cJSON_IsString(result) && strcmp(result->valuestring, "rolled-back") == 0)
		set_state(r, "rolled-back", NULL);
	else if (code == 0 && cJSON_IsString(result) && strcmp(result->valuestring, "nothing-to-do") == 0)
		set_state(r, "unchanged", "nothing to roll back");
	else {
		const cJSON *reason = cJSON_GetObjectItemCaseSensitive(res, "reason");

		set_state(r, "failed", cJSON_IsString(reason) ? reason->valuestring : "rollback.sh failed");
	}
	/* Back to stock: show the stock answers (the probe, unshimmed, in a scratch directory). */
	if (strcmp(o->to, "none") == 0 && o->payload != NULL &&
	    strcmp(cJSON_GetObjectItemCaseSensitive(r, "state")->valuestring, "failed") != 0) {
		cJSON *p = cJSON_AddObjectToObject(r, "probe");

		if (probe_in_guest(p, s.c, o) != LM_OK) {
			/* The rollback happened; the stock probe after it did not: the VM fails, saying both. */
			const cJSON *m = cJSON_GetObjectItemCaseSensitive(p, "message");
			char why[LM_ERRLEN + 100];

			snprintf(why, sizeof why, "rolled back to none, but the stock probe after it failed: %s",
			    cJSON_IsString(m) ? m->valuestring : "it did not run");
			cJSON_AddStringToObject(r, "probeError", cJSON_IsString(m) ? m->valuestring : "it did not run");
			set_state(r, "failed", why);
		}
	}
	rec = record_new("rollback", t, o);
	/* The release this rollback left, not the probe payload's SHA-256 (that is probePayloadSha256). */
	if (o->info) {
		cJSON_AddStringToObject(rec, "probePayloadSha256", o->info->sha256);
		cJSON_DeleteItemFromObjectCaseSensitive(rec, "payloadSha256");
		cJSON_DeleteItemFromObjectCaseSensitive(rec, "profile");
		cJSON_DeleteItemFromObjectCaseSensitive(rec, "workload");
		cJSON_DeleteItemFromObjectCaseSensitive(rec, "target");
	}
	if (s.f.current)
		cJSON_AddStringToObject(rec, "payloadSha256", s.f.current);
	cJSON_AddStringToObject(rec, "to", o->to);
	if (cJSON_GetObjectItemCaseSensitive(r, "probe"))
		cJSON_AddItemToObject(rec, "stock", ledger_probe_summary(cJSON_GetObjectItemCaseSensitive(
		    cJSON_GetObjectItemCaseSensitive(r, "probe"), "stock")));
	cJSON_AddStringToObject(rec, "result", cJSON_GetObjectItemCaseSensitive(r, "state")->valuestring);
	ledger_add_str(rec, "from", s.f.current);
	record(r, o, s.key, rec);
	cJSON_Delete(rec);
done:
	vm_close(&s, r);
	return LM_OK;
}

int
deploy_exit_code(cJSON *const *results, size_t n)
{
	int refused = 0, failed = 0;

	for (size_t i = 0; i < n; i++) {
		const char *s = cJSON_GetObjectItemCaseSensitive(results[i], "state")->valuestring;

		if (strcmp(s, "refused") == 0)
			refused = 1;
		else if (strcmp(s, "unchanged") != 0 && strcmp(s, "deployed") != 0 && strcmp(s, "rolled-back") != 0 &&
		    strcmp(s, "skipped") != 0 && strcmp(s, "ok") != 0 && strcmp(s, "probed") != 0 &&
		    strcmp(s, "benchmarked") != 0)
			failed = 1;
	}
	return failed ? 1 : refused ? 3 : 0;
}

/* deploy_int.h: the helpers above, for bench_vm.c and validate.c. */
cJSON *
deploy_result_new(const guest_target *t, const char *state)
{
	return result_new(t, state);
}

void
deploy_set_state(cJSON *r, const char *state, const char *message)
{
	set_state(r, state, message);
}

int
deploy_vm_open(vm_session *s, cJSON *r, guest_target *t, const deploy_opts *o)
{
	return vm_open(s, r, t, o);
}

void
deploy_vm_close(vm_session *s, cJSON *r)
{
	vm_close(s, r);
}

void
deploy_record(cJSON *r, const deploy_opts *o, const cJSON *key, const cJSON *rec)
{
	record(r, o, key, rec);
}

cJSON *
deploy_record_new(const char *kind, const guest_target *t, const deploy_opts *o)
{
	return record_new(kind, t, o);
}
