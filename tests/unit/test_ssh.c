/* The SSH transport against a real OpenSSH sshd on 127.0.0.2 (tests/sshd.sh), and a listener
 * that never speaks. Host keys, authentication, exec (exit codes, signals, quoting, both
 * streams), SFTP upload, and the deadline. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ssh.h"
#include "unit.h"
#include "util.h"

static char dir[] = "/tmp/lm-unit-ssh.XXXXXX";
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

/* Runs argv remotely through the quoting function; returns stdout (static). */
static const char *
remote(ssh_conn *c, const char *const *argv, int *code)
{
	static char out[4096];
	ssh_result r;
	lm_buf b = {0};
	char err[LM_ERRLEN];

	ssh_quote_argv(&b, argv);
	*code = ssh_exec(c, b.data, NULL, 0, &r, err) == LM_OK ? r.exit_code : -1;
	snprintf(out, sizeof out, "%s", r.out.data ? r.out.data : "");
	ssh_result_free(&r);
	lm_buf_free(&b);
	return out;
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

	o.accept_new = 1;
	rc = ssh_connect(&c, &why, &o, err);
	UNIT_OK(rc == LM_OK, "with accept-new it connects %s", rc ? err : "");
	ssh_close(c);
	c = NULL;
	snprintf(cmd, sizeof cmd, "grep -q '^\\[127.0.0.2\\]:%d ssh-ed25519 ' %s", port, known);
	UNIT_OK(system(cmd) == 0, "... and records the key as [127.0.0.2]:%d in known_hosts", port);
	snprintf(cmd, sizeof cmd, "ssh-keygen -F '[127.0.0.2]:%d' -f %s >/dev/null", port, known);
	UNIT_OK(system(cmd) == 0, "... in a form OpenSSH's ssh-keygen -F finds");

	o = opts(5000);
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
		rc = ssh_exec(c, "exit 7", NULL, 0, &r, err);
		UNIT_OK(rc == LM_OK && r.exit_code == 7 && r.signal[0] == '\0', "an exit code comes back");
		ssh_result_free(&r);
		rc = ssh_exec(c, "kill -KILL $$", NULL, 0, &r, err);
		UNIT_OK(rc == LM_EFAIL && strcmp(r.signal, "KILL") == 0, "a process killed by a signal is a failure, not 0");
		UNIT_HAS(err, "killed by SIGKILL", "... saying so");
		ssh_result_free(&r);
		rc = ssh_exec(c, "cat; echo to-stderr >&2", "fed in\n", 7, &r, err);
		UNIT_OK(rc == LM_OK && r.out.data && strcmp(r.out.data, "fed in\n") == 0 && r.err.data &&
		    strcmp(r.err.data, "to-stderr\n") == 0, "stdin goes in, stdout and stderr come back apart");
		ssh_result_free(&r);
		rc = ssh_exec(c, "head -c 3000000 /dev/zero >&2; head -c 3000000 /dev/zero; head -c 5 /dev/zero >&2",
		    NULL, 0, &r, err);
		UNIT_OK(rc == LM_OK && r.out.len == 3000000 && r.err.len == 3000005,
		    "3 MB on each stream does not stall (%zu, %zu)", r.out.len, r.err.len);
		ssh_result_free(&r);

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
	UNIT_DONE();
}
