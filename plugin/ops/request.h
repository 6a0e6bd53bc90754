/* request: what a command asks of an operation, filled from its flags and handed to ops (in the
 * way git's builtins fill an options struct for libgit2): the connection, the state folder, the
 * VMs to reach, the payload wanted, and the config file's values where no flag gave one. The
 * setup every operation shares reads it: the config file merged under the flags, --state and
 * --host checked, one VM's target, the session options of a run. The command keeps how it
 * renders (json, documents) to itself. Never prints: errors go to err (LM_ERRLEN) without the
 * command's name, which the caller puts before them. */
#ifndef LM_REQUEST_H
#define LM_REQUEST_H

#include <stddef.h>

#include "core/config.h"
#include "core/payload.h"
#include "net/ssh.h"
#include "ops/fleet.h"
#include "ops/session.h"
#include "ops/verdicts.h"

typedef struct {
	ssh_opts ssh;          /* user, identity, password, known hosts, accept-new */
	const char *state;     /* --state, or $XDG_STATE_HOME/lume-metal, or ~/.local/state/lume-metal */
	const char *lume;      /* --lume PATH, default "lume" on $PATH */
	const char **hosts;    /* --host values (the array owned, the strings borrowed from argv) */
	size_t nhosts;
	const char *hosts_file; /* --hosts FILE: Mac hosts whose VMs are reached through them */
	int timeout_s, all, wait_s, port;
	int timeout_given; /* --timeout was on the command line (an explicit 120 is kept) */
	fleet_opts fleet;      /* --parallel and, for deploy, the wave flags */
	/* The payload wanted, and what ops_payload made of it (owned). */
	const char *target, *profile, *workload, *payload_file;
	payload_info *info;
	char *payload;
	/* The config file (config.h), once ops_request_ready read it (read once for the process, not
	 * owned: it lives till exit, as the values taken from it must), and which of its keys a
	 * flag gave: bit k for config_keys[k]. ssh.user and ssh.known_hosts stay NULL when neither
	 * a flag nor the file gave them, so the OpenSSH configuration's User and
	 * UserKnownHostsFile can apply (guest.h), then the defaults. */
	struct config *cfg;
	unsigned given;
} ops_request;

/* The process's setup before any command: takes $LUME_METAL_PASSWORD out of the environment
 * before anything can start a child, so the password stays in this process alone (*too_long set
 * when it was over 1023 bytes and is not used); raises the descriptor limit (macOS starts a
 * process with 256: a fleet needs more, fleet_fd_limit); starts libssh2 (LM_EFAIL if it does
 * not). */
int ops_process_init(int *too_long);

/* Sets the defaults (timeout 120, parallel 32, port 22, target macos, workload llama-server). */
void ops_request_init(ops_request *r);
/* Marks the config key (config_keys) as given by a flag, so the file's value does not apply. */
void ops_request_give(ops_request *r, const char *key);
/* Whether a flag gave key. */
int ops_request_given(const ops_request *r, const char *key);
/* Reads the config file (config_default_path) and takes each of its values that no flag gave
 * (user, identity, password-file, known-hosts, state, parallel, lume, ledger-keep), then checks
 * --state (that it is a directory, if it exists). LM_EINPUT: "FILE:LINE: what is wrong", or
 * "--state DIR: not a directory". */
int ops_request_ready(ops_request *r, char *err);
/* ops_request_ready, then that the ledger under --state reads: LM_EINPUT "--state DIR: why". */
int ops_request_readable(ops_request *r, char *err);
/* The config file's value of key when no flag gave it (NULL: neither), after ops_request_ready. */
const char *ops_request_setting(const ops_request *r, const char *key);
/* An input error in --host spec: naming a regular file that is a path, is no user@addr[:port],
 * or does not resolve (a hint at --hosts FILE). LM_EINPUT "--host SPEC: why", else LM_OK. */
int ops_host_check(const char *spec, char *err);
/* The session options of a run from r: state, lume, ssh, timeout, wait. */
void ops_session_opts(const ops_request *r, session_opts *o);
/* The one VM of a command that takes exactly one (bench, validate): *out (ops_one_vm_free)
 * from the Lume name vm or r's one --host, and o's connection fields from r, its per-VM
 * timeout long_timeout_s unless --timeout was given. */
int ops_one_vm(guest_target **out, const ops_request *r, const char *vm, session_opts *o, int long_timeout_s,
    char *err);
void ops_one_vm_free(guest_target *t);
/* The user r reaches hosts as: -u, else user= of the config file, else lume's default. */
const char *ops_user(const ops_request *r);
/* Verdicts in registries: mode ("local" or "registry", NULL: the config file's verdicts), the
 * config file's signing-key, registry and organization, its trusted-key files loaded into
 * *trust (cleared by ops_verdicts_clear; cfg->trust points at it). After ops_request_ready.
 * LM_EINPUT "trusted-key: why". */
int ops_verdicts_setup(verdicts_cfg *cfg, verdict_trust *trust, const ops_request *r, const char *mode, char *err);
void ops_verdicts_clear(verdict_trust *trust);
/* Frees what r owns (the --host array, the payload). */
void ops_request_free(ops_request *r);

#endif
