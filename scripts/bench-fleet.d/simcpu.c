/* simcpu: bench-fleet's CPU account of the simulated guest commands (tests/guest-sim/bin).
 *
 *   $LUME_METAL_SIM_CPU/bin/NAME ARGS...       (a link to simcpu, first on the guests' PATH)
 *   simcpu -n NAME [-s] PROGRAM ARGS...
 *
 * Runs the first NAME on PATH outside $LUME_METAL_SIM_CPU/bin (or PROGRAM, found as execvp finds
 * it), waits for it, and appends one line, "NAME USER_US SYS_US", to $LUME_METAL_SIM_CPU/acct/tools:
 * the CPU of that process and of every process it waited for (wait4's rusage, in microseconds,
 * summed by the kernel: no clock tick is lost per process, as `times` would lose). One write of a
 * short line with O_APPEND, so the guests' many wrappers share the file. It exits as the program did (128+N
 * for a signal). Its own stdin, stdout and stderr are closed once the program runs, so it holds
 * no pipe of its caller open (the simulated launchctl waits for its supervisor's stdout to close).
 * -s: the program starts a new session (setsid), so it leads its own process group, as the
 * simulated launchd's supervisor does without simcpu (tests/guest-sim/stop-jobs.sh kills that
 * group). Not a tool of the guests: a benchmark's probe, like netdelay. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

/* The first NAME on PATH outside skip, into out; 0 when there is none. */
static int find(char *out, size_t outsz, const char *name, const char *skip)
{
	const char *p = getenv("PATH");

	while (p != NULL && *p != '\0') {
		const char *e = strchr(p, ':');
		size_t n = e ? (size_t)(e - p) : strlen(p);

		if (n > 0 && !(strlen(skip) == n && strncmp(p, skip, n) == 0) &&
		    snprintf(out, outsz, "%.*s/%s", (int)n, p, name) < (int)outsz && access(out, X_OK) == 0)
			return 1;
		p = e ? e + 1 : NULL;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *dir = getenv("LUME_METAL_SIM_CPU"), *name, *base = strrchr(argv[0], '/');
	char path[PATH_MAX], skip[PATH_MAX], line[256];
	struct rusage ru;
	int status, fd, sess = 0, explicit = 0, n;
	pid_t pid;

	if (dir == NULL || *dir == '\0') {
		fprintf(stderr, "simcpu: LUME_METAL_SIM_CPU is not set\n");
		return 127;
	}
	base = base ? base + 1 : argv[0];
	if (strcmp(base, "simcpu") == 0) {
		if (argc < 4 || strcmp(argv[1], "-n") != 0) {
			fprintf(stderr, "usage: simcpu -n NAME [-s] PROGRAM ARGS...\n");
			return 2;
		}
		name = argv[2];
		argv += 3;
		if (strcmp(argv[0], "-s") == 0) {
			sess = 1;
			argv++;
		}
		if (argv[0] == NULL)
			return 2;
		explicit = 1;
		snprintf(path, sizeof path, "%s", argv[0]);
	} else {
		name = base;
		snprintf(skip, sizeof skip, "%s/bin", dir);
		if (!find(path, sizeof path, name, skip)) {
			fprintf(stderr, "simcpu: %s: not found on PATH\n", name);
			return 127;
		}
		argv[0] = (char *)name;
	}
	if ((pid = fork()) < 0)
		return 127;
	if (pid == 0) {
		if (sess)
			(void)setsid();
		if (explicit)
			execvp(path, argv);
		else
			execv(path, argv);
		fprintf(stderr, "simcpu: %s: %s\n", path, strerror(errno));
		_exit(127);
	}
	if ((fd = open("/dev/null", O_RDWR)) >= 0) {
		dup2(fd, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		if (fd > 2)
			close(fd);
	}
	while (wait4(pid, &status, 0, &ru) < 0)
		if (errno != EINTR)
			return 127;
	snprintf(skip, sizeof skip, "%s/acct/tools", dir);
	n = snprintf(line, sizeof line, "%s %ld %ld\n", name,
	    (long)ru.ru_utime.tv_sec * 1000000 + (long)ru.ru_utime.tv_usec,
	    (long)ru.ru_stime.tv_sec * 1000000 + (long)ru.ru_stime.tv_usec);
	if (n > 0 && (size_t)n < sizeof line && (fd = open(skip, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644)) >= 0) {
		(void)!write(fd, line, (size_t)n);
		close(fd);
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
