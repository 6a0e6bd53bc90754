/* ssh_chan: channels on a connection (ssh.h): a command's exec, its streams and its end, and the
 * uploads over SFTP and SCP. Each libssh2 call is bounded by the time left to the deadline. */
#include "net/ssh.h"

#include <errno.h>
#include <fcntl.h>
#include <libssh2.h>
#include <libssh2_sftp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "net/ssh_int.h"

/* An upload's read buffer, on the heap: a pool thread's stack pages stay resident for the
 * whole run once touched, a freed buffer is reused by the next upload. */
#define UPLOAD_CHUNK (32u << 10)

/* A channel opened: the first one ends the handshake's turns. */
static void
chan_opened(ssh_conn *c)
{
	if (c->execs++ == 0)
		c->turns_hs = c->turns;
}

/* Waits until the socket is ready in the direction libssh2 is blocked on, within the deadline. */
static int
wait_socket(ssh_conn *c, char *err)
{
	int dir = libssh2_session_block_directions(c->s);
	struct pollfd p = {.fd = c->fd};
	int64_t left = c->o->deadline_ms - lm_now_ms();

	p.events = (dir & LIBSSH2_SESSION_BLOCK_INBOUND ? POLLIN : 0) |
	    (dir & LIBSSH2_SESSION_BLOCK_OUTBOUND ? POLLOUT : 0);
	if (p.events == 0)
		p.events = POLLIN;
	if (left <= 0 || poll(&p, 1, (int)(left > 0x7fffffff ? 0x7fffffff : left)) == 0)
		return lm_err(err, LM_EFAIL, "%s: timed out waiting for the command", c->where);
	return LM_OK;
}

void
ssh_result_free(ssh_result *r)
{
	lm_buf_free(&r->out);
	lm_buf_free(&r->err);
}

/* Opens local for an upload and gives a read buffer (*buf, UPLOAD_CHUNK bytes, the caller's):
 * the descriptor, or an LM_* error (a lack of descriptors noted: ssh_nofds_note). */
static int
upload_open(const char *local, char **buf, char *err)
{
	int fd;

	if ((fd = open(local, O_RDONLY | O_CLOEXEC)) < 0) {
		if (errno == EMFILE || errno == ENFILE)
			ssh_nofds_note();
		return lm_err(err, LM_EINPUT, "%s: %s", local, strerror(errno));
	}
	if ((*buf = malloc(UPLOAD_CHUNK)) == NULL) {
		close(fd);
		return lm_err(err, LM_EFAIL, "out of memory");
	}
	return fd;
}

struct ssh_chan {
	ssh_conn *c;
	LIBSSH2_CHANNEL *ch;
	ssh_result r;
	int eof_sent;
};

int
ssh_chan_open(ssh_chan **out, ssh_conn *c, const remote_cmd *cmd, char *err)
{
	ssh_chan *h;

	*out = NULL;
	if ((h = calloc(1, sizeof *h)) == NULL)
		return lm_err(err, LM_EFAIL, "out of memory");
	h->c = c;
	h->r.exit_code = -1;
	if (!ssh_time_left(c) || (h->ch = libssh2_channel_open_session(c->s)) == NULL) {
		lm_err(err, LM_EFAIL, "%s: cannot open a channel: %s", c->where, ssh_time_left(c) ? ssh_sess_err(c) : "timed out");
		ssh_chan_free(h);
		return LM_EFAIL;
	}
	chan_opened(c);
	if (libssh2_channel_exec(h->ch, rcmd_text(cmd)) != 0) {
		lm_err(err, LM_EFAIL, "%s: cannot run the command: %s", c->where, ssh_sess_err(c));
		ssh_chan_free(h);
		return LM_EFAIL;
	}
	*out = h;
	return LM_OK;
}

void
ssh_chan_free(ssh_chan *h)
{
	if (h == NULL)
		return;
	libssh2_session_set_blocking(h->c->s, 1);
	if (h->ch != NULL)
		libssh2_channel_free(h->ch);
	ssh_result_free(&h->r);
	free(h);
}

