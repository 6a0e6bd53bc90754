/* golden: the names it accepts, the golden record's key, the stamp; and the lume wrappers'
 * errors and argv text against a lume stand-in written here. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ops/golden.h"
#include "ops/validate.h"
#include "core/ledger.h"
#include "net/lume.h"
#include "net/registry.h"
#include "unit.h"
#include "core/util.h"

/* The backquoted words of the docs/interfaces.md line that starts with marker, each followed by a
 * space, into out (len bytes); "" when there is no such line. */
static void
doc_list(char *out, size_t len, const char *marker)
{
	char *doc = NULL, err[LM_ERRLEN];
	const char *p, *end, *q, *e;
	size_t n, k = 0;

	out[0] = '\0';
	if (lm_read_file(&doc, &n, LM_DATADIR "/docs/interfaces.md", 1u << 22, err) != LM_OK)
		return;
	if ((p = strstr(doc, marker)) != NULL && (p == doc || p[-1] == '\n')) {
		end = strchr(p, '\n') ? strchr(p, '\n') : p + strlen(p);
		for (q = strchr(p, '`'); q && q < end && (e = strchr(q + 1, '`')) && e < end; q = strchr(e + 1, '`')) {
			int w = snprintf(out + k, len - k, "%.*s ", (int)(e - q - 1), q + 1);

			if (w < 0 || (size_t)w >= len - k) {
				out[0] = '\0';
				break;
			}
			k += (size_t)w;
		}
	}
	free(doc);
}

