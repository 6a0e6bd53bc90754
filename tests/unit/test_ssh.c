/* The SSH transport against a real OpenSSH sshd on 127.0.0.2 (tests/sshd.sh), and a listener
 * that never speaks. Host keys (known_hosts appended to, hostile names, other key types),
 * authentication (secret files), exec (exit codes, signals, quoting, both streams, the output
 * cap), SFTP upload, the deadline, and running out of file descriptors. */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libssh2.h>

#include "net/ssh.h"
#include "unit.h"
#include "core/util.h"

static char dir[] = "/tmp/lm-unit-ssh.XXXXXX";

/* libssh2_channel_read_ex interposed (ssh_chan.c's calls come here; the real one is next): with
 * slow_stderr set, a read of stderr first waits 300 ms, so that stdout's packets reach the
 * socket and that read takes them into libssh2's queue, as a busy controller's does by chance. */
static int slow_stderr;
ssize_t
libssh2_channel_read_ex(LIBSSH2_CHANNEL *ch, int stream, char *buf, size_t len)
{
	static ssize_t (*real)(LIBSSH2_CHANNEL *, int, char *, size_t);

	if (real == NULL)
		*(void **)&real = dlsym(RTLD_NEXT, "libssh2_channel_read_ex");
	if (slow_stderr && stream == SSH_EXTENDED_DATA_STDERR)
		usleep(300000);
	return real(ch, stream, buf, len);
}
static char known[4200], key[4200], cmd[16384];
static int port;

static int
run(const char *fmt, const char *a)
{
	snprintf(cmd, sizeof cmd, fmt, a, a, a, a);
	return system(cmd);
}

static int
start(const char *extra)
{
	char c[8192];

	snprintf(c, sizeof c, "sh " LM_DATADIR "/tests/sshd.sh start %s 127.0.0.2 %d %s", dir, port, extra);
	return system(c);
}

static void
stop(void)
{
	run("sh " LM_DATADIR "/tests/sshd.sh stop %s", dir);
}

/* ssh-keygen's fingerprint of the guest's host key, to compare with ours. */
static void
host_fingerprint(char *out, size_t len)
{
	FILE *p;

	snprintf(cmd, sizeof cmd, "ssh-keygen -lf %s/host_ed25519.pub | awk '{print $2}'", dir);
	out[0] = '\0';
	if ((p = popen(cmd, "r")) != NULL) {
		if (fgets(out, (int)len, p))
			out[strcspn(out, "\n")] = '\0';
		pclose(p);
	}
}

static ssh_opts
opts(int ms)
{
	ssh_opts o = {.host = "127.0.0.2", .port = port, .user = getenv("USER") ? getenv("USER") : "root",
		.identity = key, .known_hosts = known, .deadline_ms = lm_now_ms() + ms};
	return o;
}

/* The whole of a small file (static), or "" when it cannot be read. */
static const char *
slurp(const char *path)
{
	static char buf[65536];
	FILE *f = fopen(path, "r");
	size_t n = 0;

	if (f != NULL) {
		n = fread(buf, 1, sizeof buf - 1, f);
		fclose(f);
	}
	buf[n] = '\0';
	return buf;
}

/* Runs argv remotely through the quoting function; returns stdout (static). */
static const char *
remote(ssh_conn *c, const char *const *argv, int *code)
{
	static char out[4096];
	ssh_result r;
	remote_cmd *rc_cmd = NULL;
	char err[LM_ERRLEN];

	rcmd_argv(&rc_cmd, argv);
	*code = rc_cmd && ssh_exec(c, rc_cmd, NULL, 0, &r, err) == LM_OK ? r.exit_code : -1;
	snprintf(out, sizeof out, "%s", *code != -1 && r.out.data ? r.out.data : "");
	if (*code != -1)
		ssh_result_free(&r);
	rcmd_free(rc_cmd);
	return out;
}

/* `sh -c script`, valid until the next call (NULL frees the last). */
static const remote_cmd *
sh_c(const char *script)
{
	static remote_cmd *last;
	const char *argv[] = {"sh", "-c", script, NULL};

	rcmd_free(last);
	last = NULL;
	if (script != NULL && rcmd_argv(&last, argv) != LM_OK)
		abort();
	return last;
}

