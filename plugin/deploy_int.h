/* deploy_int: deploy.c's per-VM helpers, for deploy.c, bench_vm.c and validate.c only (not an interface
 * of the tool: everything else goes through deploy.h). */
#ifndef LM_DEPLOY_INT_H
#define LM_DEPLOY_INT_H

#include <cjson/cJSON.h>

#include "deploy.h"
#include "identity.h"

/* One VM for the length of an operation: the connection, the guest's facts, who it is (read
 * on its Mac, identity.h), its ledger key. */
typedef struct {
	ssh_conn *c;
	guest_facts f;
	cJSON *key;
	identity_mac mac;          /* the Mac's; with host_source "guest" only the guest's chip */
	const char *host_source;   /* "local" (this machine), "host" (its --hosts session), "guest" */
	char host_note[LM_ERRLEN]; /* with "guest": why no Mac was asked */
	char digest[IMAGE_DIGEST_LEN + 1]; /* "" when none: no_digest says why */
	char no_digest[LM_ERRLEN];
	const char *image;         /* the reference (--image, else image.json's), or NULL; borrowed */
} vm_session;

/* A new result {"vm": t's name, "state": state} (caller frees). */
cJSON *deploy_result_new(const guest_target *t, const char *state);
/* Sets r's "state", and its "message" when message is not NULL. */
void deploy_set_state(cJSON *r, const char *state, const char *message);
/* Connects and reads the guest's facts into s, and adds them and the key to r. On failure r
 * has the state and the reason, and s holds nothing (LM_EFAIL). */
int deploy_vm_open(vm_session *s, cJSON *r, guest_target *t, const deploy_opts *o);
/* Ends the session; r (may be NULL) gets "sshExecs". */
void deploy_vm_close(vm_session *s, cJSON *r);
/* A new record of kind (caller frees): "kind", who wrote it ("vm", "address", "host",
 * "controller") and, when o->info is set, the payload's "payloadSha256", "profile", "workload"
 * and "target". */
cJSON *deploy_record_new(const char *kind, const guest_target *t, const deploy_opts *o);
/* Appends rec to the ledger under key; a ledger failure turns r into "failed". */
void deploy_record(cJSON *r, const deploy_opts *o, const cJSON *key, const cJSON *rec);

#endif
