/* The LaunchAgent plist: the launchd keys every workload gets (ProcessType, ThrottleInterval,
 * ExitTimeOut), the shim's state folder, their defaults, and the schema's refusal of bad values. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/agent.h"
#include "core/manifest.h"
#include "unit.h"
#include "core/util.h"

static char dir[] = "/tmp/lm-unit-agent.XXXXXX";

#define WL(extra) "{\"id\":\"w\",\"label\":\"com.example.w\",\"profile\":\"p\",\"programArguments\":[\"/bin/w\"]," \
	"\"processes\":[\"w\"],\"stdoutPath\":\"~/o\",\"stderrPath\":\"~/e\"" extra "}"

/* Loads the workload text as <dir>/w.json and renders its plist into out (empty on failure). */
static int
render(lm_buf *out, const manifest_profile *p, const char *text, char *err)
{
	static const agent_target t = {"DYLD_INSERT_LIBRARIES", "lib/liblumemetal.dylib"};
	manifest_workload *w = NULL;
	char path[4096];
	int rc;

	lm_buf_free(out);
	snprintf(path, sizeof path, "%s/w.json", dir);
	if (lm_write_file_atomic(path, text, strlen(text), 0644, err) != LM_OK)
		return -99;
	if ((rc = manifest_workload_load(&w, LM_DATADIR, path, err)) == LM_OK)
		rc = agent_render_plist(out, w, p, &t, err);
	manifest_workload_free(w);
	return rc;
}

/* The plist holds <key>KEY</key> and, on the next line, VALUE. */
static int
has(const lm_buf *b, const char *key, const char *value)
{
	char want[256];

	snprintf(want, sizeof want, "\t<key>%s</key>\n\t%s\n", key, value);
	return b->data != NULL && strstr(b->data, want) != NULL;
}

int
main(void)
{
	manifest_profile *p = NULL;
	lm_buf b = {0};
	char err[LM_ERRLEN] = "";
	char cmd[256];

	if (mkdtemp(dir) == NULL || manifest_profile_load(&p, LM_DATADIR, "m1-ultra-tahoe-26.5", err) != LM_OK) {
		printf("not ok - setup: %s\n", err);
		return 1;
	}

	UNIT_OK(render(&b, p, WL(""), err) == LM_OK, "a workload without launchd keys renders");
	UNIT_OK(has(&b, "ProcessType", "<string>Interactive</string>"),
	    "ProcessType defaults to Interactive (unset, launchd throttles CPU and I/O)");
	UNIT_OK(has(&b, "ThrottleInterval", "<integer>10</integer>"), "ThrottleInterval is written (10 s)");
	UNIT_OK(has(&b, "ExitTimeOut", "<integer>20</integer>"), "ExitTimeOut is written (20 s)");

	UNIT_OK(b.data != NULL && strstr(b.data, "\t\t<key>LUME_METAL_STATE_DIR</key>\n"
	    "\t\t<string>__LUME_METAL_HOME__/Library/Logs/lume-metal/com.example.w.shim</string>\n"),
	    "the shim's state folder is the label's under the logs folder (LUME_METAL_STATE_DIR)");

	UNIT_OK(render(&b, p, WL(",\"processType\":\"Background\",\"throttleInterval\":30,\"exitTimeOut\":5"), err) == LM_OK,
	    "a workload with its own launchd keys renders");
	UNIT_OK(has(&b, "ProcessType", "<string>Background</string>"), "the workload's ProcessType is used");
	UNIT_OK(has(&b, "ThrottleInterval", "<integer>30</integer>"), "the workload's ThrottleInterval is used");
	UNIT_OK(has(&b, "ExitTimeOut", "<integer>5</integer>"), "the workload's ExitTimeOut is used");
	UNIT_OK(b.data != NULL && strstr(b.data, "Interactive") == NULL, "... and no default beside it");

	UNIT_OK(render(&b, p, WL(",\"processType\":\"Realtime\""), err) == LM_EINPUT, "an unknown ProcessType refused");
	UNIT_HAS(err, "processType", "... naming the field");
	UNIT_OK(render(&b, p, WL(",\"exitTimeOut\":0"), err) == LM_EINPUT, "ExitTimeOut 0 (launchd's never) refused");
	UNIT_HAS(err, "exitTimeOut", "... naming the field");
	UNIT_OK(render(&b, p, WL(",\"throttleInterval\":2.5"), err) == LM_EINPUT, "a fractional ThrottleInterval refused");
	UNIT_HAS(err, "throttleInterval", "... naming the field");

	{
		manifest_workload *w = NULL;
		int ok = manifest_workload_load(&w, LM_DATADIR, "llama-server", err) == LM_OK;
		const cJSON *pt = ok ? cJSON_GetObjectItemCaseSensitive(w->json, "processType") : NULL;

		UNIT_OK(cJSON_IsString(pt) && strcmp(pt->valuestring, "Interactive") == 0,
		    "the llama-server workload chooses Interactive");
		manifest_workload_free(w);
	}

	lm_buf_free(&b);
	manifest_profile_free(p);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", dir);
	UNIT_DONE();
}