int
main(void)
{
	char err[LM_ERRLEN] = "", fp[64], want[128];
	ssh_conn *c = NULL;
	ssh_opts o;
	ssh_result r;
	int why = 0, rc, code;
	int64_t t0;

	unsetenv("SSH_AUTH_SOCK");
	if (mkdtemp(dir) == NULL)
		return 2;
	if (getenv("USER") == NULL)
		setenv("USER", getenv("LOGNAME") ? getenv("LOGNAME") : "root", 1);
	snprintf(known, sizeof known, "%s/known_hosts", dir);
	snprintf(key, sizeof key, "%s/id_ed25519", dir);
	port = 20000 + (int)(getpid() % 20000);
	if (start("") != 0) {
		printf("not ok - sshd did not start\n");
		return 1;
	}
	host_fingerprint(want, sizeof want);

	o = opts(5000);
	rc = ssh_connect(&c, &why, &o, err);
	UNIT_OK(rc != LM_OK && why == SSH_HOSTKEY_UNKNOWN, "an unknown host key is refused");
	UNIT_HAS(err, want, "... showing its SHA-256 fingerprint as ssh-keygen -l does");
	UNIT_HAS(err, "--accept-new", "... and how to accept it");
	UNIT_OK(access(known, F_OK) != 0, "... and known_hosts is not written");

	/* The user's known_hosts: a symlink to a file with comments, another host (its last line
	 * without a newline); adding a key appends one line and keeps every byte of the rest. */
	{
		char real[4300], before[8192], pub[2048];

		snprintf(real, sizeof real, "%s/real_known_hosts", dir);
		snprintf(pub, sizeof pub, "%s", slurp(key));
		snprintf(cmd, sizeof cmd, "%s.pub", key);
		snprintf(pub, sizeof pub, "%s", slurp(cmd));
		pub[strcspn(pub, " ")] = '\0';
		snprintf(before, sizeof before, "# my hosts, kept by hand\n\n@revoked * %s AAAAC3NzaC1lZDI1NTE5AAAAIKmO1Y2UO2H9xs7B5j0mP7nLXu0KzJ0wQk0Ue6lqXJtI\n"
		    "other.example %s AAAAC3NzaC1lZDI1NTE5AAAAIKmO1Y2UO2H9xs7B5j0mP7nLXu0KzJ0wQk0Ue6lqXJtI   # the NAS", pub, pub);
		FILE *f = fopen(real, "w");

		if (f != NULL) {
			fputs(before, f);
			fclose(f);
		}
		UNIT_OK(symlink(real, known) == 0, "known_hosts is a symlink to a file with comments");
		o.accept_new = 1;
		rc = ssh_connect(&c, &why, &o, err);
		UNIT_OK(rc == LM_OK, "with accept-new it connects %s", rc ? err : "");
		ssh_close(c);
		c = NULL;
		{
			struct stat st;
			const char *now = slurp(real);
			char line[512];

			snprintf(line, sizeof line, "\n[127.0.0.2]:%d ssh-ed25519 ", port);
			UNIT_OK(lstat(known, &st) == 0 && S_ISLNK(st.st_mode), "... the symlink is still a symlink");
			UNIT_OK(strncmp(now, before, strlen(before)) == 0, "... every byte before is kept, comments included");
			UNIT_OK(strncmp(now + strlen(before), line, strlen(line)) == 0 && strchr(now + strlen(before) + 1,
			    '\n') == now + strlen(now) - 1, "... and one line is appended after a newline");
		}
	}
	snprintf(cmd, sizeof cmd, "grep -q '^\\[127.0.0.2\\]:%d ssh-ed25519 ' %s", port, known);
	UNIT_OK(system(cmd) == 0, "... and records the key as [127.0.0.2]:%d in known_hosts", port);
	snprintf(cmd, sizeof cmd, "ssh-keygen -F '[127.0.0.2]:%d' -f %s >/dev/null", port, known);
	UNIT_OK(system(cmd) == 0, "... in a form OpenSSH's ssh-keygen -F finds");

	/* A FIFO as known_hosts is refused, not waited on. */
	{
		char fifo[4300];
		int64_t t1 = lm_now_ms();

		snprintf(fifo, sizeof fifo, "%s/kh-fifo", dir);
		mkfifo(fifo, 0600);
		o = opts(3000);
		o.known_hosts = fifo;
		rc = ssh_connect(&c, &why, &o, err);
		UNIT_OK(rc != LM_OK && lm_now_ms() - t1 < 2000, "a FIFO as known_hosts is refused at once");
		UNIT_HAS(err, "not a regular file", "... saying so");
	}

	/* A Mac host's VM names become host-key names "HOST/VM". */
	{
		static const char *const bad[] = {"mac1/x ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKmO1Y2UO2H9xs7B5j0mP7nLXu0KzJ0wQk0Ue6lqXJtI c\ngithub.com",
			"mac1/*", "mac1/-x", "mac1/.hidden", "mac1/a,github.com", "mac1/caf\xc3\xa9", "", NULL};
		char before[65536];

		snprintf(before, sizeof before, "%s", slurp(known));
		for (size_t i = 0; bad[i] != NULL; i++) {
			o = opts(5000);
			o.accept_new = 1;
			o.host_key_alias = bad[i];
			why = 0;
			rc = ssh_connect(&c, &why, &o, err);
			UNIT_OK(rc != LM_OK && why == SSH_HOSTKEY_UNKNOWN, "a hostile VM name is refused (%zu)", i);
			UNIT_HAS(err, "refusing the host-key name", "... saying so");
			UNIT_OK(strchr(err, '\n') == NULL, "... with no newline in the message");
			UNIT_OK(strcmp(before, slurp(known)) == 0, "... and known_hosts is unchanged");
		}
		UNIT_OK(ssh_vm_name_ok("tahoe-1.b_2") && !ssh_vm_name_ok("a b") && !ssh_vm_name_ok("-a") &&
		    !ssh_vm_name_ok("x/y") && !ssh_vm_name_ok("12345678901234567890123456789012345678901234567890123456789012345"),
		    "ssh_vm_name_ok: letters, digits . _ -, not first - or ., at most 64");
		o = opts(5000);
		o.accept_new = 1;
		o.host_key_alias = "mac1/tahoe-a";
		rc = ssh_connect(&c, &why, &o, err);
		UNIT_OK(rc == LM_OK, "a plain HOST/VM name is added %s", rc ? err : "");
		ssh_close(c);
		c = NULL;
		UNIT_OK(strstr(slurp(known), "\nmac1/tahoe-a ssh-ed25519 ") != NULL, "... as its own line");
	}

	/* Secrets: a FIFO, a password file or private key others may read. */
	{
		char fifo[4300], pw[4300], k2[4300];
		int64_t t1;

		snprintf(fifo, sizeof fifo, "%s/fifo", dir);
		snprintf(pw, sizeof pw, "%s/pw", dir);
		snprintf(k2, sizeof k2, "%s/key644", dir);
		mkfifo(fifo, 0600);
		o = opts(3000);
		o.password_file = fifo;
		t1 = lm_now_ms();
		rc = ssh_connect(&c, &why, &o, err);
		t1 = lm_now_ms() - t1;
		UNIT_OK(rc != LM_OK && why == SSH_AUTH && t1 < 1000, "a FIFO as password file is refused at once (%lld ms)",
		    (long long)t1);
		UNIT_HAS(err, "not a regular file (a FIFO)", "... saying so");
		run("printf 'secret\\n' >%s/pw && chmod 640 %s/pw", dir);
		o.password_file = pw;
		rc = ssh_connect(&c, &why, &o, err);
		UNIT_OK(rc != LM_OK && why == SSH_AUTH, "a password file the group may read is refused");
		snprintf(cmd, sizeof cmd, "chmod 600 %s", pw);
		UNIT_HAS(err, cmd, "... naming the chmod 600 that fixes it");
		run("chmod 600 %s/pw && ln -s %s/pw %s/pw-link", dir);
		snprintf(cmd, sizeof cmd, "%s/pw-link", dir);
		o.password_file = cmd;
		rc = ssh_connect(&c, &why, &o, err);
		UNIT_OK(rc == LM_OK, "a symlink to a mode 600 password file is fine %s", rc ? err : "");
		ssh_close(c);
		c = NULL;
		run("cp %s/id_ed25519 %s/key644 && chmod 644 %s/key644", dir);
		o = opts(3000);
		o.identity = k2;
		rc = ssh_connect(&c, &why, &o, err);
		UNIT_OK(rc != LM_OK && why == SSH_AUTH, "a private key others may read is refused, as OpenSSH does");
		snprintf(cmd, sizeof cmd, "chmod 600 %s", k2);
		UNIT_HAS(err, cmd, "... naming the chmod 600 that fixes it");
		setenv("LUME_METAL_PASSWORD", "from-env", 1);
		UNIT_OK(ssh_take_env_password() == 1 && getenv("LUME_METAL_PASSWORD") == NULL,
		    "$LUME_METAL_PASSWORD is taken out of the environment");
	}

	/* One deadline covers all this connection does below (large outputs, three 1 MiB uploads,
	 * under ASan): 5 s ran out on a loaded machine mid-upload. The deadlines' own tests are apart. */
	o = opts(30000);
	rc = ssh_connect(&c, &why, &o, err);
	UNIT_OK(rc == LM_OK, "a known host key connects without accept-new %s", rc ? err : "");
	if (c != NULL) {
		static const char *const nasty[] = {"printf", "%s|", "two words", "it's", "\"dq\"", "$(touch /tmp/lm-pwned)",
			"`id`", "line1\nline2", "caf\xc3\xa9 \xe2\x9c\x93", "*", "-n", "", "\\back", NULL};
		const char *out = remote(c, nasty, &code);

		UNIT_OK(code == 0 && strcmp(out, "two words|it's|\"dq\"|$(touch /tmp/lm-pwned)|`id`|line1\nline2|"
		    "caf\xc3\xa9 \xe2\x9c\x93|*|-n||\\back|") == 0, "quoted words arrive as they are: spaces, quotes, "
		    "$(), backticks, newlines, non-ASCII, globs, empty");
		UNIT_OK(access("/tmp/lm-pwned", F_OK) != 0, "... and nothing in them ran");
		{
			static const char *const tilde[] = {"sh", "-c", "printf %s \"$1\"", "sh", "~/Library/Application Support", NULL};
			char home[4300];

			snprintf(home, sizeof home, "%s/home/Library/Application Support", dir);
			out = remote(c, tilde, &code);
			UNIT_OK(strcmp(out, home) == 0, "a leading ~/ becomes the guest HOME, the rest stays quoted");
		}
		rc = ssh_exec(c, sh_c("exit 7"), NULL, 0, &r, err);
		UNIT_OK(rc == LM_OK && r.exit_code == 7 && r.signal[0] == '\0', "an exit code comes back");
		ssh_result_free(&r);
		rc = ssh_exec(c, sh_c("kill -KILL $$"), NULL, 0, &r, err);
		UNIT_OK(rc == LM_EFAIL && strcmp(r.signal, "KILL") == 0, "a process killed by a signal is a failure, not 0");
		UNIT_HAS(err, "killed by SIGKILL", "... saying so");
		ssh_result_free(&r);
		rc = ssh_exec(c, sh_c("cat; echo to-stderr >&2"), "fed in\n", 7, &r, err);
		UNIT_OK(rc == LM_OK && r.out.data && strcmp(r.out.data, "fed in\n") == 0 && r.err.data &&
		    strcmp(r.err.data, "to-stderr\n") == 0, "stdin goes in, stdout and stderr come back apart");
		ssh_result_free(&r);
		rc = ssh_exec(c, sh_c("head -c 60000 /dev/zero >&2; head -c 262144 /dev/zero; "
		    "head -c 5 /dev/zero >&2"),
		    NULL, 0, &r, err);
		UNIT_OK(rc == LM_OK && r.out.len == 262144 && r.err.len == 60005,
		    "up to the caps on each stream does not stall (%zu, %zu)", r.out.len, r.err.len);
		ssh_result_free(&r);
		t0 = lm_now_ms();
		rc = ssh_exec(c, sh_c("head -c 16777216 /dev/zero"), NULL, 0, &r, err);
		UNIT_OK(rc == LM_EFAIL && r.out.len <= SSH_EXEC_OUT_MAX, "a 16 MiB answer fails (%zu bytes kept, %lld ms)",
		    r.out.len, (long long)(lm_now_ms() - t0));
		UNIT_HAS(err, "the guest's answer exceeds 262144 bytes (on stdout)", "... saying so");
		ssh_result_free(&r);
		rc = ssh_exec(c, sh_c("head -c 100000 /dev/zero >&2"), NULL, 0, &r, err);
		UNIT_OK(rc == LM_EFAIL && r.err.len <= SSH_EXEC_ERR_MAX, "so does 100 kB of stderr");
		UNIT_HAS(err, "exceeds 65536 bytes (on stderr)", "... saying so");
		ssh_result_free(&r);
		rc = ssh_exec(c, sh_c("exit 3"), NULL, 0, &r, err);
		UNIT_OK(rc == LM_OK && r.exit_code == 3, "... and the session still runs commands %s", rc ? err : "");
		ssh_result_free(&r);
		{
			ssh_chan *h = NULL;
			const char *text = "";

			slow_stderr = 1;
			t0 = lm_now_ms();
			rc = ssh_chan_open(&h, c, sh_c("sleep 0.1; echo lm-mark; read x"), err);
			if (rc == LM_OK)
				rc = ssh_chan_read_until(h, "lm-mark", &text, err);
			UNIT_OK(rc == LM_OK && strcmp(text, "lm-mark\n") == 0 && lm_now_ms() - t0 < 3000,
			    "a mark line that a stderr read took off the socket is read at once (%lld ms) %s",
			    (long long)(lm_now_ms() - t0), rc ? err : "");
			ssh_chan_free(h);
			slow_stderr = 0;
		}

		run("head -c 1048576 /dev/urandom > %s/blob", dir);
		{
			char local[4300], rdir[4300];
			uint64_t sent = 0;

			snprintf(local, sizeof local, "%s/blob", dir);
			snprintf(rdir, sizeof rdir, "%s/home/staging dir", dir);
			run("mkdir -p '%s/home/staging dir'", dir);
			rc = ssh_upload(c, local, rdir, "pay load.tar.gz", &sent, err);
			UNIT_OK(rc == LM_OK && sent == 1048576, "SFTP upload sends 1 MiB %s", rc ? err : "");
			UNIT_OK(run("cmp %s/blob '%s/home/staging dir/pay load.tar.gz'", dir) == 0, "... which arrives intact");
			rc = ssh_upload(c, local, rdir, "pay load.tar.gz", &sent, err);
			UNIT_OK(rc == LM_OK, "uploading it again replaces the stale copy %s", rc ? err : "");
			UNIT_OK(run("test -z \"$(ls -A '%s/home/staging dir' | grep part)\"", dir) == 0,
			    "... with no temporary file left");
			rc = ssh_upload_scp(c, local, rdir, "by scp.bin", &sent, err);
			UNIT_OK(rc == LM_OK && sent == 1048576, "SCP upload sends 1 MiB %s", rc ? err : "");
			UNIT_OK(run("cmp %s/blob '%s/home/staging dir/by scp.bin'", dir) == 0, "... which arrives intact");
			snprintf(rdir, sizeof rdir, "%s/home/no such dir/nor this", dir);
			rc = ssh_upload(c, local, rdir, "x", &sent, err);
			UNIT_OK(rc == LM_OK, "an upload into a missing directory makes it and its parent %s", rc ? err : "");
			UNIT_OK(run("cmp %s/blob '%s/home/no such dir/nor this/x'", dir) == 0, "... and arrives intact");
			run("printf file >'%s/home/a file'", dir);
			snprintf(rdir, sizeof rdir, "%s/home/a file/sub", dir);
			err[0] = '\0';
			rc = ssh_upload(c, local, rdir, "x", &sent, err);
			UNIT_OK(rc == LM_EFAIL, "an upload below a file fails");
			UNIT_HAS(err, "cannot create the directory", "... saying so");
		}
		ssh_close(c);
		c = NULL;
	}

	/* A wrong key. */
	run("ssh-keygen -q -t ed25519 -N '' -f %s/other", dir);
	o = opts(5000);
	snprintf(cmd, sizeof cmd, "%s/other", dir);
	o.identity = cmd;
	rc = ssh_connect(&c, &why, &o, err);
	UNIT_OK(rc != LM_OK && why == SSH_AUTH, "a key the guest does not accept is an auth failure");
	UNIT_HAS(err, "authentication failed", "... saying so");

	/* A rebuilt guest: same address, new host key. */
	stop();
	if (start("--rekey") != 0)
		printf("not ok - sshd did not restart\n");
	o = opts(5000);
	o.accept_new = 1;
	rc = ssh_connect(&c, &why, &o, err);
	host_fingerprint(fp, sizeof fp);
	UNIT_OK(rc != LM_OK && why == SSH_HOSTKEY_MISMATCH, "a changed host key is refused, even with accept-new");
	UNIT_HAS(err, want, "... showing the recorded fingerprint");
	UNIT_HAS(err, fp, "... and the new one");
	stop();

	/* The guest comes back with only an ECDSA key: known by another type, so changed. */
	if (start("--keytype ecdsa") != 0)
		printf("not ok - sshd did not restart\n");
	{
		char before[65536];

		snprintf(before, sizeof before, "%s", slurp(known));
		o = opts(5000);
		o.accept_new = 1;
		rc = ssh_connect(&c, &why, &o, err);
		UNIT_OK(rc != LM_OK && why == SSH_HOSTKEY_MISMATCH, "a known guest offering only an ECDSA key is a "
		    "mismatch, not unknown, even with accept-new (why %d)", why);
		UNIT_HAS(err, "known only by other key types", "... saying so");
		UNIT_OK(strcmp(before, slurp(known)) == 0, "... and known_hosts is unchanged");
		if (rc == LM_OK)
			ssh_close(c);
		c = NULL;
		run("ssh-keygen -q -H -f %s >/dev/null 2>&1 && rm -f %s.old", known);
		snprintf(before, sizeof before, "%s", slurp(known));
		rc = ssh_connect(&c, &why, &o, err);
		UNIT_OK(rc != LM_OK && why == SSH_HOSTKEY_MISMATCH && strstr(before, "\n|1|") && !strstr(before, "[127.0.0.2]"),
		    "... and so it is when known_hosts holds hashed names (ssh-keygen -H)");
		UNIT_OK(strcmp(before, slurp(known)) == 0, "... still unchanged");
		if (rc == LM_OK)
			ssh_close(c);
		c = NULL;
	}
	/* No file descriptor left: the controller's fault, not the guest's. */
	{
		struct rlimit was, rl;
		int fds[64], nfd = 0;

		ssh_conn *c2 = NULL;
		char kh2[4300], local[4300];
		uint64_t sent;

		snprintf(kh2, sizeof kh2, "%s/kh-nofds", dir);
		snprintf(local, sizeof local, "%s/blob", dir);
		o = opts(5000);
		o.known_hosts = kh2;
		o.accept_new = 1;
		rc = ssh_connect(&c2, &why, &o, err);
		UNIT_OK(rc == LM_OK, "(a session for the upload below) %s", rc ? err : "");
		getrlimit(RLIMIT_NOFILE, &was);
		rl = was;
		rl.rlim_cur = 64;
		setrlimit(RLIMIT_NOFILE, &rl);
		while (nfd < 64 && (fds[nfd] = open("/dev/null", O_RDONLY)) >= 0)
			nfd++;
		o = opts(3000);
		ssh_nofds_take();
		rc = ssh_connect(&c, &why, &o, err);
		UNIT_OK(rc != LM_OK && why == SSH_NOFDS && ssh_nofds_take(), "out of file descriptors is not unreachable");
		UNIT_HAS(err, "out of file descriptors", "... saying so");
		ssh_nofds_take();
		rc = c2 ? ssh_upload(c2, local, "/tmp", "lm-unit-nofds", &sent, err) : LM_OK;
		UNIT_OK(rc != LM_OK && ssh_nofds_take(), "an upload that cannot open its file for want of descriptors says so");
		while (nfd > 0)
			close(fds[--nfd]);
		setrlimit(RLIMIT_NOFILE, &was);
		ssh_close(c2);
	}
	stop();

	/* A listener that accepts TCP and never speaks. */
	{
		struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)(port + 1))};
		int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;

		inet_pton(AF_INET, "127.0.0.3", &sa.sin_addr);
		setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		if (bind(s, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(s, 4) != 0)
			printf("not ok - cannot listen on 127.0.0.3\n");
		o = opts(1500);
		o.host = "127.0.0.3";
		o.port = port + 1;
		t0 = lm_now_ms();
		rc = ssh_connect(&c, &why, &o, err);
		t0 = lm_now_ms() - t0;
		UNIT_OK(rc != LM_OK && why == SSH_TIMEOUT, "a guest that never speaks is a timeout");
		UNIT_OK(t0 >= 1400 && t0 < 4000, "... within the deadline (1.5 s; took %lld ms)", (long long)t0);
		close(s);
	}
	o = opts(3000);
	o.port = port + 2;
	rc = ssh_connect(&c, &why, &o, err);
	UNIT_OK(rc != LM_OK && why == SSH_UNREACHABLE, "a closed port is unreachable");
	UNIT_HAS(err, "cannot connect", "... saying so");


	run("rm -rf %s", dir);
	sh_c(NULL);
	UNIT_DONE();
}
