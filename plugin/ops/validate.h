/* validate: the workload's own numbers, compared by llama.cpp's own tool. llama-perplexity runs
 * twice in the guest on one model and one text: stock, saving its logits to a base file, then
 * through the payload's run-with-shim with --kl-divergence, comparing its logits with the
 * stock ones. The statistics it prints (mean KLD, 99.9% KLD, same top token, PPL ratio) are
 * held against the workload's thresholds; the verdict is recorded per image version (kind
 * "validate"), and a workload with "requireValidation" deploys only to a version whose last
 * validate record passed. No printing, no exit.
 *
 * A ledger record: {"kind":"validate", "vm", "address", "host", "controller", "payloadSha256",
 *   "profile", "workload", "target", "verdict":"pass"|"fail", "reasons":[...],
 *   "validation":{"pplRatio", "meanKld", "kld999", "maxKld", "sameTopPercent", "pplQ", "pplBase",
 *                 "thresholds":{"maxMeanKld", "minSameTopPercent", "maxPplRatioDeviation"},
 *                 "context", "chunks", "stockMetal", "shimMetal"},
 *   "hashes":{"modelSha256", "textSha256", "llamaPerplexity"}, "model", "text",
 *   "build" (llama.cpp's "build:" line), "command" (the stock arm's), "evidence"}
 * (ledger_append adds "time"). Unknown figures are null. */
#ifndef LM_VALIDATE_H
#define LM_VALIDATE_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "core/ledger.h"
#include "ops/session.h"

/* The defaults of the workload manifest's "validation" object (manifests/schema/
 * workload.schema.json says why). */
#define VALIDATE_MAX_MEAN_KLD 0.01
#define VALIDATE_MIN_SAME_TOP 97.0
#define VALIDATE_MAX_PPL_DEV 0.01
#define VALIDATE_CONTEXT 512
#define VALIDATE_CHUNKS 8
/* Each arm's raw output kept in the evidence, at most (its end: the statistics are last). */
#define VALIDATE_EVIDENCE_MAX (1u << 20)

typedef struct {
	double max_mean_kld;       /* mean KLD must be <= this */
	double min_same_top;       /* "Same top p" (percent) must be >= this */
	double max_ppl_dev;        /* |Mean PPL(Q)/PPL(base) - 1| must be <= this */
	int context, chunks;       /* -c and --chunks */
} validate_thresholds;

/* What a workload manifest says about validation. text is borrowed from the manifest's JSON. */
typedef struct {
	int required;              /* "requireValidation": true */
	const char *text;          /* "validation.text": a path under the data directory, or NULL */
	validate_thresholds th;
} validate_workload;

/* Reads "requireValidation" and "validation" from a workload document already checked against
 * its schema; absent fields take the defaults above. */
void validate_workload_read(validate_workload *out, const cJSON *workload);

/* The next line of [p, end): *n its length without \n, \r\n or \r; returns where the next one
 * starts. */
const char *validate_next_line(const char *p, const char *end, size_t *n);

/* What llama-perplexity printed. NAN for a figure it did not print. */
typedef struct {
	double ppl_q, ppl_base, ppl_ratio;  /* Mean PPL(Q), Mean PPL(base), Mean PPL(Q)/PPL(base) */
	double kld_mean, kld_max, kld_999;  /* Mean KLD, Maximum KLD, 99.9% KLD */
	double same_top;                    /* Same top p, percent */
} validate_stats;

/* Parses llama-perplexity's statistics blocks from text (len bytes; lines end in \n, \r\n or
 * \r; whitespace runs inside a label count as one space). Refuses (LM_EINPUT) text with no
 * statistics block (fewer than 100 positions compared: the message says to raise --chunks), a
 * block missing "Mean PPL(Q)/PPL(base)", "Mean KLD", "99.9% KLD" or "Same top p", a label
 * printed twice, and a value that is not a finite number in its range (a ratio > 0, a KLD
 * >= -0.001, a percentage 0..100). Lines over 4096 bytes and unknown lines are skipped. */
int validate_parse(validate_stats *out, const char *text, size_t len, char *err);

/* llama-perplexity's own error lines in text (its stderr, len bytes), the LOG_ERR lines of
 * tools/perplexity/perplexity.cpp's perplexity() and kl_divergence() after which it exits 0:
 * "perplexity: you need at least N tokens ...", "... tokenizes to only N tokens", "failed to
 * open", "does not look like a file containing log-probabilities", "has been computed with",
 * "failed reading", "inconsistent vocabulary", and the model's evaluation failing,
 * "kl_divergence : failed to eval" and "failed to decode". out gets them printable, joined by
 * "; " (at most 400 bytes). Returns 0 when there is none, 1 when there are, 2 when one of them
 * is the evaluation's. */
int validate_parse_errors(char out[401], const char *text, size_t len);

