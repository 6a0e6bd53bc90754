/* stub_ssh: see stub_ssh.h. Linked in place of plugin/net/ssh.c and ssh_*.c by every harness;
 * plugin/net/relay.c stays (it uses ssh.h alone, and no harness opens a relay). */
#include "stub_ssh.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net/ssh.h"

struct ssh_conn {
	unsigned execs;
	char where[320];
};

static const uint8_t *feed, *feed_end;

void
stub_ssh_feed(const uint8_t *d, size_t n)
{
	feed = d;
	feed_end = d ? d + n : NULL;
}

/* The next answer: its status byte, stdout and stderr. 0 when there are no more. */
static int
next_answer(uint8_t *status, const uint8_t **out, size_t *outlen, const uint8_t **err, size_t *errlen)
{
	const uint8_t *rs, *us, *end;

	if (feed == NULL || feed >= feed_end)
		return 0;
	rs = memchr(feed, 0x1e, (size_t)(feed_end - feed));
	end = rs ? rs : feed_end;
	*status = end > feed ? feed[0] : '0'; /* an empty answer: exit 0, nothing printed */
	*out = end > feed ? feed + 1 : end;
	us = memchr(*out, STUB_SSH_US, (size_t)(end - *out));
	*outlen = (size_t)((us ? us : end) - *out);
	*err = us ? us + 1 : end;
	*errlen = (size_t)(end - *err);
	feed = rs ? rs + 1 : feed_end;
	return 1;
}

static int
conn_new(ssh_conn **out, const ssh_opts *o, char *err)
{
	if ((*out = calloc(1, sizeof **out)) == NULL)
		return lm_err(err, LM_EFAIL, "out of memory");
	snprintf((*out)->where, sizeof (*out)->where, "%s@%s:%d", o->user ? o->user : "?", o->host ? o->host : "?",
	    o->port ? o->port : 22);
	return LM_OK;
}

int
ssh_connect(ssh_conn **out, int *why, const ssh_opts *o, char *err)
{
	if (why)
		*why = 0;
	return conn_new(out, o, err);
}

int
ssh_connect_fd(ssh_conn **out, int *why, const ssh_opts *o, int fd, char *err)
{
	close(fd);
	if (why)
		*why = 0;
	return conn_new(out, o, err);
}

void
ssh_close(ssh_conn *c)
{
	free(c);
}

unsigned
ssh_exec_count(const ssh_conn *c)
{
	return c->execs;
}

void
ssh_round_trips(const ssh_conn *c, unsigned *total, unsigned *after_handshake)
{
	*total = *after_handshake = c->execs;
}

int64_t
ssh_gate_wait_ms(const ssh_conn *c)
{
	(void)c;
	return 0;
}

struct _LIBSSH2_SESSION *
ssh_session(ssh_conn *c)
{
	(void)c;
	return NULL;
}

int
ssh_fd(const ssh_conn *c)
{
	(void)c;
	return -1;
}

const char *
ssh_where(const ssh_conn *c)
{
	return c->where;
}

const char *
ssh_known_hosts_notes(const ssh_conn *c)
{
	(void)c;
	return NULL; /* no known_hosts: the stub checks no host key */
}

void
ssh_result_free(ssh_result *r)
{
	lm_buf_free(&r->out);
	lm_buf_free(&r->err);
}

static int exec_answer(ssh_conn *c, ssh_result *r, char *err);

/* As ssh.c's: after a failure r holds no output. */
int
ssh_exec(ssh_conn *c, const remote_cmd *cmd, const void *in, size_t inlen, ssh_result *r, char *err)
{
	int rc;

	(void)cmd, (void)in, (void)inlen;
	if ((rc = exec_answer(c, r, err)) != LM_OK)
		ssh_result_free(r);
	return rc;
}

static int
exec_answer(ssh_conn *c, ssh_result *r, char *err)
{
	const uint8_t *o, *e;
	size_t olen, elen;
	uint8_t st;

	memset(r, 0, sizeof *r);
	r->exit_code = -1;
	c->execs++;
	if (!next_answer(&st, &o, &olen, &e, &elen))
		return lm_err(err, LM_EFAIL, "%s: cannot open a channel: the connection was lost", c->where);
	if (st == 'E')
		return lm_err(err, LM_EFAIL, "%s: cannot open a channel: stub", c->where);
	if ((olen && lm_buf_add(&r->out, o, olen) != 0) || (elen && lm_buf_add(&r->err, e, elen) != 0))
		return lm_err(err, LM_EFAIL, "out of memory");
	if (st == 'T')
		return lm_err(err, LM_EFAIL, "%s: timed out", c->where);
	if (st == 'S') {
		snprintf(r->signal, sizeof r->signal, "KILL");
		return lm_err(err, LM_EFAIL, "%s: the command died of signal KILL", c->where);
	}
	r->exit_code = st >= '0' && st <= '9' ? st - '0' : st;
	return LM_OK;
}

