/*
 * SIMULATION: the stand-in for a workload's code (llama-server) in the lume-metal tests on
 * Linux. THIS IS NOT LLAMA.CPP. It is linked against the SIMULATED libMetal, so a shim preloaded
 * into it (the LaunchAgent's LD_PRELOAD, or the simulated launchctl playing dyld) really
 * activates or not, as in the real process: it creates the default Metal device, says on stderr
 * what it got, then serves until SIGTERM (exit 0) or SIGKILL. The simulated guests find it as
 * /opt/homebrew/bin/llama-server (tests/guest-sim/bin/launchctl, LUME_METAL_SIM_ROOT), and the
 * simulated launchctl runs it, under the program's own name, for a fake Mach-O program.
 *
 * It answers llama-server's GET /health as llama.cpp's tools/server does: 503
 * {"error":{"code":503,"message":"Loading model","type":"unavailable_error"}} while it loads its
 * model, 200 {"status":"ok"} once it serves (other paths: 404), on its --host and --port
 * (llama-server's defaults: 127.0.0.1, 8080). A simulated guest's loopback is its own, as each
 * Mac's is: a server on 127.0.0.1, localhost or 0.0.0.0 listens on the Unix socket
 * ${LUME_METAL_SIM_DIR:-$HOME/.guest-sim}/loopback/127.0.0.1:PORT, where the simulated curl
 * (tests/guest-sim/bin/curl) sends that guest's requests for http://127.0.0.1:PORT/. A port that
 * another server of the guest listens on fails as llama-server does ("couldn't bind HTTP server
 * socket", exit 1). Knobs (a test's workload sets them in its LaunchAgent's EnvironmentVariables):
 *   LM_SIM_WORKLOAD_READY_AFTER=S  the model loads S seconds after the device is up (a decimal
 *                                  from 0 to 3600; default 0), or "never": /health stays 503
 *   LM_SIM_WORKLOAD_EXIT=N         it fails as a server whose model does not load: 0.3 s after
 *                                  the device is up (or LM_SIM_WORKLOAD_EXIT_AFTER seconds, a
 *                                  decimal from 0 to 60) it says so and exits N
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "metal-sim.h"

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A knob's seconds: a decimal from 0 to max, else dflt. */
static double secs_of(const char *name, double dflt, double max)
{
	const char *v = getenv(name);
	char *end;
	double s;

	if (v == NULL || *v == '\0')
		return dflt;
	s = strtod(v, &end);
	return *end == '\0' && s >= 0 && s <= max ? s : dflt;
}

/* The guest's loopback folder (made when missing) as an open directory, or -1. */
static int loopback_dir(void)
{
	const char *sim = getenv("LUME_METAL_SIM_DIR"), *home = getenv("HOME");
	char path[4096];
	int n;

	if (sim != NULL && *sim != '\0')
		n = snprintf(path, sizeof path, "%s", sim);
	else
		n = snprintf(path, sizeof path, "%s/.guest-sim", home ? home : "");
	if (n < 0 || (size_t)n + sizeof "/loopback" > sizeof path)
		return -1;
	(void)mkdir(path, 0700);
	strcat(path, "/loopback");
	(void)mkdir(path, 0700);
	return open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

/*
 * Listens on the guest's loopback at port: the socket "127.0.0.1:PORT" in its loopback folder
 * (bound by a name relative to the folder, so a long HOME fits sun_path). One that answers a
 * connect is another server's: -2. A file nobody listens on is what an earlier server left.
 */
static int listen_loopback(int dir, int port, char *name, size_t namesz)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int here, fd, probe, rc = -1;

	snprintf(name, namesz, "127.0.0.1:%d", port);
	snprintf(a.sun_path, sizeof a.sun_path, "%s", name);
	if ((here = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -1;
	if (fchdir(dir) != 0) {
		close(here);
		return -1;
	}
	if ((probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0) {
		int taken = connect(probe, (struct sockaddr *)&a, sizeof a) == 0;

		close(probe);
		if (taken) {
			rc = -2;
			goto out;
		}
	}
	(void)unlink(name);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0) {
		if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && listen(fd, 16) == 0)
			rc = fd;
		else
			close(fd);
	}
out:
	if (fchdir(here) != 0 && rc >= 0) {
		close(rc);
		rc = -1;
	}
	close(here);
	return rc;
}

/* One connection: reads the request's head (1 s at most), answers, closes. */
static void serve_one(int lfd, int ready)
{
	static const char ok[] = "{\"status\":\"ok\"}";
	static const char loading[] = "{\"error\":{\"code\":503,\"message\":\"Loading model\",\"type\":\"unavailable_error\"}}";
	static const char missing[] = "{\"error\":{\"code\":404,\"message\":\"File Not Found\",\"type\":\"not_found_error\"}}";
	struct timeval tv = {.tv_sec = 1};
	char req[4096], head[256];
	size_t got = 0;
	const char *body, *status;
	int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC), n;

	if (c < 0)
		return;
	(void)setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	while (got < sizeof req - 1) {
		ssize_t r = read(c, req + got, sizeof req - 1 - got);

		if (r <= 0)
			break;
		got += (size_t)r;
		req[got] = '\0';
		if (strstr(req, "\r\n\r\n") != NULL)
			break;
	}
	req[got] = '\0';
	if (strncmp(req, "GET /health ", 12) == 0 || strncmp(req, "GET /health?", 12) == 0) {
		body = ready ? ok : loading;
		status = ready ? "200 OK" : "503 Service Unavailable";
	} else {
		body = missing;
		status = "404 Not Found";
	}
	n = snprintf(head, sizeof head, "HTTP/1.1 %s\r\nContent-Type: application/json; charset=utf-8\r\n"
	    "Content-Length: %zu\r\nConnection: close\r\n\r\n", status, strlen(body));
	if (write(c, head, (size_t)n) == n)
		(void)!write(c, body, strlen(body));
	close(c);
}