/* Refuses (LM_EINPUT, saying why) a validation text at path too short for context:
 * llama-perplexity needs at least 2 x context tokens of it, and a token holds at least one byte,
 * so a text of fewer than 2 x context - 2 bytes (a BOS token and a leading space may be added)
 * cannot be enough. A longer one may still be: llama-perplexity's own "you need at least N
 * tokens" (it exits 0 after it) is read from its stderr, and fails the validation. */
int validate_text_check(const char *path, int context, char *err);

/* llama.cpp's "build: 10167 (ee3d1b54c) with ..." line from text (its stderr), without "build: ",
 * printable ASCII only (anything else as '?') and at most 200 bytes; "" when there is none. */
void validate_parse_build(char out[201], const char *text, size_t len);

/* Holds s against th: 1 when every figure is within it, else 0; each figure outside adds a
 * reason to reasons (an array; may be NULL). */
int validate_verdict(cJSON *reasons, const validate_stats *s, const validate_thresholds *th);

/* How one arm is going, for the caller to show: arm "stock" or "shim", phase "start" or
 * "done", seconds since the validation began. Called from the VM's worker thread. */
typedef void (*validate_progress_fn)(void *ctx, const char *vm, const char *arm, const char *phase,
    double elapsed_s);

/* What `validate` (and `deploy --validate-workload`) runs. */
typedef struct validate_opts {
	const char *model;             /* the model's path in the guest */
	const char *llama_perplexity;  /* its name or path in the guest (default "llama-perplexity";
	                                * a name is looked up with /opt/homebrew/bin:/usr/local/bin
	                                * before the guest's PATH) */
	const char *text, *text_label; /* this host's text file, uploaded; the name recorded */
	const char *evidence;          /* evidence directory (must not exist), or NULL */
	int evidence_per_vm;           /* evidence is a parent (made when missing): each VM writes
	                                * its own under it, named after the VM ('/' and any byte but
	                                * letters, digits, '.', '_', '-' as '_') */
	validate_thresholds th;
	validate_progress_fn progress;
	void *progress_ctx;
	int defer_pass;                /* a passing verdict is not written to the ledger: r gets the
	                                * record, whole, under "record" (the caller files it: golden,
	                                * under the pushed image's key); a fail is written as ever */
} validate_opts;

/* Validates on an open session s (session_open) with o->validate and the payload o->payload
 * (o->info): uploads the payload and the text to a guest scratch directory, runs both arms,
 * removes the directory, writes the evidence and one ledger record under s->key. r gets
 * "state": "validated" (pass), "validation-failed" (a verdict of fail, recorded), or "failed"
 * or "timeout" (nothing recorded: no statistics, a stock arm that failed, bad input), with
 * "message", and "validation" holding the figures and verdict. llama-perplexity returns 0 after
 * its own errors ("you need at least N tokens", "failed to open", ...): each arm's are read from
 * its stderr; the stock arm's, and the shim arm's about its input, are "failed" (a text too short
 * adds "inputError": true), the shim arm's "failed to eval" a verdict of fail. Returns LM_OK on a
 * pass, LM_EFAIL otherwise. */
int validate_session(cJSON *r, session_vm *s, guest_target *t, const session_opts *o);

/* validate_session's steps are a table run by one loop; the rows of the arms report their start
 * and end through validate_opts.progress under their names. The i-th arm's name, in order
 * ("stock", then "shim"), or NULL past the last. */
const char *validate_arm_name(int i);

/* validate on one VM: connects (session_open) and runs validate_session. LM_OK with *out
 * (caller frees) as deploy_one's. */
int validate_one(cJSON **out, guest_target *t, const session_opts *o, char *err);

/* Validates an open session's image version once per process: VMs of one version (one key: the
 * host chip and build are in it) wait for each other here, as in validate_gate, so the first
 * runs validate_session and the rest report its verdict, read from the ledger: "validated" or
 * "validation-failed" with a message naming that VM and "validatedBy" (its name); or "skipped"
 * when its run recorded none (failed, timeout). LM_OK when the version passed. */
int validate_version(cJSON *r, session_vm *s, guest_target *t, const session_opts *o);

/* validate_one with validate_version: the fleet's per-VM function of `validate`. */
int validate_once(cJSON **out, guest_target *t, const session_opts *o, char *err);

/* What a validate record must be about to count for payload info (NULL: any payload). */
ledger_want validate_want(const payload_info *info);

/* The gate: LM_OK when key's newest validate record for info's payload (validate_want)
 * passed; otherwise LM_EREFUSED with why (a message that names the record or its absence), or
 * LM_EFAIL when the ledger cannot be read. */
int validate_check(const char *state, const cJSON *key, const payload_info *info, char *why);

/* deploy's gate, for a workload with "requireValidation": LM_OK when key's last validate
 * record passed, or when o->validate is set and validate_session passes on this VM now (not in
 * a dry run). Otherwise r holds the state: "refused" naming the record or its absence and the
 * command to run, or validate_session's. VMs of one image version in one process wait for
 * each other here, so the first one validates and the rest read its record. */
int validate_gate(cJSON *r, session_vm *s, guest_target *t, const session_opts *o);

#endif
