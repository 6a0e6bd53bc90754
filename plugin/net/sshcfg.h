/* sshcfg: a host alias as the user's OpenSSH configuration resolves it, asked of OpenSSH itself
 * (`ssh -G ALIAS`, no shell, within a deadline), never parsed here: Host and Match blocks,
 * Include and tokens mean what OpenSSH says they mean. Only ssh -G's own output is parsed, and
 * strictly: one "keyword value" per line, each value printable, at most SSHCFG_OUT_MAX bytes.
 *
 * The configuration read is OpenSSH's default (~/.ssh/config of the login's home, whatever
 * $HOME says, then /etc/ssh/ssh_config), or the file $LUME_METAL_SSH_CONFIG names (ssh -F). */
#ifndef LM_SSHCFG_H
#define LM_SSHCFG_H

#include <stddef.h>
#include <stdint.h>

#define SSHCFG_OUT_MAX (64u << 10)
#define SSHCFG_IDS_MAX 16

/* What ssh -G said for one alias. Strings owned (sshcfg_free). */
typedef struct {
	char *hostname;   /* HostName, or the alias itself */
	char *user;       /* User: the login name when the configuration sets none */
	int user_login;   /* user is the login name: maybe not set (ssh -G cannot tell) */
	int port;         /* Port (22 unless set) */
	char *ids[SSHCFG_IDS_MAX + 1]; /* IdentityFile, "~/" expanded with $HOME, NULL-terminated;
	                                * OpenSSH's defaults when none is set */
	size_t nids;
	char *known_hosts; /* the first UserKnownHostsFile when it is not OpenSSH's default, or NULL */
	char *proxyjump;  /* ProxyJump, or NULL (none) */
	int accept_new;   /* StrictHostKeyChecking accept-new or no: add unknown host keys (a
	                   * changed one is refused all the same) */
} sshcfg;

/* Runs `ssh -G [-F $LUME_METAL_SSH_CONFIG] -- alias` by deadline_ms and parses its output into
 * *out (caller frees with sshcfg_free). Thread-safe; an alias resolved once is answered from
 * this process's memory after that (the answer depends on the alias alone). LM_EINPUT for an alias OpenSSH cannot take (empty,
 * leading '-', blanks or control characters) or a configuration ssh -G refuses; LM_EFAIL when
 * ssh cannot be run (*ssh_missing, when not NULL, is then 1 when it is not on PATH, 2 when this
 * process is out of file descriptors) or answers what this parser refuses. */
int sshcfg_resolve(sshcfg **out, const char *alias, int64_t deadline_ms, int *ssh_missing, char *err);

/* Parses ssh -G output (text, len bytes) into *out: the strict half of sshcfg_resolve, exposed
 * for the unit test and the fuzzer. login is the name ssh -G prints as user when none is set. */
int sshcfg_parse(sshcfg **out, const char *text, size_t len, const char *login, char *err);

void sshcfg_free(sshcfg *c);

#endif