static int
upload(ssh_conn *c, uint64_t *sent, char *err)
{
	const uint8_t *o, *e;
	size_t olen, elen;
	uint8_t st;

	*sent = 0;
	c->execs++;
	if (!next_answer(&st, &o, &olen, &e, &elen))
		return lm_err(err, LM_EFAIL, "%s: cannot open SFTP: the connection was lost", c->where);
	if (st != '0')
		return lm_err(err, LM_EFAIL, "%s: upload: %s%.*s", c->where, st == 'T' ? "timed out: " : "",
		    (int)(elen > 300 ? 300 : elen), (const char *)e);
	*sent = olen;
	return LM_OK;
}

int
ssh_upload(ssh_conn *c, const char *local, const char *remote_dir, const char *name, uint64_t *sent, char *err)
{
	(void)local, (void)remote_dir, (void)name;
	return upload(c, sent, err);
}

int
ssh_upload_scp(ssh_conn *c, const char *local, const char *remote_dir, const char *name, uint64_t *sent,
    char *err)
{
	(void)local, (void)remote_dir, (void)name;
	return upload(c, sent, err);
}

void
ssh_fingerprint(char out[64], const unsigned char *blob, size_t len)
{
	(void)blob, (void)len;
	snprintf(out, 64, "SHA256:stub");
}

/* Out of descriptors never happens in the stub: nothing to note. */
void
ssh_nofds_note(void)
{
}

int
ssh_nofds_take(void)
{
	return 0;
}

/* A channel takes one answer when it opens: read_until gives its stdout up to and including the
 * first line that is the mark (all of it when there is none, as at EOF); finish gives the whole
 * answer, as ssh_exec does. Writes go nowhere; write_file "sends" the file's size (0 when
 * there is no such file). */
struct ssh_chan {
	ssh_conn *c;
	ssh_result r;
	int rc;
	char err[LM_ERRLEN];
	lm_buf upto;
};

int
ssh_chan_open(ssh_chan **out, ssh_conn *c, const remote_cmd *cmd, char *err)
{
	(void)cmd;
	if ((*out = calloc(1, sizeof **out)) == NULL)
		return lm_err(err, LM_EFAIL, "out of memory");
	(*out)->c = c;
	if (((*out)->rc = exec_answer(c, &(*out)->r, (*out)->err)) != LM_OK && (*out)->r.exit_code == -1 &&
	    (*out)->r.out.len == 0 && strstr((*out)->err, "cannot open a channel") != NULL) {
		lm_err(err, LM_EFAIL, "%s", (*out)->err);
		ssh_chan_free(*out);
		*out = NULL;
		return LM_EFAIL;
	}
	return LM_OK;
}

int
ssh_chan_read_until(ssh_chan *h, const char *mark, const char **out, char *err)
{
	const char *s = h->r.out.data ? h->r.out.data : "";
	size_t n = h->r.out.len, ml = strlen(mark), end = n;

	for (size_t i = 0; i + ml <= n; i++)
		if ((i == 0 || s[i - 1] == '\n') && memcmp(s + i, mark, ml) == 0 && i + ml < n && s[i + ml] == '\n') {
			end = i + ml + 1;
			break;
		}
	if (end == n && h->rc != LM_OK)
		return lm_err(err, LM_EFAIL, "%s", h->err);
	h->upto.len = 0;
	if (lm_buf_add(&h->upto, s, end) != 0 || lm_buf_add(&h->upto, "", 1) != 0)
		return lm_err(err, LM_EFAIL, "out of memory");
	*out = h->upto.data;
	return LM_OK;
}

/* The whole answer was read at the opening: finishing never waits. */
int
ssh_chan_ready(ssh_chan *h, int *fd, int64_t *deadline)
{
	(void)h;
	*fd = -1;
	*deadline = 0;
	return 1;
}

int
ssh_chan_write(ssh_chan *h, const void *in, size_t inlen, char *err)
{
	(void)in, (void)inlen;
	return h->rc == LM_OK ? LM_OK : lm_err(err, LM_EFAIL, "%s", h->err);
}

int
ssh_chan_write_file(ssh_chan *h, const char *local, uint64_t *sent, char *err)
{
	FILE *f;

	*sent = 0;
	if (h->rc != LM_OK)
		return lm_err(err, LM_EFAIL, "%s", h->err);
	if ((f = fopen(local, "rb")) == NULL) /* the harnesses' payload need not exist */
		return LM_OK;
	if (fseek(f, 0, SEEK_END) == 0 && ftell(f) > 0)
		*sent = (uint64_t)ftell(f);
	fclose(f);
	return LM_OK;
}

void
ssh_chan_send_eof(ssh_chan *h)
{
	(void)h;
}

int
ssh_chan_finish(ssh_chan *h, ssh_result *r, char *err)
{
	int rc = h->rc;

	memset(r, 0, sizeof *r);
	if (rc == LM_OK) {
		*r = h->r;
		memset(&h->r, 0, sizeof h->r);
	} else
		lm_err(err, LM_EFAIL, "%s", h->err);
	ssh_chan_free(h);
	return rc;
}

void
ssh_chan_free(ssh_chan *h)
{
	if (h == NULL)
		return;
	ssh_result_free(&h->r);
	lm_buf_free(&h->upto);
	free(h);
}

/* ops_process_init's: no harness reads $LUME_METAL_PASSWORD. */
int
ssh_take_env_password(void)
{
	return 0;
}
