/* bench_vm: `lume-metal bench` on one VM: llama-bench in the guest stock and through
 * run-with-shim (and on this host with host_baseline), compared with core/bench.h's table.
 * Never prints. */
#ifndef LM_BENCH_VM_H
#define LM_BENCH_VM_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "core/bench.h"
#include "ops/session.h"

/* What `bench` runs: llama-bench in the guest stock and through run-with-shim, and on this host
 * with host_baseline. */
typedef struct bench_vm_opts {
	const char *model, *llama_bench;         /* guest paths (llama_bench: a name on PATH too) */
	const char *host_model, *host_llama_bench; /* this host's, for the bare-metal arm */
	const char *evidence, *workload;         /* evidence directory (must not exist); table label */
	int p, n, r, threads, min_samples, host_baseline, allow_different_model;
} bench_vm_opts;

/* Reads what the guest's hash step printed (len bytes of text, untrusted): exactly the
 * llama-bench path (1 to 4095 bytes, no control characters), then its SHA-256 and the model's,
 * each 64 lowercase hex digits, every line ending in a newline, nothing after. On LM_OK *lb
 * is the path (caller frees); otherwise LM_EINPUT (or LM_EFAIL), *lb NULL and both hashes "". */
int bench_parse_hashes(char **lb, char lb_sha[65], char model_sha[65], const char *text, size_t len, char *err);

/* Benchmarks one VM (o->bench): state "benchmarked" or "shim-not-effective", with "bench" the
 * table above; writes the evidence directory, then one ledger record. Bad input or a failed
 * arm is "failed" with the reason, and records nothing. Returns LM_OK with *out (caller
 * frees) holding at least "vm" and "state". */
int bench_vm_run(cJSON **out, guest_target *t, const session_opts *o, char *err);

#endif
