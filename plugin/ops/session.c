/* session: see session.h. */
#include "ops/session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/image.h"
#include "core/ledger.h"
#include "core/util.h"

const char *
session_why_state(int why)
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

cJSON *
session_result_new(const guest_target *t, const char *state)
{
	cJSON *r = cJSON_CreateObject();

	cJSON_AddStringToObject(r, "vm", t->name);
	cJSON_AddStringToObject(r, "state", state);
	return r;
}

void
session_set_state(cJSON *r, const char *state, const char *message)
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
connect_vm(cJSON *r, guest_target *t, const session_opts *o)
{
	ssh_opts so = o->ssh;
	ssh_conn *c = NULL;
	char err[LM_ERRLEN];
	int why = 0;

	so.deadline_ms = lm_now_ms() + (int64_t)o->timeout_s * 1000;
	if (guest_connect(&c, &why, t, &so, o->lume, o->wait_s, err) != LM_OK) {
		session_set_state(r, why ? session_why_state(why) : "unreachable", err);
		return NULL;
	}
	if (t->host)
		cJSON_AddStringToObject(r, "address", t->host);
	if (ssh_known_hosts_notes(c) != NULL)
		cJSON_AddStringToObject(r, "knownHostsNote", ssh_known_hosts_notes(c));
	return c;
}

/* Who the VM is, read on the Mac that runs it (--hosts: what its host's session said; a Lume
 * name: this machine; --host: nobody, so the guest's chip and no build), and its ledger key. */
static cJSON *
key_for(session_vm *s, const guest_target *t, const session_opts *o)
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

static void add_facts(cJSON *r, const session_vm *s);

/* Connects and reads the guest's facts into s, and adds them and the key to r; with x, on the
 * one exec of a deploy (deploy_exec.h), which *x then holds open. On failure r has the state and
 * the reason, and s holds nothing. */
int
session_open_exec(session_vm *s, cJSON *r, guest_target *t, const session_opts *o, deploy_exec **x)
{
	char msg[LM_ERRLEN];

	memset(s, 0, sizeof *s);
	if ((s->c = connect_vm(r, t, o)) == NULL)
		return LM_EFAIL;
	if ((x ? deploy_exec_open(x, s->c, o->info->sha256, o->force, o->confirm_timeout, o->confirm_settle, &s->f, msg)
	    : guest_facts_read(&s->f, s->c, msg)) != LM_OK) {
		session_set_state(r, strstr(msg, "timed out") ? "timeout" : "failed", msg);
		ssh_close(s->c);
		s->c = NULL;
		return LM_EFAIL;
	}
	s->key = key_for(s, t, o);
	add_facts(r, s);
	return LM_OK;
}

int
session_open(session_vm *s, cJSON *r, guest_target *t, const session_opts *o)
{
	return session_open_exec(s, r, t, o, NULL);
}

/* Ends the session; r gets "sshExecs", the channels the operation opened, "roundTrips"
 * (ssh_round_trips) and "gateWaitMs" (ssh_gate_wait_ms). */
void
session_close(session_vm *s, cJSON *r)
{
	if (s->c && r && !cJSON_HasObjectItem(r, "sshExecs"))
		cJSON_AddNumberToObject(r, "sshExecs", ssh_exec_count(s->c));
	if (s->c && r && !cJSON_HasObjectItem(r, "roundTrips")) {
		unsigned total, after;
		cJSON *rt = cJSON_AddObjectToObject(r, "roundTrips");

		ssh_round_trips(s->c, &total, &after);
		cJSON_AddNumberToObject(rt, "total", total);
		cJSON_AddNumberToObject(rt, "afterHandshake", after);
		cJSON_AddNumberToObject(r, "gateWaitMs", (double)ssh_gate_wait_ms(s->c));
	}
	cJSON_Delete(s->key);
	guest_facts_clear(&s->f);
	ssh_close(s->c);
	memset(s, 0, sizeof *s);
}

/* Who the VM is, in a result or a record: the reference, the Mac's facts and where they
 * came from, why there is no digest; what the guest's image.json says, as its claim. */
static void
add_identity(cJSON *o, const session_vm *s)
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
add_facts(cJSON *r, const session_vm *s)
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

cJSON *
session_record_new(const char *kind, const guest_target *t, const session_opts *o)
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

cJSON *
session_record_full(const cJSON *r, const cJSON *rec)
{
	static const char *const who[] = {"image", "hostSource", "hostNote", "hostPreference", "noDigest", "guestClaims"};
	cJSON *full = cJSON_Duplicate(rec, 1);
	const cJSON *v;

	for (size_t i = 0; full && i < sizeof who / sizeof who[0]; i++)
		if ((v = cJSON_GetObjectItemCaseSensitive(r, who[i])) != NULL && !cJSON_HasObjectItem(full, who[i]))
			cJSON_AddItemToObject(full, who[i], cJSON_Duplicate(v, 1));
	return full;
}

/* Writes rec under key, with who the VM is as vm_open put it in r (add_identity: every kind
 * of record carries it); a ledger failure turns a good result into "failed". */
void
session_record(cJSON *r, const session_opts *o, const cJSON *key, const cJSON *rec)
{
	cJSON *full = session_record_full(r, rec);
	char err[LM_ERRLEN];
	int rc;

	rc = full ? ledger_append(o->state, key, full, err) : lm_err(err, LM_EFAIL, "out of memory");
	cJSON_Delete(full);
	if (rc != LM_OK) {
		cJSON_AddStringToObject(r, "ledgerError", err);
		session_set_state(r, "failed", err);
	}
}

/* session.h */
int
session_run_script(cJSON *r, ssh_conn *c, rscript script, const char *arg, const char *field, int *code)
{
	const char *a[] = {GUEST_ROOT, arg, NULL};
	char msg[LM_ERRLEN];
	cJSON *res;

	if (guest_run_json(&res, code, c, script, a, NULL, msg) != LM_OK) {
		session_set_state(r, strstr(msg, "timed out") ? "timeout" : "failed", msg);
		return LM_EFAIL;
	}
	cJSON_AddItemToObject(r, field, res);
	return LM_OK;
}

int
session_exit_code(cJSON *const *results, size_t n)
{
	int refused = 0, failed = 0;

	for (size_t i = 0; i < n; i++) {
		const char *s = cJSON_GetObjectItemCaseSensitive(results[i], "state")->valuestring;

		if (strcmp(s, "refused") == 0)
			refused = 1;
		else if (strcmp(s, "unchanged") != 0 && strcmp(s, "deployed") != 0 && strcmp(s, "rolled-back") != 0 &&
		    strcmp(s, "skipped") != 0 && strcmp(s, "ok") != 0 && strcmp(s, "probed") != 0 &&
		    strcmp(s, "benchmarked") != 0 && strcmp(s, "validated") != 0)
			failed = 1;
	}
	return failed ? 1 : refused ? 3 : 0;
}
