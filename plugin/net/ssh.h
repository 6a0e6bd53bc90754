/* ssh: one verified, authenticated libssh2 session to a guest, with exec and upload.
 * Every remote command is an rcmd (net/rcmd.h), built from argv by its one quoting function. */
#ifndef LM_SSH_H
#define LM_SSH_H

#include <stdint.h>

#include "core/util.h"
#include "net/rcmd.h"

typedef struct {
	const char *host;           /* name or address, IPv4 or IPv6 */
	int port;                   /* 22 when 0 */
	const char *user;
	const char *identity;       /* private key file (-i), or NULL */
	const char *const *identities; /* with no identity: the keys tried after the agent,
	                             * NULL-terminated (the OpenSSH configuration's IdentityFile
	                             * list); NULL: $HOME/.ssh/id_ed25519, id_ecdsa, id_rsa. A file
	                             * that does not exist is skipped, as OpenSSH does */
	const char *password_file;  /* first line is the password, or NULL; like identity, a regular
	                             * file (a symlink to one is fine) that group and others may
	                             * neither read nor write (else the connect fails, naming the
	                             * `chmod 600 FILE` that fixes it) */
	int env_password;           /* also try $LUME_METAL_PASSWORD, as ssh_take_env_password kept it */
	int lume_default_password;  /* also try Lume's default "lume"; the caller warns */
	const char *known_hosts;    /* OpenSSH known_hosts file */
	const char *host_key_alias; /* check and add the host key under this name (port 22), not
	                             * host:port, as OpenSSH's HostKeyAlias; or NULL */
	int accept_new;             /* add an unknown host key instead of refusing */
	int64_t deadline_ms;        /* lm_now_ms() value by which everything must be done */
} ssh_opts;

typedef struct ssh_conn ssh_conn;

/* Error codes of a failed connect, for the fleet's named states. SSH_NOFDS: this process ran
 * out of file descriptors (EMFILE/ENFILE), which says nothing of the guest: it is a `failed`,
 * never `unreachable`. */
enum {
	SSH_UNREACHABLE = 1, SSH_TIMEOUT, SSH_HOSTKEY_UNKNOWN, SSH_HOSTKEY_MISMATCH, SSH_AUTH, SSH_PROTOCOL,
	SSH_NOFDS,
};

/* What one guest command may print: more on either stream and ssh_exec fails ("the guest's
 * answer exceeds N bytes") and stops reading; the rest is never buffered (at most the channel's
 * window, 2 MiB in libssh2, arrives meanwhile). Every guest script prints one JSON object and
 * llama-bench -o json a few KiB (its stderr ~1 KiB): 256 KiB and 64 KiB leave them room while a
 * hostile guest costs a fleet little memory. */
#define SSH_EXEC_OUT_MAX (256u << 10)
#define SSH_EXEC_ERR_MAX (64u << 10)

/* Takes $LUME_METAL_PASSWORD out of the environment, once, at start (main): the value is kept
 * here for env_password, wiped from the environment block and unset, so no child (lume,
 * llama-bench) inherits it. 1 when one was taken, 0 when unset, -1 when too long to use. */
int ssh_take_env_password(void);

/* Lume has no rule for VM names; this one (letters, digits, '.', '_', '-', not first '-' or
 * '.', at most 64 bytes) is what a Mac host's VM name must pass to name a host key. ssh_connect
 * refuses a host_key_alias "HOST/VM" whose VM fails it, and any host-key name with a space,
 * newline, comma or wildcard (state `refused`), before connecting. */
int ssh_vm_name_ok(const char *name);

/* Whether the calling thread's connections or uploads since its last call ran out of file
 * descriptors (the SSH layer and the relay note it); clears it. The fleet counts such a VM as
 * failed, not against the failure budget. */
void ssh_nofds_note(void);
int ssh_nofds_take(void);

/* Connects, verifies the host key, authenticates (agent, identity or identities, password, in
 * that order). -i naming no file, or a public key (.pub), is refused before connecting, each
 * with its own message; so are a passphrase-protected key that no agent holds (lume-metal asks
 * for no passphrase: `ssh-add` it) and having no credential at all to offer (SSH_AUTH).
 * On success *out belongs to the caller (ssh_close). On failure *why, when not NULL, gets one
 * of the SSH_* reasons and err says what happened; a changed host key shows both SHA-256
 * fingerprints and nothing is sent. o is copied; the strings it points to must outlive *out.
 * Host keys are checked as OpenSSH checks them (net/hostfile.h: patterns, hashed names, @revoked;
 * a host known by any key type that offers a key matching none is a mismatch, as is a revoked
 * key, "HOST KEY REVOKED") and added to known_hosts (accept_new) by appending one line under
 * FILE.lock, as OpenSSH does.
 * The handshake and authentication of all threads' connections go through one gate (8 per
 * core, 16 to 64 at once; one inside for over 3 s stops counting), entered only once the
 * guest's SSH banner has arrived, within the connection's own deadline: a guest that never
 * speaks costs its own timeout and holds no place. The time spent waiting for the gate moves
 * the connection's deadline, as it is the controller's time, not the guest's. */
int ssh_connect(ssh_conn **out, int *why, const ssh_opts *o, char *err);
/* The same over fd, a stream already connected to o->host:o->port (a relay channel): the host
 * key is still checked under o->host and o->port. fd belongs to the connection (or is closed
 * on failure). */
int ssh_connect_fd(ssh_conn **out, int *why, const ssh_opts *o, int fd, char *err);
void ssh_close(ssh_conn *c);