int
ssh_chan_write(ssh_chan *h, const void *in, size_t inlen, char *err)
{
	ssh_conn *c = h->c;
	ssize_t n;

	for (size_t off = 0; off < inlen; off += (size_t)n)
		if (!ssh_time_left(c) || (n = libssh2_channel_write(h->ch, (const char *)in + off, inlen - off)) < 0) {
			/* Cleaning up after a dead guest must not take another whole timeout. */
			libssh2_session_set_timeout(c->s, 1000);
			return lm_err(err, LM_EFAIL, "%s: writing the command's input: %s", c->where,
			    ssh_time_left(c) ? ssh_sess_err(c) : "timed out");
		}
	return LM_OK;
}

int
ssh_chan_write_file(ssh_chan *h, const char *local, uint64_t *sent, char *err)
{
	char *buf;
	ssize_t n;
	int fd, rc = LM_OK;

	*sent = 0;
	if ((fd = upload_open(local, &buf, err)) < 0)
		return fd;
	while (rc == LM_OK && (n = read(fd, buf, UPLOAD_CHUNK)) > 0)
		if ((rc = ssh_chan_write(h, buf, (size_t)n, err)) == LM_OK)
			*sent += (uint64_t)n;
	if (rc == LM_OK && n < 0)
		rc = lm_err(err, LM_EFAIL, "%s: read: %s", local, strerror(errno));
	free(buf);
	close(fd);
	return rc;
}

/* Reads both streams into h->r, without blocking on either (they share one window, so a
 * chatty stderr cannot stall stdout), until the command's EOF, or with mark until stdout
 * holds a line equal to mark. Bounded by SSH_EXEC_OUT_MAX and SSH_EXEC_ERR_MAX. With waiting,
 * it never sleeps on the socket: where it would, *waiting is set and it returns LM_OK. */
static int
chan_pump(ssh_chan *h, const char *mark, int *waiting, char *err)
{
	ssh_conn *c = h->c;
	size_t mlen = mark ? strlen(mark) : 0;
	char buf[16384];
	ssize_t n;
	int rc = LM_OK, spun = 0;

	libssh2_session_set_blocking(c->s, 0);
	for (;;) {
		int got = 0, eof = libssh2_channel_eof(h->ch); /* before reading: data that came with EOF is read */

		for (int stream = 0; stream <= SSH_EXTENDED_DATA_STDERR; stream += SSH_EXTENDED_DATA_STDERR) {
			lm_buf *b = stream ? &h->r.err : &h->r.out;

			while ((n = libssh2_channel_read_ex(h->ch, stream, buf, sizeof buf)) > 0) {
				size_t max = stream ? SSH_EXEC_ERR_MAX : SSH_EXEC_OUT_MAX;

				got = 1;
				if (b->len + (size_t)n > max) {
					rc = lm_err(err, LM_EFAIL, "%s: the guest's answer exceeds %zu bytes (on %s); stopped "
					    "reading it", c->where, max, stream ? "stderr" : "stdout");
					goto capped;
				}
				if (lm_buf_add(b, buf, (size_t)n) != 0) {
					rc = lm_err(err, LM_EFAIL, "%s: out of memory", c->where);
					goto capped;
				}
			}
			if (n < 0 && n != LIBSSH2_ERROR_EAGAIN) {
				rc = lm_err(err, LM_EFAIL, "%s: %s", c->where, ssh_sess_err(c));
				goto done;
			}
		}
		if (mark && h->r.out.len > mlen) {
			const char *o = h->r.out.data, *e = o + h->r.out.len - mlen - 1;

			if (memcmp(e, mark, mlen) == 0 && e[mlen] == '\n' && (e == o || e[-1] == '\n'))
				break; /* the mark ends what was printed (the guest says nothing until it is answered) */
		}
		if (eof)
			break;
		/* The reads may have taken EOF off the socket: look again before sleeping on it. A read
		 * of one stream also takes the other stream's packets off the socket into libssh2's
		 * queue: data queued so is read before sleeping (once: a packet of a stream nobody reads
		 * must not spin), or the guest's last line waits in the queue for the deadline. */
		if (!got && !libssh2_channel_eof(h->ch)) {
			unsigned long queued = 0;

			libssh2_channel_window_read_ex(h->ch, &queued, NULL);
			if (queued > 0 && !spun) {
				spun = 1;
				continue;
			}
			if (waiting != NULL && lm_now_ms() < c->o->deadline_ms) {
				*waiting = 1;
				goto done;
			}
			if ((rc = wait_socket(c, err)) != LM_OK)
				goto done;
		}
		spun = 0;
	}
	goto done;
capped:
	/* The rest is not read: freeing the channel closes it, and what the guest sent meanwhile is at
	 * most the channel's window, which is never opened further. The guest's command gets EPIPE. */
done:
	/* Cleaning up after a failed read (the channel's close, the disconnect) must not take
	 * another whole timeout: libssh2's was set when the channel opened. */
	if (rc != LM_OK)
		libssh2_session_set_timeout(c->s, 1000);
	libssh2_session_set_blocking(c->s, 1);
	return rc;
}

