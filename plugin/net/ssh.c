/* ssh: see ssh.h. The connection itself: the thread's note of running out of descriptors, the
 * deadline each libssh2 call is bounded by, its accessors and its close. Connecting is
 * ssh_connect.c, the host key ssh_hostkey.c, authentication ssh_auth.c, channels ssh_chan.c;
 * what they share is ssh_int.h. */
#include "net/ssh.h"

#include <libssh2.h>
#include <stdlib.h>
#include <unistd.h>

#include "net/ssh_int.h"

_Thread_local int ssh_nofds;

void
ssh_nofds_note(void)
{
	ssh_nofds = 1;
}

int
ssh_nofds_take(void)
{
	int was = ssh_nofds;

	ssh_nofds = 0;
	return was;
}

int
ssh_time_left(ssh_conn *c)
{
	int64_t left = c->o->deadline_ms - lm_now_ms();

	if (left <= 0)
		return 0;
	libssh2_session_set_timeout(c->s, left > 0x7fffffff ? 0x7fffffff : (long)left);
	return 1;
}

const char *
ssh_sess_err(ssh_conn *c)
{
	char *msg = NULL;

	libssh2_session_last_error(c->s, &msg, NULL, 0);
	return msg ? msg : "unknown error";
}

unsigned
ssh_exec_count(const ssh_conn *c)
{
	return c->execs;
}

int64_t
ssh_gate_wait_ms(const ssh_conn *c)
{
	return c->gate_wait;
}

void
ssh_round_trips(const ssh_conn *c, unsigned *total, unsigned *after_handshake)
{
	*total = c->turns;
	*after_handshake = c->execs ? c->turns - c->turns_hs : 0;
}

struct _LIBSSH2_SESSION *
ssh_session(ssh_conn *c)
{
	return c->s;
}

int
ssh_fd(const ssh_conn *c)
{
	return c->fd;
}

const char *
ssh_where(const ssh_conn *c)
{
	return c->where;
}

const char *
ssh_known_hosts_notes(const ssh_conn *c)
{
	return c->notes[0] ? c->notes : NULL;
}

void
ssh_close(ssh_conn *c)
{
	if (c == NULL)
		return;
	if (c->s != NULL) {
		libssh2_session_set_timeout(c->s, 2000);
		libssh2_session_disconnect(c->s, "lume-metal done");
		libssh2_session_free(c->s);
	}
	if (c->fd >= 0)
		close(c->fd);
	free(c);
}
