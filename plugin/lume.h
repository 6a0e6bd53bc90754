/* lume: resolves Lume VM names to SSH addresses with `lume get NAME --format json` and
 * `lume ls --format json`, tolerating the log lines Lume prints around its JSON. */
#ifndef LM_LUME_H
#define LM_LUME_H

#include <cjson/cJSON.h>

#include "ssh.h"

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

/* The same on a Mac host over its session c (lume looked up on PATH, ~/.local/bin and
 * Homebrew's directories); errors name the host. */
int lume_list_remote(lume_vm ***out, size_t *n, ssh_conn *c, char *err);

/* Lume's `ls --format json` output (text, which exited st) as VMs, as lume_list fills them;
 * errors start with where ("HOST: " or ""). */
int lume_list_parse(lume_vm ***out, size_t *n, const char *text, int st, const char *where, char *err);

void lume_vm_free(lume_vm *vm);

#endif
