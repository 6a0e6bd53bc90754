/* rcmd: a command line for a guest or a Mac host (a remote_cmd), built from argv by the one
 * quoting function (rcmd.c) and nothing else. ssh_exec and ssh_chan_open take only a remote_cmd,
 * and its struct is known only to rcmd.c, so no text of ours or a guest's can reach a remote
 * shell unquoted.
 * The shell a command runs is a fixed script of guest-scripts/ (embedded at build time, the
 * rscript ids below), given its inputs as quoted arguments. */
#ifndef LM_RCMD_H
#define LM_RCMD_H

#include "core/util.h"

typedef struct remote_cmd remote_cmd;

/* The fixed scripts, guest-scripts/NAME.sh as the Makefile embeds them (comment lines dropped):
 * each says at its top what its arguments are and what it prints. */
typedef enum {
	RSCRIPT_FACTS,          /* facts.sh: the guest's facts (net/guest.c) */
	RSCRIPT_DEPLOY,         /* deploy.sh: deploy's one exec, after facts.sh (ops/deploy_exec.c) */
	RSCRIPT_RECONCILE,      /* reconcile.sh: install.json of the current release (ops/deploy.c) */
	RSCRIPT_SCRATCH,        /* scratch.sh NAME: a scratch directory (probe, validate) */
	RSCRIPT_PROBE,          /* probe.sh DIR TARGET (ops/probe.c) */
	RSCRIPT_STATUS,         /* status.sh ROOT (ops/status.c) */
	RSCRIPT_ROLLBACK,       /* rollback.sh ROOT TO (ops/rollback.c) */
	RSCRIPT_STAMP,          /* stamp.sh ROOT, image.json on stdin (ops/golden.c) */
	RSCRIPT_BENCH_HASHES,   /* bench-hashes.sh LLAMA_BENCH MODEL (ops/bench_vm.c) */
	RSCRIPT_VALIDATE_PREP,  /* validate-prep.sh DIR LLAMA_PERPLEXITY MODEL (ops/validate.c) */
	RSCRIPT_IN_DIR,         /* in-dir.sh DIR COMMAND...: the command run in DIR (ops/validate.c) */
	RSCRIPT_VALIDATE_CLEAN, /* validate-clean.sh DIR (ops/validate.c) */
	RSCRIPT_HOST_IDENTITY,  /* host-identity.sh: a Mac host's facts in one exec (net/identity.c) */
	RSCRIPT_N
} rscript;

/* argv (NULL-terminated, argv[0] the program) as one POSIX sh command line: every word in single
 * quotes, so spaces, quotes, $(), backticks, newlines, backslashes, a leading dash (a word, not
 * an option of the shell) and bytes that are not UTF-8 arrive as they are. A word that starts
 * with "~/" keeps "$HOME"/ outside the quotes. *out belongs to the caller (rcmd_free). */
int rcmd_argv(remote_cmd **out, const char *const *argv);
/* `sh -c SCRIPT sh ARGS...`: the script gets args (NULL-terminated, may be NULL) as $1... */
int rcmd_script(remote_cmd **out, rscript s, const char *const *args);
/* The same with the scripts parts[0..n) run one after the other in one shell (deploy: facts.sh
 * then deploy.sh in one exec). */
int rcmd_scripts(remote_cmd **out, const rscript *parts, size_t n, const char *const *args);
/* The command line, for ssh_chan.c and for a person (a plan, the ledger's "command"); owned by c. */
const char *rcmd_text(const remote_cmd *c);
void rcmd_free(remote_cmd *c);

/* The one quoting function: s in single quotes (each ' as '\''), appended to out, for the
 * commands above and for a command line shown to a person (net/lume.h lume_argv_text). 0, or
 * -1 out of memory. */
int rcmd_quote(lm_buf *out, const char *s);

/* A script's text, for a caller that sends it on stdin (`sh -s`: facts.sh) rather than as
 * an argument; NULL for an id out of range. */
const char *rscript_text(rscript s);
/* Its file name in guest-scripts/, e.g. "probe.sh". */
const char *rscript_name(rscript s);

#endif