void
ssh_chan_send_eof(ssh_chan *h)
{
	/* The EOF asks nothing (roundTrips): what comes after it is the command's own answer. */
	if (!h->eof_sent) {
		h->c->mute = 1;
		libssh2_channel_send_eof(h->ch);
		h->c->mute = 0;
	}
	h->eof_sent = 1;
}

int
ssh_chan_read_until(ssh_chan *h, const char *mark, const char **out, char *err)
{
	int rc = chan_pump(h, mark, NULL, err);

	*out = h->r.out.data ? h->r.out.data : "";
	return rc;
}

int
ssh_chan_ready(ssh_chan *h, int *fd, int64_t *deadline)
{
	char err[LM_ERRLEN];
	int waiting = 0;

	*fd = h->c->fd;
	*deadline = h->c->o->deadline_ms;
	/* An error here comes again from ssh_chan_finish, which says it. */
	return chan_pump(h, NULL, &waiting, err) != LM_OK || !waiting;
}

int
ssh_chan_finish(ssh_chan *h, ssh_result *r, char *err)
{
	ssh_conn *c = h->c;
	char *sig = NULL;
	size_t siglen = 0;
	int rc;

	memset(r, 0, sizeof *r);
	r->exit_code = -1;
	ssh_chan_send_eof(h);
	if ((rc = chan_pump(h, NULL, NULL, err)) != LM_OK)
		goto done;
	c->mute = 1; /* nor does the close: the guest closes once its command has ended */
	rc = libssh2_channel_close(h->ch);
	c->mute = 0;
	if (rc != 0 || libssh2_channel_wait_closed(h->ch) != 0) {
		rc = lm_err(err, LM_EFAIL, "%s: the channel did not close cleanly: %s", c->where, ssh_sess_err(c));
		goto done;
	}
	/* get_exit_status answers 0 when there is none: look for a signal first. */
	if (libssh2_channel_get_exit_signal(h->ch, &sig, &siglen, NULL, NULL, NULL, NULL) == 0 && sig != NULL) {
		snprintf(r->signal, sizeof r->signal, "%.*s", (int)siglen, sig);
		rc = lm_err(err, LM_EFAIL, "%s: the remote command was killed by SIG%s", c->where, r->signal);
	} else {
		*r = h->r; /* the output moves to r */
		memset(&h->r, 0, sizeof h->r);
		r->exit_code = libssh2_channel_get_exit_status(h->ch);
	}
	libssh2_free(c->s, sig);
done:
	ssh_chan_free(h);
	return rc;
}

int
ssh_exec(ssh_conn *c, const remote_cmd *cmd, const void *in, size_t inlen, ssh_result *r, char *err)
{
	ssh_chan *h;
	int rc;

	memset(r, 0, sizeof *r);
	r->exit_code = -1;
	if ((rc = ssh_chan_open(&h, c, cmd, err)) != LM_OK)
		return rc;
	if ((rc = ssh_chan_write(h, in, inlen, err)) != LM_OK) {
		ssh_chan_free(h);
		return rc;
	}
	return ssh_chan_finish(h, r, err);
}

/* mkdir -p over SFTP of the first len bytes of path: a directory once this returns 0. One
 * stat when it already exists; missing parents are made first. */
