/* lume: resolves Lume VM names to SSH addresses with `lume get NAME --format json` and
 * `lume ls --format json`, tolerating the log lines Lume prints around its JSON. */
#ifndef LM_LUME_H
#define LM_LUME_H

#include <cjson/cJSON.h>

#include "net/ssh.h"
#include "core/util.h"

typedef struct {
	char *name, *status, *ip, *os;
	char *location; /* "locationName": its Lume storage location, or NULL (the default) */
	int ssh_available; /* 1 true, 0 false, -1 null */
} lume_vm;

/* Finds the JSON array in Lume's stdout, skipping log lines such as
 * "[2026-08-09T12:00:00Z] INFO: ...": the first line whose first non-blank is "[" followed
 * (after blanks and newlines) by "{" or "]" and that parses as an array from there. Linear in
 * the text's length whatever it holds: a candidate that fails resumes the scan at the line
 * where its parse stopped. Returns a new array (caller frees) or NULL. */
cJSON *lume_parse_output(const char *text);

/* Runs `lume get NAME --format json` (lume is a path or a name on $PATH) and fills *out
 * (caller frees with lume_vm_free). Errors name the VM: not found, not running (with a hint
 * to `lume run`), no IP yet, SSH not available, or "lume get: lume timed out after N s" when
 * one run of it outlives deadline_ms (an lm_now_ms() time, 0: none; its process group is
 * killed). With wait_s > 0 it polls until the VM is running with SSH available, or the time
 * is up; a run may then last until the end of the wait when that is later than deadline_ms. */
int lume_resolve(lume_vm **out, const char *lume, const char *name, int wait_s, int64_t deadline_ms, char *err);

/* `lume ls` on this host gets this long before it is killed. */
#define LUME_LS_TIMEOUT_S 120

/* Runs `lume ls --format json`: *out gets an array of VMs and *n their count (caller frees
 * each with lume_vm_free and the array with free). */
int lume_list(lume_vm ***out, size_t *n, const char *lume, char *err);

/* Lume's `ls --format json` output (text, which exited st) as VMs, as lume_list fills them;
 * errors start with where ("HOST: " or ""). */
int lume_list_parse(lume_vm ***out, size_t *n, const char *text, int st, const char *where, char *err);

void lume_vm_free(lume_vm *vm);

/* The VM lifecycle verbs a golden-image build runs on this Mac, each one `lume VERB ...` by
 * lm_run_deadline (deadline_ms: an lm_now_ms() time, 0: none; at it the process group is
 * killed and the error says "timed out"). Lume's output is read bounded and never kept: a
 * failure's error is "lume VERB exited N: LINE", LINE the first "Error: ..." line Lume printed
 * (else its last non-empty line), cut to LUME_ERR_LINE bytes. A lume that cannot be started
 * is LM_EINPUT with a hint; a VM or image that Lume says is not found is LM_EINPUT; anything
 * else LM_EFAIL. Every string is borrowed. */
#define LUME_ERR_LINE 300

/* `lume clone SRC DST`. */
int lume_clone(const char *lume, const char *src, const char *dst, int64_t deadline_ms, char *err);

/* `lume run VM --no-display`, started in its own session with stdin from /dev/null and stdout
 * and stderr appended to log (a path; NULL: /dev/null), and not waited for: a Lume VM runs as
 * long as that process does. Returns LM_OK once the process has run for LUME_RUN_SETTLE_MS, or
 * has exited 0 within it (a lume that hands the VM to a daemon); one that exits non-zero
 * within it is an error with the log's "Error:" line. *pid (may be NULL) gets its process id,
 * or 0 when it has already been reaped. */
#define LUME_RUN_SETTLE_MS 2000
int lume_run_detached(const char *lume, const char *vm, const char *log, int *pid, char *err);

/* `lume stop VM`. */
int lume_stop(const char *lume, const char *vm, int64_t deadline_ms, char *err);

/* `lume push VM IMAGE:TAG [--registry R] [--organization O] [--additional-tags T...]`
 * (registry, organization: NULL for Lume's defaults). Credentials stay in the environment
 * (GITHUB_* / GHCR_*), never on the command line. */
int lume_push(const char *lume, const char *vm, const char *image_tag, const char *registry,
    const char *organization, const char *const *tags, size_t ntags, int64_t deadline_ms, char *err);

/* `lume delete VM --force`. */
int lume_delete(const char *lume, const char *vm, int64_t deadline_ms, char *err);

/* `lume pull IMAGE:TAG NAME [--registry R] [--organization O]`. */
int lume_pull(const char *lume, const char *image_tag, const char *name, const char *registry,
    const char *organization, int64_t deadline_ms, char *err);

/* The command line of argv for a person to read (a plan): each argument in single quotes
 * (rcmd_quote) unless it is made only of [A-Za-z0-9_./:@%+=,-]. Appends to out; 0, or -1 out of
 * memory. */
int lume_argv_text(lm_buf *out, const char *const *argv);

#endif
