/* deploy: the per-VM operations behind probe, deploy, status and rollback. Each one connects,
 * does its work through the guest scripts, records what it learned in the ledger, and hands
 * back one JSON result whose "state" is one of the named end states. Never prints. */
#ifndef LM_DEPLOY_H
#define LM_DEPLOY_H

#include <cjson/cJSON.h>

#include "guest.h"
#include "payload.h"

/* What `bench` runs: llama-bench in the guest stock and through run-with-shim, and on this host
 * with host_baseline. */
typedef struct {
	const char *model, *llama_bench;         /* guest paths (llama_bench: a name on PATH too) */
	const char *host_model, *host_llama_bench; /* this host's, for the bare-metal arm */
	const char *evidence, *workload;         /* evidence directory (must not exist); table label */
	int p, n, r, threads, min_samples, host_baseline, allow_different_model;
} deploy_bench_opts;

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
	const deploy_bench_opts *bench;
	/* validate.h: the check validate runs; for deploy, --validate-workload (NULL: not asked) */
	const struct validate_opts *validate;
	int require_validation;     /* deploy: the workload's "requireValidation" (the gate) */
} deploy_opts;

/* The end states; every VM ends in exactly one (README.md and the man page say what each
 * means; tests/install/t-states.sh checks that they and the sources agree). deploy: unchanged,
 * deployed; probe: probed; status: ok, drift; rollback: rolled-back; bench: benchmarked,
 * shim-not-effective; validate: validated; any of them the rest. */
#define DEPLOY_STATES "unchanged deployed probed ok drift validated validation-failed refused " \
	"unreachable auth-failed hostkey-mismatch timeout rolled-back skipped failed benchmarked " \
	"shim-not-effective abandoned"

/* Each returns LM_OK with *out (caller frees) holding at least "vm" and "state", also when the
 * VM failed; err is set only for failures outside any VM (out of memory). */
int deploy_one(cJSON **out, guest_target *t, const deploy_opts *o, char *err);
int deploy_probe(cJSON **out, guest_target *t, const deploy_opts *o, char *err);
int deploy_status(cJSON **out, guest_target *t, const deploy_opts *o, char *err);
int deploy_rollback(cJSON **out, guest_target *t, const deploy_opts *o, char *err);
/* bench runs through bench_vm_run (bench.h, plugin/bench_vm.c). */

/* The end state for a failed connect's SSH_* reason ("unreachable" for 0). */
const char *deploy_why_state(int why);

/* The exit code for a set of results: 0 all good, 3 when any was refused by a gate (and
 * none failed otherwise), 1 when any failed. */
int deploy_exit_code(cJSON *const *results, size_t n);

#endif
