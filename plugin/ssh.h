/* ssh: one verified, authenticated libssh2 session to a guest, with exec and upload.
 * Every remote command line is built by ssh_quote_argv and nothing else. */
#ifndef LM_SSH_H
#define LM_SSH_H

#include <stdint.h>

#include "util.h"

typedef struct {
	const char *host;           /* name or address, IPv4 or IPv6 */
	int port;                   /* 22 when 0 */
	const char *user;
	const char *identity;       /* private key file, or NULL */
	const char *password_file;  /* first line is the password, or NULL */
	int env_password;           /* also try $LUME_METAL_PASSWORD */
	int lume_default_password;  /* also try Lume's default "lume"; the caller warns */
	const char *known_hosts;    /* OpenSSH known_hosts file */
	const char *host_key_alias; /* check and add the host key under this name (port 22), not
	                             * host:port, as OpenSSH's HostKeyAlias; or NULL */
	int accept_new;             /* add an unknown host key instead of refusing */
	int64_t deadline_ms;        /* lm_now_ms() value by which everything must be done */
} ssh_opts;

typedef struct ssh_conn ssh_conn;

/* Error codes of a failed connect, for the fleet's named states. */
enum {
	SSH_UNREACHABLE = 1, SSH_TIMEOUT, SSH_HOSTKEY_UNKNOWN, SSH_HOSTKEY_MISMATCH, SSH_AUTH, SSH_PROTOCOL,
};

/* Connects, verifies the host key, authenticates (agent, identity, password, in that order).
 * On success *out belongs to the caller (ssh_close). On failure *why, when not NULL, gets one
 * of the SSH_* reasons and err says what happened; a changed host key shows both SHA-256
 * fingerprints and nothing is sent. o is copied; the strings it points to must outlive *out.
 * The handshake and authentication of all threads' connections go through one gate (8 per
 * core, 16 to 64 at once; one inside for over 3 s stops counting): the time spent waiting
 * for it moves the connection's deadline, as it is the controller's time, not the guest's. */
int ssh_connect(ssh_conn **out, int *why, const ssh_opts *o, char *err);
/* The same over fd, a stream already connected to o->host:o->port (a relay channel): the host
 * key is still checked under o->host and o->port. fd belongs to the connection (or is closed
 * on failure). */
int ssh_connect_fd(ssh_conn **out, int *why, const ssh_opts *o, int fd, char *err);
void ssh_close(ssh_conn *c);

/* Channels opened so far (exec, SFTP, SCP): the round trips of exec a run cost. */
unsigned ssh_exec_count(const ssh_conn *c);
/* For the relay, which drives a host's session itself: the libssh2 session, its socket, and
 * "user@host:port" for messages. */
struct _LIBSSH2_SESSION *ssh_session(ssh_conn *c);
int ssh_fd(const ssh_conn *c);
const char *ssh_where(const ssh_conn *c);

typedef struct {
	lm_buf out, err;    /* what the command printed; the caller frees with ssh_result_free */
	int exit_code;      /* valid when signal is empty */
	char signal[32];    /* e.g. "KILL" when the remote process died of a signal */
} ssh_result;
void ssh_result_free(ssh_result *r);

/* Runs cmd (built by ssh_quote_argv), feeding it in (may be NULL). Returns LM_OK when the
 * command ran to an exit status (r->exit_code may still be non-zero), LM_EFAIL when it could
 * not be run, died of a signal, or the channel did not close cleanly. */
int ssh_exec(ssh_conn *c, const char *cmd, const void *in, size_t inlen, ssh_result *r, char *err);

/* Uploads local to remote_dir/name (an absolute path; ssh_upload makes remote_dir and its
 * missing parents, mode 0755, over SFTP, without an exec): written under a temporary name
 * ".NAME.part.PID", then renamed over NAME. *sent gets the bytes sent. SFTP fsyncs the file
 * (fsync@openssh.com) and renames it (an existing NAME, a stale copy of the same upload, is
 * unlinked first: OpenSSH's SFTP v3 rename never replaces); deploy uses it.
 * SCP has neither, so ssh_upload_scp renames with mv over exec; it is kept for comparison
 * (scripts/bench-upload). */
int ssh_upload(ssh_conn *c, const char *local, const char *remote_dir, const char *name,
    uint64_t *sent, char *err);
int ssh_upload_scp(ssh_conn *c, const char *local, const char *remote_dir, const char *name,
    uint64_t *sent, char *err);

/* Appends argv (NULL-terminated) to out as one POSIX sh command line: every word in single
 * quotes, so spaces, quotes, $(), backticks, newlines and non-ASCII arrive as they are. A
 * word that starts with "~/" keeps "$HOME"/ outside the quotes. */
int ssh_quote_argv(lm_buf *out, const char *const *argv);

/* SHA-256 fingerprint of a key blob as OpenSSH prints it: "SHA256:" + unpadded base64. */
void ssh_fingerprint(char out[64], const unsigned char *blob, size_t len);

#endif
