/* session: what every per-VM operation (deploy, probe, status, rollback, validate, bench,
 * golden) shares, below all of them: the options a run hands each VM, one VM's session (the
 * connection, the guest's facts, who it is, its ledger key), the result object and its end
 * states, and the records written under the key. Never prints. */
#ifndef LM_SESSION_H
#define LM_SESSION_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "core/payload.h"
#include "net/guest.h"
#include "net/identity.h"
#include "ops/deploy_exec.h"

struct bench_vm_opts;  /* ops/bench_vm.h */
struct validate_opts;  /* ops/validate.h */
struct verdicts_cfg;   /* ops/verdicts.h */

/* What a run hands every VM's operation. Borrowed pointers, the caller's for the whole run. */
typedef struct {
	const char *state, *lume;   /* ledger directory; lume binary */
	ssh_opts ssh;               /* credentials and known hosts; the deadline is set per VM */
	int timeout_s, wait_s;
	const char *payload;        /* a verified payload (deploy, probe; rollback --to none probes
	                             * with it afterwards to show the stock answers, when given) */
	const payload_info *info;
	const char *image;          /* --image REF, overriding the guest's image.json */
	int force, dry_run;
	const char *to;             /* rollback: "previous" or "none" */
	const struct bench_vm_opts *bench;
	/* the check validate runs; for deploy, --validate-workload (NULL: not asked) */
	const struct validate_opts *validate;
	int require_validation;     /* deploy: the workload's "requireValidation" (the gate) */
	const struct verdicts_cfg *verdicts; /* verdicts in registries (NULL: the local ledger only) */
	/* deploy --confirm-timeout and --confirm-settle (or the config file's): whole seconds, checked,
	 * for install.sh's flags of those names; NULL: not given (the guest's own knobs, or 60 and 5) */
	const char *confirm_timeout, *confirm_settle;
} session_opts;

/* The end states; every VM ends in exactly one (README.md and the man page say what each
 * means; tests/install/t-states.sh checks that they and the sources agree). deploy: unchanged,
 * deployed; probe: probed; status: ok, drift; rollback: rolled-back; bench: benchmarked,
 * shim-not-effective; validate: validated; any of them the rest. */
#define SESSION_STATES "unchanged deployed probed ok drift validated validation-failed refused " \
	"unreachable auth-failed hostkey-mismatch timeout rolled-back skipped failed benchmarked " \
	"shim-not-effective abandoned"

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
} session_vm;

/* The end state for a failed connect's SSH_* reason ("unreachable" for 0). */
const char *session_why_state(int why);

/* A new result {"vm": t's name, "state": state} (caller frees). */
cJSON *session_result_new(const guest_target *t, const char *state);
/* Sets r's "state", and its "message" when message is not NULL. */
void session_set_state(cJSON *r, const char *state, const char *message);

/* Connects within the VM's own deadline and reads the guest's facts into s, and adds them and
 * the key to r. On failure r has the state and the reason, and s holds nothing (LM_EFAIL). */
int session_open(session_vm *s, cJSON *r, guest_target *t, const session_opts *o);
/* The same on the one exec of a deploy (deploy_exec.h) for o->info's payload, which *x then
 * holds open (the caller's: deploy_exec_skip, or deploy_exec_send and deploy_exec_result). */
int session_open_exec(session_vm *s, cJSON *r, guest_target *t, const session_opts *o, deploy_exec **x);
/* Ends the session; r (may be NULL) gets "sshExecs", the channels the operation opened, and
 * "roundTrips" {"total","afterHandshake"} (ssh_round_trips). */
void session_close(session_vm *s, cJSON *r);

/* Runs one of the fixed scripts (net/rcmd.h) that take the guest's lume-metal folder (GUEST_ROOT) as $1 and
 * arg (may be NULL) as $2; r gets its JSON under field, *code its exit status. On failure r has
 * the state ("timeout" or "failed") and the reason. */
int session_run_script(cJSON *r, ssh_conn *c, rscript script, const char *arg, const char *field, int *code);

/* A new record of kind (caller frees): "kind", who wrote it ("vm", "address", "host",
 * "controller") and, when o->info is set, the payload's "payloadSha256", "profile", "workload"
 * and "target". */
cJSON *session_record_new(const char *kind, const guest_target *t, const session_opts *o);
/* A copy of rec (caller frees; NULL out of memory) with who the VM is as session_open put it in
 * r ("image", "hostSource", "hostNote", "hostPreference", "noDigest", "guestClaims"): the
 * record session_record writes. */
cJSON *session_record_full(const cJSON *r, const cJSON *rec);
/* Appends rec under key, with who the VM is as session_open put it in r (every kind of record
 * carries it); a ledger failure turns r into "failed". */
void session_record(cJSON *r, const session_opts *o, const cJSON *key, const cJSON *rec);

/* The exit code for a set of results: 0 all good, 3 when any was refused by a gate (and
 * none failed otherwise), 1 when any failed. */
int session_exit_code(cJSON *const *results, size_t n);

#endif
