/* deploy_exec: a deploy's one exec. One channel runs a fixed driver script in the guest
 * (guest-scripts/facts.sh then deploy.sh, RSCRIPT_FACTS and RSCRIPT_DEPLOY): it prints the
 * guest's facts and a mark. When the payload is already current
 * (and no --force) it ends there: an unchanged rerun is that one exec. Else it waits for the
 * controller's word on its stdin. "skip" (or EOF) ends it. "install" is followed by the payload,
 * which the driver writes into staging/ as it arrives; the payload's own install.sh (taken out
 * of it by tar, which reads its whole gzip stream first) then runs with --verified (the
 * controller checked every entry: payload_verify) and its JSON comes back on the same channel.
 * "install-stock" sends, before the payload, one line: the stock probe's answer recorded for
 * this image version, for install.sh --stock-file. So a first deploy costs one exec and no SFTP
 * subsystem, and an unchanged rerun one exec and no payload byte. The payload's SHA-256 is the
 * argument (net/rcmd.h quotes it); a payload cut off on the way fails in the driver (tar finds
 * the gzip stream cut, before any of it runs) or in install.sh (the SHA-256, before anything
 * moves), and the old release keeps running. --confirm-timeout and --confirm-settle for
 * install.sh are two more arguments (empty: not given), never pasted into the script. */
#ifndef LM_DEPLOY_EXEC_H
#define LM_DEPLOY_EXEC_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "net/guest.h"
#include "net/ssh.h"

typedef struct deploy_exec deploy_exec;

/* Opens the channel on c for the payload sha (64 hex) and reads the guest's facts into f (on
 * failure f holds nothing and err says why). With force the driver waits for the controller's
 * word also when sha is current (else it has ended then, and only deploy_exec_skip may follow).
 * confirm_timeout and confirm_settle (whole seconds, or NULL) become install.sh's
 * --confirm-timeout and --confirm-settle. *out (caller's) ends with deploy_exec_skip or
 * deploy_exec_send and deploy_exec_result. */
int deploy_exec_open(deploy_exec **out, ssh_conn *c, const char *sha, int force, const char *confirm_timeout,
    const char *confirm_settle, guest_facts *f, char *err);
/* Tells the driver there is nothing to do and closes the channel; frees x (NULL is fine). */
void deploy_exec_skip(deploy_exec *x);
/* Sends the payload file (a verified payload whose SHA-256 is the sha of deploy_exec_open),
 * after stock (NULL: the guest runs its stock probe) as one line, then reads until install.sh
 * ends or says (--mark-settle) that the shim is active in the process launchd runs and it now
 * watches that process *settle more seconds (1..600) before its answer: meanwhile the channel
 * needs no reading (the answer waits in it), so the caller may do other work first. *settle is
 * -1 when it ended, or failed (deploy_exec_result says why). *sent gets the payload bytes
 * written. */
void deploy_exec_send(deploy_exec *x, const char *payload, const cJSON *stock, uint64_t *sent, int *settle);
/* Whether deploy_exec_result would read without waiting on the guest (ssh_chan_ready): 1, or 0
 * with *fd the socket to poll and *deadline the connection's. */
int deploy_exec_ready(deploy_exec *x, int *fd, int64_t *deadline);
/* Reads install.sh's result (blocking through a settle still running): on LM_OK *out (caller
 * frees) is the JSON object on the last line of stdout that starts with '{', *code the exit
 * status. On LM_EFAIL err says why ("... upload of <sha>.tar.gz failed: ..." when the payload
 * did not arrive whole). Frees x. */
int deploy_exec_result(deploy_exec *x, cJSON **out, int *code, char *err);

#endif