static int
sftp_mkdirs(LIBSSH2_SFTP *sftp, const char *path, unsigned len)
{
	LIBSSH2_SFTP_ATTRIBUTES a;
	unsigned parent = len;

	if (libssh2_sftp_stat_ex(sftp, path, len, LIBSSH2_SFTP_STAT, &a) == 0)
		return LIBSSH2_SFTP_S_ISDIR(a.permissions) ? 0 : -1;
	while (parent > 0 && path[parent - 1] != '/')
		parent--;
	if (parent <= 1 || sftp_mkdirs(sftp, path, parent - 1) != 0)
		return -1;
	if (libssh2_sftp_mkdir_ex(sftp, path, len, 0755) == 0)
		return 0;
	/* another upload made it meanwhile */
	return libssh2_sftp_stat_ex(sftp, path, len, LIBSSH2_SFTP_STAT, &a) == 0 &&
	    LIBSSH2_SFTP_S_ISDIR(a.permissions) ? 0 : -1;
}

int
ssh_upload(ssh_conn *c, const char *local, const char *dir, const char *name, uint64_t *sent, char *err)
{
	LIBSSH2_SFTP *sftp = NULL;
	LIBSSH2_SFTP_HANDLE *h = NULL;
	char tmp[4096], dst[4096], *buf;
	ssize_t n, w;
	int fd = -1, rc = LM_OK;

	*sent = 0;
	if (lm_fmt(tmp, sizeof tmp, "%s/.%s.part.%ld", dir, name, (long)getpid()) < 0 ||
	    lm_fmt(dst, sizeof dst, "%s/%s", dir, name) < 0)
		return lm_err(err, LM_EINPUT, "%s: remote path too long", name);
	if ((fd = upload_open(local, &buf, err)) < 0)
		return fd;
	if (!ssh_time_left(c) || (sftp = libssh2_sftp_init(c->s)) == NULL) {
		rc = lm_err(err, LM_EFAIL, "%s: cannot start SFTP: %s", c->where, ssh_time_left(c) ? ssh_sess_err(c) : "timed out");
		goto done;
	}
	chan_opened(c);
	if (!ssh_time_left(c) || sftp_mkdirs(sftp, dir, (unsigned)strlen(dir)) != 0) {
		rc = lm_err(err, LM_EFAIL, "%s: cannot create the directory %s (SFTP error %lu)", c->where, dir,
		    libssh2_sftp_last_error(sftp));
		goto done;
	}
	h = libssh2_sftp_open(sftp, tmp, LIBSSH2_FXF_WRITE | LIBSSH2_FXF_CREAT | LIBSSH2_FXF_TRUNC | LIBSSH2_FXF_EXCL,
	    LIBSSH2_SFTP_S_IRUSR | LIBSSH2_SFTP_S_IWUSR);
	if (h == NULL) {
		rc = lm_err(err, LM_EFAIL, "%s: cannot create %s (SFTP error %lu)", c->where, tmp,
		    libssh2_sftp_last_error(sftp));
		goto done;
	}
	while ((n = read(fd, buf, UPLOAD_CHUNK)) > 0)
		for (ssize_t off = 0; off < n; off += w) {
			if (!ssh_time_left(c) || (w = libssh2_sftp_write(h, buf + off, (size_t)(n - off))) < 0) {
				rc = lm_err(err, LM_EFAIL, "%s: upload of %s failed: %s", c->where, name,
				    ssh_time_left(c) ? "write error (the guest's disk is full or its SFTP server died)"
				    : "timed out (the guest's SFTP server stopped answering)");
				goto done;
			}
			*sent += (uint64_t)w;
		}
	if (n < 0) {
		rc = lm_err(err, LM_EFAIL, "%s: read: %s", local, strerror(errno));
		goto done;
	}
	if (libssh2_sftp_fsync(h) != 0 || libssh2_sftp_close(h) != 0) {
		h = NULL;
		rc = lm_err(err, LM_EFAIL, "%s: upload of %s could not be synced (disk full?)", c->where, name);
		goto done;
	}
	h = NULL;
	/* SFTP v3 (OpenSSH) renames only onto a free name, and libssh2 1.10 has no posix-rename:
	 * a stale copy of this very upload is removed first. */
	libssh2_sftp_unlink(sftp, dst);
	if (libssh2_sftp_rename_ex(sftp, tmp, (unsigned)strlen(tmp), dst, (unsigned)strlen(dst),
	    LIBSSH2_SFTP_RENAME_OVERWRITE | LIBSSH2_SFTP_RENAME_ATOMIC | LIBSSH2_SFTP_RENAME_NATIVE) != 0)
		rc = lm_err(err, LM_EFAIL, "%s: cannot rename the upload into %s (SFTP error %lu)", c->where, dst,
		    libssh2_sftp_last_error(sftp));
done:
	/* Cleaning up after a dead guest must not take another whole timeout. */
	if (rc != LM_OK)
		libssh2_session_set_timeout(c->s, 1000);
	if (h != NULL)
		libssh2_sftp_close(h);
	if (rc != LM_OK && sftp != NULL)
		libssh2_sftp_unlink(sftp, tmp);
	if (sftp != NULL)
		libssh2_sftp_shutdown(sftp);
	free(buf);
	close(fd);
	return rc;
}