int
main(void)
{
	char err[LM_ERRLEN] = "", dir[] = "/tmp/test_golden.XXXXXX", lume[64], log[80];
	const char *d = "sha256:4174eb379431d94ea9907b9087562dec0d3e06f39af45bb61fd0281a53cab176";
	cJSON *k, *old, *want;
	char *a, *b;
	lm_buf t = {0};
	FILE *f;

	UNIT_OK(golden_image_tag_ok("macos-tahoe-shim:26.5"), "name:tag is accepted");
	UNIT_OK(golden_image_tag_ok("team/shim:v1_2-rc.3"), "a path in the name, _ . - in the tag");
	UNIT_OK(!golden_image_tag_ok("shim"), "no tag is refused");
	UNIT_OK(!golden_image_tag_ok("shim:"), "an empty tag is refused");
	UNIT_OK(!golden_image_tag_ok(":1"), "an empty name is refused");
	UNIT_OK(!golden_image_tag_ok("Shim:1"), "an upper-case name is refused (OCI names are lower case)");
	UNIT_OK(!golden_image_tag_ok("shim:1:2"), "two colons are refused");
	UNIT_OK(!golden_image_tag_ok("-shim:1") && !golden_image_tag_ok("shim:-1"), "a leading - is refused");
	UNIT_OK(!golden_image_tag_ok("shim:1 --force") && !golden_image_tag_ok("sh im:1"), "a space is refused");
	UNIT_OK(registry_host_ok("ghcr.io", NULL) && registry_host_ok("127.0.0.5:5000", NULL) &&
	    registry_host_ok("[::1]:5000", NULL), "ghcr.io, HOST:PORT and [v6]:PORT are registries");
	UNIT_OK(!registry_host_ok("", NULL) && !registry_host_ok("ghcr.io/x", NULL) && !registry_host_ok("-r", NULL) &&
	    !registry_host_ok("h:p", NULL) && !registry_host_ok("h:123456", NULL), "a path, a flag or a bad port is not");
	UNIT_OK(!golden_image_tag_ok("a..b:1") && !golden_image_tag_ok("a//b:1") && !golden_image_tag_ok("a/:1"),
	    "an IMAGE that is no OCI repository is refused, as the registry would");

	/* The steps' names are the tables', in the order docs/interfaces.md lists them: golden's (its
	 * progress lines and its result's "steps") and validate's arms (their progress lines). */
	{
		char names[400], got[400] = "";

		doc_list(names, sizeof names, "golden steps: ");
		for (int i = 0; i < GOLDEN_NSTEPS; i++)
			snprintf(got + strlen(got), sizeof got - strlen(got), "%s ", golden_step_name(i));
		UNIT_OK(names[0] != '\0' && strcmp(got, names) == 0, "golden's steps are docs/interfaces.md's: %s", names);
		UNIT_OK(strcmp(golden_step_name(GOLDEN_NSTEPS), "?") == 0 && strcmp(golden_step_name(-1), "?") == 0,
		    "... and a number past them has no name");
		doc_list(names, sizeof names, "validate arms: ");
		got[0] = '\0';
		for (int i = 0; validate_arm_name(i) != NULL; i++)
			snprintf(got + strlen(got), sizeof got - strlen(got), "%s ", validate_arm_name(i));
		UNIT_OK(names[0] != '\0' && strcmp(got, names) == 0, "validate's arms are docs/interfaces.md's: %s", names);
	}

	/* The key: the deploy key's facts, the pushed digest, image null, in ledger_key_of's order. */
	{
		ledger_identity id = {.image = "ghcr.io/x/base:1", .digest = "sha256:aaaa", .guest_os = "26.5.2",
			.guest_build = "25F84", .guest_model = "VirtualMac2,1", .host_chip = "Apple M1 Ultra",
			.host_model = "Mac13,2", .host_os = "26.6.1", .host_build = "25G76"};
		ledger_identity w = id;

		w.digest = d;
		old = ledger_key_of(&id);
		k = golden_key(old, d);
		want = ledger_key_of(&w);
		a = cJSON_PrintUnformatted(k), b = cJSON_PrintUnformatted(want);
		UNIT_OK(a && b && strcmp(a, b) == 0, "the golden key is ledger_key_of the same facts with the pushed digest");
		UNIT_OK(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(k, "image")), "... its image is null");
		free(a), free(b);
		cJSON_Delete(k), cJSON_Delete(want), cJSON_Delete(old);
	}
	old = ledger_key("unknown", NULL, "26.5.2", "25F84", "VirtualMac2,1", "AMD EPYC", "Linux 6");
	k = golden_key(old, d);
	a = cJSON_PrintUnformatted(k);
	UNIT_OK(a && strcmp(a, "{\"imageDigest\":\"sha256:4174eb379431d94ea9907b9087562dec0d3e06f39af45bb61fd0281a53cab176\","
	    "\"image\":null,\"guestOS\":\"26.5.2\",\"guestBuild\":\"25F84\",\"guestModel\":\"VirtualMac2,1\","
	    "\"hostChip\":\"AMD EPYC\",\"hostModel\":null,\"hostOS\":null,\"hostBuild\":\"Linux 6\"}") == 0,
	    "from an old key: the same facts, the host's model and OS unknown (%s)", a ? a : "NULL");
	free(a);
	cJSON_Delete(k), cJSON_Delete(old);

	{
		payload_info info = {.profile = "m1-ultra-tahoe-26.5"};

		memset(info.sha256, 'a', 64);
		a = golden_stamp_json("ghcr.io/o/shim:1", NULL, &info, "pass", "2026-12-04T18:00:00Z");
		UNIT_OK(a && strncmp(a, "{\"image\":\"ghcr.io/o/shim:1\",\"baseDigest\":null,\"payloadSha256\":\"aaaa", 66) == 0,
		    "the stamp: reference, base digest (null: a VM of lume create), payload");
		UNIT_OK(a && strstr(a, "\"profile\":\"m1-ultra-tahoe-26.5\",\"verdict\":\"pass\",\"time\":\"2026-12-04T18:00:00Z\","
		    "\"lumeMetal\":\"" LM_VERSION "\"}"), "... profile, verdict, time and version");
		UNIT_OK(a && !strstr(a, "\"digest\""), "... and no \"digest\": the pushed one is not known yet");
		free(a);
	}

	/* The lume wrappers against a stand-in: Lume's log lines, its "Error:" line, exit codes. */
	if (mkdtemp(dir) == NULL)
		return 1;
	snprintf(lume, sizeof lume, "%s/lume", dir);
	snprintf(log, sizeof log, "%s/run.log", dir);
	f = fopen(lume, "w");
	fprintf(f, "#!/bin/sh\necho \"$*\" >>\"${0%%/*}/args\"\n"
	    "echo '[2026-12-04T18:00:00Z] INFO: Cloning VM'\n"
	    "case $1 in\n"
	    "clone) [ \"$2\" = src ] || { echo 'Error: Virtual machine not found: '\"$2\" >&2; exit 1; } ;;\n"
	    "push) echo '[2026-12-04T18:00:00Z] ERROR: Missing GitHub credentials.'; echo 'Error: authenticationFailed' >&2;"
	    " exit 1 ;;\n"
	    "stop) i=0; while [ $i -lt 400 ]; do echo \"[x] INFO: line $i of a long log\"; i=$((i+1)); done; exit 3 ;;\n"
	    "run) [ \"$2\" = fails ] && { echo 'Error: Virtual machine not found: fails' >&2; exit 1; }\n"
	    "     [ \"$2\" = stays ] && exec sleep 5 ;;\n"
	    "esac\nexit 0\n");
	fclose(f);
	chmod(lume, 0755);
	UNIT_OK(lume_clone(lume, "src", "b", 0, err) == LM_OK, "lume clone: exit 0 is LM_OK");
	UNIT_OK(lume_clone(lume, "nope", "b", 0, err) == LM_EINPUT, "a VM Lume does not find is an input error");
	UNIT_HAS(err, "lume clone exited 1: Error: Virtual machine not found: nope", "... naming Lume's Error line");
	{
		const char *tags[] = {"latest", "26.5"};

		UNIT_OK(lume_push(lume, "b", "shim:1", "r:5000", "org", tags, 2, 0, err) == LM_EFAIL, "a failed push is LM_EFAIL");
		UNIT_HAS(err, "lume push exited 1: Error: authenticationFailed", "... with the Error line, not the log line");
	}
	UNIT_OK(lume_stop(lume, "b", 0, err) == LM_EFAIL, "a stop that exits 3 after 400 log lines");
	UNIT_HAS(err, "lume stop exited 3: [x] INFO: line 399 of a long log", "... names its last line");
	UNIT_OK(lume_delete(lume, "b", 0, err) == LM_OK, "lume delete");
	UNIT_OK(lume_pull(lume, "base:1", "src", NULL, "org", 0, err) == LM_OK, "lume pull");
	{
		char *args = NULL;
		size_t n = 0;
		char p[96];

		snprintf(p, sizeof p, "%s/args", dir);
		lm_read_file(&args, &n, p, 1 << 16, err);
		UNIT_OK(args && strstr(args, "push b shim:1 --registry r:5000 --organization org --additional-tags latest 26.5\n"),
		    "push passes the registry, organization and tags through");
		UNIT_OK(args && strstr(args, "delete b --force\n") && strstr(args, "pull base:1 src --organization org\n"),
		    "delete is forced; pull without --registry leaves Lume's default");
		free(args);
	}
	UNIT_OK(lume_run_detached(lume, "ok", log, NULL, err) == LM_OK, "run: a lume that returns 0 at once");
	UNIT_OK(lume_run_detached(lume, "fails", log, NULL, err) == LM_EINPUT, "run: one that fails at once");
	UNIT_HAS(err, "lume run exited 1: Error: Virtual machine not found: fails", "... names the log's Error line");
	{
		int pid = 0;
		int64_t t0 = lm_now_ms();

		UNIT_OK(lume_run_detached(lume, "stays", NULL, &pid, err) == LM_OK && pid > 0,
		    "run: one that keeps running is left running (the VM's process)");
		UNIT_OK(lm_now_ms() - t0 < LUME_RUN_SETTLE_MS + 1000, "... after the settle time, not its end");
		UNIT_OK(pid > 0 && kill(pid, 0) == 0, "... and still runs");
		if (pid > 0)
			kill(-pid, SIGKILL);
	}
	UNIT_OK(lume_run_detached("/nonexistent/lume", "x", log, NULL, err) == LM_EINPUT, "run: no lume is an input error");
	UNIT_HAS(err, "install Lume", "... with the hint");
	{
		const char *v[] = {"lume", "push", "b", "it's", "a b", "", NULL};

		UNIT_OK(lume_argv_text(&t, v) == 0 && strcmp(t.data, "lume push b 'it'\\''s' 'a b' ''") == 0,
		    "argv text: plain words bare, others single-quoted (%s)", t.data ? t.data : "");
		lm_buf_free(&t);
	}
	{
		char cmd[128];

		snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			return 1;
	}
	UNIT_DONE();
}