int main(int argc, char **argv)
{
	struct sigaction sa = {0};
	sigset_t term, old;
	const char *host = "127.0.0.1", *fail = getenv("LM_SIM_WORKLOAD_EXIT");
	const char *never = getenv("LM_SIM_WORKLOAD_READY_AFTER");
	char sock[64] = "";
	double t0, ready_at, exit_at = -1;
	int port = 8080, lfd = -1, dir = -1, loaded = 0;
	id dev;

	for (int i = 1; i + 1 < argc; i++) {
		if (strcmp(argv[i], "--port") == 0)
			port = atoi(argv[++i]);
		else if (strcmp(argv[i], "--host") == 0)
			host = argv[++i];
	}
	sa.sa_handler = on_term;
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	sigprocmask(SIG_BLOCK, &term, &old);
	sigaction(SIGTERM, &sa, NULL);
	dev = MTLCreateSystemDefaultDevice();
	fprintf(stderr, "%s: SIMULATED workload stand-in: %s\n", argv[0],
	    dev != nil ? "the Metal device is up; serving until SIGTERM" : "no Metal device");
	t0 = now();
	ready_at = never != NULL && strcmp(never, "never") == 0 ? -1 :
	    t0 + secs_of("LM_SIM_WORKLOAD_READY_AFTER", 0, 3600);
	if (fail != NULL)
		exit_at = t0 + secs_of("LM_SIM_WORKLOAD_EXIT_AFTER", 0.3, 60);
	if (strcmp(host, "127.0.0.1") == 0 || strcmp(host, "localhost") == 0 || strcmp(host, "0.0.0.0") == 0) {
		if (port < 1 || port > 65535 || (dir = loopback_dir()) < 0 ||
		    (lfd = listen_loopback(dir, port, sock, sizeof sock)) < 0) {
			fprintf(stderr, "main: couldn't bind HTTP server socket, hostname: %s, port: %d\n", host, port);
			return 1;
		}
		fprintf(stderr, "main: HTTP server is listening, hostname: %s, port: %d (SIMULATED: the guest's "
		    "loopback)\nmain: loading model\n", host, port);
	} else
		fprintf(stderr, "%s: SIMULATED: --host %s is not simulated; no HTTP server\n", argv[0], host);
	fflush(stderr);
	while (!stop) {
		double t = now(), wait = -1;
		struct pollfd p = {.fd = lfd, .events = POLLIN};
		struct timespec ts;

		if (!loaded && ready_at >= 0 && t >= ready_at) {
			loaded = 1;
			fprintf(stderr, "main: model loaded\nmain: server is listening on http://%s:%d - starting the "
			    "main loop\n", host, port);
			fflush(stderr);
		}
		if (exit_at >= 0 && t >= exit_at) {
			fprintf(stderr, "%s: SIMULATED: failed to load the model\n", argv[0]);
			if (lfd >= 0)
				(void)unlinkat(dir, sock, 0);
			return atoi(fail);
		}
		if (exit_at >= 0)
			wait = exit_at - t;
		if (ready_at >= 0 && t < ready_at && (wait < 0 || ready_at - t < wait))
			wait = ready_at - t;
		ts.tv_sec = (time_t)wait;
		ts.tv_nsec = (long)((wait - (double)ts.tv_sec) * 1e9);
		if (ppoll(lfd >= 0 ? &p : NULL, lfd >= 0, wait >= 0 ? &ts : NULL, &old) > 0 && (p.revents & POLLIN))
			serve_one(lfd, ready_at >= 0 && now() >= ready_at);
	}
	if (lfd >= 0)
		(void)unlinkat(dir, sock, 0);
	return 0;
}