/* Channels opened so far (exec, SFTP, SCP): the round trips of exec a run cost. */
unsigned ssh_exec_count(const ssh_conn *c);
/* Round trips (turns) so far: a turn is the controller having sent bytes that ask for an answer
 * and then waited for the guest's (a read found nothing, then the guest's bytes came); an EOF or
 * a channel close asks nothing. total counts the TCP connect as one when this process made it
 * (not over a relay), and the SSH handshake: key exchange, authentication and the opening of
 * the first channel; after_handshake what came after that opening (0 before any channel). */
void ssh_round_trips(const ssh_conn *c, unsigned *total, unsigned *after_handshake);
/* How long the connection waited, in all, for a place in the handshake gate (ssh_connect.c): the
 * controller's queueing, not the guest's time. */
int64_t ssh_gate_wait_ms(const ssh_conn *c);
/* For the relay, which drives a host's session itself: the libssh2 session, its socket, and
 * "user@host:port" for messages. */
struct _LIBSSH2_SESSION *ssh_session(ssh_conn *c);
int ssh_fd(const ssh_conn *c);
const char *ssh_where(const ssh_conn *c);
/* The known_hosts lines the host-key check skipped that could be this host's (unreadable, or
 * @cert-authority, which is not supported): "FILE:LINE: why; ...", or NULL. A refused connect
 * says them at the end of its message instead. */
const char *ssh_known_hosts_notes(const ssh_conn *c);

typedef struct {
	lm_buf out, err;    /* what the command printed; the caller frees with ssh_result_free */
	int exit_code;      /* valid when signal is empty */
	char signal[32];    /* e.g. "KILL" when the remote process died of a signal */
} ssh_result;
void ssh_result_free(ssh_result *r);

/* Runs cmd, feeding it in (may be NULL). Returns LM_OK when the
 * command ran to an exit status (r->exit_code may still be non-zero), LM_EFAIL when it could
 * not be run, died of a signal, printed more than SSH_EXEC_OUT_MAX / SSH_EXEC_ERR_MAX, or the
 * channel did not close cleanly. On LM_EFAIL r holds no output (only r->signal, when set): the
 * caller frees r only after LM_OK. */
int ssh_exec(ssh_conn *c, const remote_cmd *cmd, const void *in, size_t inlen, ssh_result *r, char *err);

/* One exec channel driven step by step, for a command that answers before it is given its
 * input (deploy's one exec, deploy_exec.h): open, read up to a mark line, write, finish.
 * Everything it reads is bounded as ssh_exec's is, and bounded by the connection's deadline.
 * ssh_exec is open, write, finish. */
typedef struct ssh_chan ssh_chan;
/* Opens a channel and runs cmd; *out belongs to the caller, freed
 * by ssh_chan_finish or ssh_chan_free. */
int ssh_chan_open(ssh_chan **out, ssh_conn *c, const remote_cmd *cmd, char *err);
/* Reads until what the command printed on stdout ends in the line mark ("MARK\n"), or the
 * command ends (EOF: *out then holds no mark); *out is all of stdout so far (owned by h,
 * NUL-terminated, valid until the next call on h). */
int ssh_chan_read_until(ssh_chan *h, const char *mark, const char **out, char *err);
/* Reads what the command sent without waiting for more: 1 once ssh_chan_finish would not
 * wait on the guest (the command's EOF came, a read failed, or the deadline passed), else 0,
 * with *fd the socket to poll for more and *deadline the connection's (lm_now_ms() scale). */
int ssh_chan_ready(ssh_chan *h, int *fd, int64_t *deadline);
/* Writes to the command's stdin; ssh_chan_write_file the whole of local, *sent the bytes. */
int ssh_chan_write(ssh_chan *h, const void *in, size_t inlen, char *err);
int ssh_chan_write_file(ssh_chan *h, const char *local, uint64_t *sent, char *err);
/* Ends the command's stdin (once: ssh_chan_finish then sends no second EOF). */
void ssh_chan_send_eof(ssh_chan *h);
/* Sends EOF, reads the rest, and gives everything the command printed (from the start) and its
 * exit status in r, as ssh_exec does (LM_EFAIL: r holds nothing to free). Frees h. */
int ssh_chan_finish(ssh_chan *h, ssh_result *r, char *err);
/* Closes the channel without waiting for the command (which gets EOF and EPIPE); NULL is fine. */
void ssh_chan_free(ssh_chan *h);

/* Uploads local to remote_dir/name (an absolute path; ssh_upload makes remote_dir and its
 * missing parents, mode 0755, over SFTP, without an exec): written under a temporary name
 * ".NAME.part.PID", then renamed over NAME. *sent gets the bytes sent. SFTP fsyncs the file
 * (fsync@openssh.com) and renames it (an existing NAME, a stale copy of the same upload, is
 * unlinked first: OpenSSH's SFTP v3 rename never replaces); probe and validate use it (deploy
 * sends the payload on its one exec's stdin: deploy_exec.h).
 * SCP has neither, so ssh_upload_scp renames with mv over exec; it is kept for comparison
 * (scripts/bench-upload). */
int ssh_upload(ssh_conn *c, const char *local, const char *remote_dir, const char *name,
    uint64_t *sent, char *err);
int ssh_upload_scp(ssh_conn *c, const char *local, const char *remote_dir, const char *name,
    uint64_t *sent, char *err);

/* SHA-256 fingerprint of a key blob as OpenSSH prints it: "SHA256:" + unpadded base64. */
void ssh_fingerprint(char out[64], const unsigned char *blob, size_t len);

#endif
