/*
 * SIMULATION: the stand-in for a workload's code (llama-server) in the lume-metal tests on
 * Linux. THIS IS NOT LLAMA.CPP. It is linked against the SIMULATED libMetal, so a shim preloaded
 * into it (the LaunchAgent's LD_PRELOAD, or the simulated launchctl playing dyld) really
 * activates or not, as in the real process: it creates the default Metal device, says on stderr
 * what it got, then waits until SIGTERM (exit 0) or SIGKILL. The simulated guests find it as
 * /opt/homebrew/bin/llama-server (tests/guest-sim/bin/launchctl, LUME_METAL_SIM_ROOT), and the
 * simulated launchctl runs it, under the program's own name, for a fake Mach-O program.
 */
#include <signal.h>
#include <stdio.h>

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
	while (!stop)
		sigsuspend(&old);
	return 0;
}
