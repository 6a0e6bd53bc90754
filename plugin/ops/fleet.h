/* fleet: runs one per-VM operation over many VMs with a fixed pool of threads (--parallel,
 * at most that many threads, none per VM; each blocks on its VM's socket with a deadline),
 * as a staged rollout: a canary wave, then waves of --batch, under a failure budget, with an
 * optional rollback of what the run changed. Semantics follow Ansible's `serial` and
 * `max_fail_percentage`, except that the budget is checked before each VM starts (not only
 * between waves) and a failed canary always stops the run. */
#ifndef LM_FLEET_H
#define LM_FLEET_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "ops/session.h"

typedef int (*fleet_fn)(cJSON **out, guest_target *t, const session_opts *o, char *err);

/* Called, one call at a time, as each VM finishes (again when it is rolled back): index i,
 * its result (borrowed), and how many of n are done. */
typedef void (*fleet_progress)(void *ctx, size_t i, const cJSON *result, size_t done, size_t n);

typedef struct {
	int parallel;          /* threads, at least 1 */
	int canary;            /* VMs in the first wave, which must all pass; 0 for none */
	int batch, batch_pct;  /* later waves: this many VMs, or this percentage of all; 0 for one wave */
	int max_fail, max_fail_pct; /* budget: more failures than this stops the run; -1 for none */
	int rollback_on_fail;  /* when stopped: VMs this run deployed go back to previous */
	fleet_progress progress; /* or NULL */
	void *progress_ctx;
	/* Called (any thread, concurrently with itself) as VM i starts; or NULL. */
	void (*started)(void *ctx, size_t i);
} fleet_opts;

/* A VM's work that waits on its guest with nothing for this process to do meanwhile (deploy's
 * settle: the guest watches the workload, its answer waits in the channel). fn, run by
 * fleet_run, may hand it to fleet_defer and return LM_OK with its result at once, not final:
 * its thread goes on with the next VM, and one watcher thread of the wave calls
 * finish(l, result) as each guest's answer has come (ready; without it, at `at`), which completes
 * the result in place and ends l; only then is the VM settled (progress, the budget,
 * fleet_running, the wave's end: a canary wave waits for its settles). A guest that never
 * answers holds up no other VM: it is finished at its deadline. */
typedef struct fleet_later fleet_later;
struct fleet_later {
	int64_t at;                                    /* lm_now_ms() when the answer is due */
	void (*finish)(fleet_later *l, cJSON *result); /* completes result; frees l */
	/* Whether finish would not wait on the guest: 1, or 0 with *fd to poll for its answer and
	 * *deadline after which finish fails at once. NULL: finish is called at `at`. */
	int (*ready)(fleet_later *l, int *fd, int64_t *deadline);
};

/* Takes l for the VM fn runs on this thread: 1 when taken, else 0 and l stays the caller's,
 * to finish at once: outside fleet_run, under a failure budget (--max-fail: each VM's outcome is
 * known before its thread starts another, as without a settle), or when the file descriptors
 * left would not hold one more open connection beside the pool's. */
int fleet_defer(fleet_later *l);

/* Interrupts (SIGINT, SIGTERM: the CLI catches them). After fleet_interrupt, which is
 * async-signal-safe, every fleet_run starts no more VMs: those running finish (and are
 * settled as usual), those not started are "skipped" with the message "interrupted", and
 * fleet_run returns 1. fleet_interrupted tells whether it was called; fleet_running is how
 * many VMs are in flight now (any thread, or a signal handler). */
void fleet_interrupt(void);
int fleet_interrupted(void);
size_t fleet_running(void);

/* Raises this process's soft limit of open files toward the hard one (at most 65536, and
 * OPEN_MAX on macOS, whose default soft limit is 256); main calls it at start. Returns the soft
 * limit now, or -1. */
int fleet_fd_limit(void);

/* How many VMs may be in flight at once with the file descriptors left now (4 each, 16 kept
 * spare); at least 1. fleet_each never runs more threads than this; the CLI may tell the user
 * when --parallel is above it. */
int fleet_parallel_max(void);

/* Calls fn(ctx, i) for every i in [0, n) on at most `parallel` threads (the pool), and at most
 * fleet_parallel_max(); returns when all are done. fn runs concurrently with itself. */
void fleet_each(size_t n, int parallel, void (*fn)(void *ctx, size_t i), void *ctx);

/* True for the states that count as a failure (exit code, budget). A VM whose connection ran out
 * of this process's file descriptors (ssh_nofds_take) is made `failed`, its message saying so,
 * and is not counted against the budget. */
int fleet_failed(const cJSON *result);

/* Adds to a VM's result, unless it has them, "seconds" (from t0, an lm_now_ms() time, to now, to
 * the millisecond) and "time" (now, UTC, as a ledger record's); nothing when t0 is 0 (it never
 * started). What a test report or a metric of the VM shows (fleet_run calls it; so does a command
 * that runs one VM itself). */
void fleet_stamp(cJSON *res, int64_t t0);

/* Runs fn on targets[0..n); results[i] (caller frees) gets each VM's result, and a VM that
 * started gets "seconds" and "time" (fleet_stamp) as it is settled, before progress sees it. A VM not started
 * because the run stopped (the budget, the canary, fleet_interrupt) is "skipped"; a rolled-back one keeps its deploy result under
 * "deploy" and has state "rolled-back". Returns 1 when the run stopped early, else 0. */
int fleet_run(cJSON **results, guest_target **targets, size_t n, fleet_fn fn, const session_opts *o,
    const fleet_opts *f);

#endif
