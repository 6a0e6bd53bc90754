/* What guests answer, through the real deploy code with the SSH layer stubbed (stub_ssh.h):
 *
 *   input = ops "\n" answers       answers as in stub_ssh.h, taken in turn by every exec and
 *                                  upload of every op
 *   ops   = up to 4 letters, run in order on one guest and one ledger:
 *           d deploy   D deploy --force   n deploy --dry-run   p probe   s status
 *           r rollback previous   R rollback none (then the probe)   b bench   B bench --evidence
 *           any other byte: the letter at its value modulo 9
 *
 * FUZZ_DEPLOY_OPS=LETTERS, when set, skips the other ops: fuzzing goes on past a crash of one op
 * that is not fixed yet (FUZZ_DEPLOY_OPS=dDnpsrR make fuzz FUZZ_NAMES=deploy).
 *
 * Every input starts from an empty ledger; deploy writes what it learns there, so "dd" sees the
 * first deploy's verdict. The guest is admin@127.0.0.1:2222 and the payload's SHA-256 is
 * FUZZ_SHA (a facts answer "current=/Users/x/releases/FUZZ_SHA" makes a deploy unchanged). */
#include "core/bench.h"
#include "ops/bench_vm.h"
#include "ops/deploy.h"
#include "ops/probe.h"
#include "ops/rollback.h"
#include "ops/status.h"
#include "fuzz.h"
#include "stub_ssh.h"

#define FUZZ_SHA "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

static void
run(char op, const char *state)
{
	static const char ops[] = "dDnpsrRbB";
	const char *hit = memchr(ops, op, sizeof ops - 1);
	char err[LM_ERRLEN], ev[4300];
	payload_info info = {.sha256 = FUZZ_SHA, .target = "macos", .profile = "m1-ultra-tahoe-26.5",
	    .workload = "llama-server", .label = "com.trycua.lume-metal.llama-server", .version = "0.1.0"};
	bench_vm_opts b = {.model = "~/models/tinyllama.gguf", .llama_bench = "llama-bench", .p = 512, .n = 128,
	    .r = 5, .min_samples = BENCH_MIN_SAMPLES};
	session_opts o = {.state = state, .lume = "lume", .ssh = {.user = "admin"}, .timeout_s = 60,
	    .payload = "/nonexistent/payload.tar.gz", .info = &info, .to = "previous", .bench = &b};
	guest_target *t;
	cJSON *r = NULL;

	op = hit ? *hit : ops[(unsigned char)op % (sizeof ops - 1)];
	if (getenv("FUZZ_DEPLOY_OPS") != NULL && strchr(getenv("FUZZ_DEPLOY_OPS"), op) == NULL)
		return;
	snprintf(ev, sizeof ev, "%s/evidence", state);
	o.force = op == 'D';
	o.dry_run = op == 'n';
	o.to = op == 'R' ? "none" : "previous";
	b.evidence = op == 'B' ? ev : NULL;
	if (guest_target_host(&t, "admin@127.0.0.1:2222", "admin", err) != LM_OK)
		abort();
	switch (op) {
	case 'p': probe_one(&r, t, &o, err); break;
	case 's': status_one(&r, t, &o, err); break;
	case 'r': case 'R': rollback_one(&r, t, &o, err); break;
	case 'b': case 'B': bench_vm_run(&r, t, &o, err); break;
	default: deploy_one(&r, t, &o, err); break;
	}
	if (r != NULL) {
		int code = session_exit_code(&r, 1);
		char *j = fuzz_verbose() ? cJSON_PrintUnformatted(r) : NULL;

		if (j != NULL)
			fprintf(stderr, "%c: exit %d: %s\n", op, code, j);
		free(j);
	}
	cJSON_Delete(r);
	guest_target_free(t);
}

FUZZ_TARGET(deploy)
{
	const uint8_t *nl = size ? memchr(data, '\n', size < 5 ? size : 5) : NULL;
	char state[4200];

	if (nl == NULL)
		return 0;
	snprintf(state, sizeof state, "%s", fuzz_path("state"));
	fuzz_rmtree(state);
	if (mkdir(state, 0700) != 0)
		abort();
	stub_ssh_feed(nl + 1, size - (size_t)(nl + 1 - data));
	for (const uint8_t *op = data; op < nl; op++)
		run((char)*op, state);
	stub_ssh_feed(NULL, 0);
	fuzz_rmtree(state);
	return 0;
}
