/*
 * SIMULATION: the stand-in for a workload's code (llama-server) in the lume-metal tests on
 * Linux. THIS IS NOT LLAMA.CPP. It is linked against the SIMULATED libMetal, so a shim preloaded
 * into it (the LaunchAgent's LD_PRELOAD, or the simulated launchctl playing dyld) really
 * activates or not, as in the real process: it creates the default Metal device, says on stderr
 * what it got, then waits until SIGTERM (exit 0) or SIGKILL. The simulated guests find it as
 * /opt/homebrew/bin/llama-server (tests/guest-sim/bin/launchctl, LUME_METAL_SIM_ROOT), and the
 * simulated launchctl runs it, under the program's own name, for a fake Mach-O program.
 * LM_SIM_WORKLOAD_EXIT=N (set by a test's workload, in its LaunchAgent's EnvironmentVariables)
 * makes it fail as a server whose model does not load: 0.3 s after the device is up (or
 * LM_SIM_WORKLOAD_EXIT_AFTER seconds, a decimal from 0 to 60) it says so and exits N.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "metal-sim.h"

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	struct sigaction sa = {0};
	sigset_t term, old;
	id dev;

	(void)argc;
	sa.sa_handler = on_term;
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	sigprocmask(SIG_BLOCK, &term, &old);
	sigaction(SIGTERM, &sa, NULL);
	dev = MTLCreateSystemDefaultDevice();
	fprintf(stderr, "%s: SIMULATED workload stand-in: %s\n", argv[0],
	    dev != nil ? "the Metal device is up; serving until SIGTERM" : "no Metal device");
	fflush(stderr);
	if (getenv("LM_SIM_WORKLOAD_EXIT") != NULL) {
		const char *after = getenv("LM_SIM_WORKLOAD_EXIT_AFTER");
		double sec = after ? strtod(after, NULL) : 0.3;
		struct timespec ts;

		sec = sec >= 0 && sec <= 60 ? sec : 0.3;
		ts.tv_sec = (time_t)sec;
		ts.tv_nsec = (long)((sec - (double)ts.tv_sec) * 1e9);
		nanosleep(&ts, NULL);
		fprintf(stderr, "%s: SIMULATED: failed to load the model\n", argv[0]);
		return atoi(getenv("LM_SIM_WORKLOAD_EXIT"));
	}
	while (!stop)
		sigsuspend(&old);
	return 0;
}