int
ssh_upload_scp(ssh_conn *c, const char *local, const char *dir, const char *name, uint64_t *sent, char *err)
{
	LIBSSH2_CHANNEL *ch = NULL;
	char tmp[4096], dst[4096], *buf = NULL;
	const char *mv[] = {"mv", "-f", "--", tmp, dst, NULL};
	struct stat st;
	remote_cmd *cmd = NULL;
	ssh_result r;
	ssize_t n, w;
	int fd, rc = LM_OK;

	*sent = 0;
	if (lm_fmt(tmp, sizeof tmp, "%s/.%s.part.%ld", dir, name, (long)getpid()) < 0 ||
	    lm_fmt(dst, sizeof dst, "%s/%s", dir, name) < 0)
		return lm_err(err, LM_EINPUT, "%s: remote path too long", name);
	if ((fd = open(local, O_RDONLY | O_CLOEXEC)) < 0 || fstat(fd, &st) != 0) {
		if (errno == EMFILE || errno == ENFILE)
			ssh_nofds_note();
		rc = lm_err(err, LM_EINPUT, "%s: %s", local, strerror(errno));
		if (fd >= 0)
			close(fd);
		return rc;
	}
	if ((buf = malloc(UPLOAD_CHUNK)) == NULL) {
		rc = lm_err(err, LM_EFAIL, "out of memory");
		goto done;
	}
	if (!ssh_time_left(c) || (ch = libssh2_scp_send64(c->s, tmp, 0600, st.st_size, 0, 0)) == NULL) {
		rc = lm_err(err, LM_EFAIL, "%s: cannot start SCP to %s: %s", c->where, tmp,
		    ssh_time_left(c) ? ssh_sess_err(c) : "timed out");
		goto done;
	}
	chan_opened(c);
	while ((n = read(fd, buf, UPLOAD_CHUNK)) > 0)
		for (ssize_t off = 0; off < n; off += w) {
			if (!ssh_time_left(c) || (w = libssh2_channel_write(ch, buf + off, (size_t)(n - off))) < 0) {
				rc = lm_err(err, LM_EFAIL, "%s: SCP upload of %s failed", c->where, name);
				goto done;
			}
			*sent += (uint64_t)w;
		}
	libssh2_channel_send_eof(ch);
	libssh2_channel_wait_eof(ch);
	libssh2_channel_close(ch);
	libssh2_channel_wait_closed(ch);
	libssh2_channel_free(ch);
	ch = NULL;
	if (rcmd_argv(&cmd, mv) != LM_OK) {
		rc = lm_err(err, LM_EFAIL, "out of memory");
		goto done;
	}
	if ((rc = ssh_exec(c, cmd, NULL, 0, &r, err)) != LM_OK)
		goto done;
	if (r.exit_code != 0)
		rc = lm_err(err, LM_EFAIL, "%s: cannot rename the upload into %s", c->where, dst);
	ssh_result_free(&r);
done:
	if (ch != NULL)
		libssh2_channel_free(ch);
	rcmd_free(cmd);
	free(buf);
	close(fd);
	return rc;
}
