/* ssh_int: what ssh.c (the connection), ssh_connect.c (connecting), ssh_hostkey.c (the host
 * key), ssh_auth.c (authentication) and ssh_chan.c (channels) share, included after net/ssh.h
 * (its types). Not for other modules: their interface is ssh.h. */
#ifndef LM_SSH_INT_H
#define LM_SSH_INT_H

#include <stdint.h>

#include <libssh2.h>

#include "core/util.h"

struct ssh_conn {
	int fd;
	LIBSSH2_SESSION *s;
	ssh_opts opt; /* a copy; its strings must outlive the connection */
	const ssh_opts *o;
	char where[300]; /* user@host:port, for messages */
	char notes[LM_ERRLEN]; /* known_hosts lines skipped (ssh_known_hosts_notes), or "" */
	unsigned execs;  /* channels opened: exec, SFTP, SCP */
	/* Round trips (ssh.h): turns so far, and at the first channel's opening; whether bytes went
	 * out since the last turn (a send that asks for no answer is muted), and whether the last
	 * read found nothing (what comes next was waited for). */
	unsigned turns, turns_hs;
	int sent, starved, mute;
	/* The handshake gate's ticket while in the handshake, and whether it is out of the gate
	 * meanwhile, waiting on the guest (gate_yield). */
	struct gate_ticket *ticket;
	int gate_out;
	int64_t gate_wait; /* ms waited for the gate, in all */
};

/* ssh.c */
extern _Thread_local int ssh_nofds; /* this thread ran out of descriptors (ssh_nofds_take) */
int ssh_time_left(ssh_conn *c);     /* sets libssh2's timeout to what is left; 0 when nothing is */
const char *ssh_sess_err(ssh_conn *c); /* libssh2's last error on c's session, for a message */

/* ssh_hostkey.c */
const char *ssh_key_name(const ssh_conn *c); /* the name a host key is known under */
int ssh_key_name_ok(const ssh_conn *c);      /* whether it may be written into known_hosts */
/* The offered key against known_hosts, added there when unknown and accept_new; *why: SSH_*. */
int ssh_check_hostkey(ssh_conn *c, int *why, char *err);

/* ssh_auth.c. The ssh_auth_* answer 1 authenticated, 0 not. */
int ssh_check_secrets(const ssh_opts *o, char *err); /* the identity and password file, before anything goes out */
int ssh_auth_agent(ssh_conn *c, int *offered);       /* each key of the agent */
int ssh_auth_keys(ssh_conn *c, int *offered, char locked[4096], char loose[4096]); /* -i, identities, defaults */
int ssh_has_password(const ssh_opts *o);             /* whether ssh_auth_password would send one */
int ssh_auth_password(ssh_conn *c, char *err);       /* or -1: the password file could not be read */

#endif
