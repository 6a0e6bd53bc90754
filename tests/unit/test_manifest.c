/* Profiles and workloads: what loads, and what each bad input is told. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/manifest.h"
#include "unit.h"
#include "core/util.h"

static char dir[] = "/tmp/lm-unit-manifest.XXXXXX";
static char path[4096];

/* Writes text to <dir>/NAME.json and loads it as a profile (workload when w). */
static int
try(int w, const char *name, const char *text, char *err)
{
	manifest_profile *p = NULL;
	manifest_workload *wl = NULL;
	int rc;

	snprintf(path, sizeof path, "%s/%s.json", dir, name);
	if (lm_write_file_atomic(path, text, strlen(text), 0644, err) != LM_OK)
		return -99;
	rc = w ? manifest_workload_load(&wl, LM_DATADIR, path, err) : manifest_profile_load(&p, LM_DATADIR, path, err);
	manifest_profile_free(p);
	manifest_workload_free(wl);
	return rc;
}

#define PROFILE(fam, extra) "{\"id\":\"p\",\"appleFamilyMax\":" fam ",\"maxThreadgroupMemory\":65536," \
	"\"validatedOn\":[{\"hostChip\":\"Apple M1 Ultra\",\"hostOS\":\"26.6.1\",\"guestOS\":\"26.5.2\"," \
	"\"guestBuild\":\"25F84\"}]" extra "}"

int
main(void)
{
	manifest_profile *p;
	manifest_workload *w;
	char err[LM_ERRLEN] = "";
	int rc;

	if (mkdtemp(dir) == NULL)
		return 2;

	rc = manifest_profile_load(&p, LM_DATADIR, "m1-ultra-tahoe-26.5", err);
	UNIT_OK(rc == LM_OK && p->apple_family_max == 1009 && p->max_threadgroup_memory == 65536 &&
	    p->working_set == 0, "the shipped m1-ultra-tahoe-26.5 profile loads: 1009, 65536");
	manifest_profile_free(p);
	rc = manifest_workload_load(&w, LM_DATADIR, "llama-server", err);
	UNIT_OK(rc == LM_OK && strcmp(w->profile, "m1-ultra-tahoe-26.5") == 0 &&
	    strcmp(w->label, "com.trycua.lume-metal.llama-server") == 0, "the llama-server workload loads");
	manifest_workload_free(w);

	UNIT_OK(try(0, "p", PROFILE("1009", ""), err) == LM_OK, "a minimal valid profile loads");
	rc = manifest_profile_load(&p, LM_DATADIR, "no-such-profile", err);
	UNIT_OK(rc == LM_EINPUT, "a missing profile is an input error");
	UNIT_HAS(err, "no profile named \"no-such-profile\"", "... and says which");

	UNIT_OK(try(0, "p", PROFILE("1009", ",\"colour\":\"red\""), err) == LM_EINPUT, "unknown field refused");
	UNIT_HAS(err, "p.json: colour: unknown field", "... naming the file and field");
	UNIT_OK(try(0, "p", PROFILE("\"1009\"", ""), err) == LM_EINPUT, "a string family refused");
	UNIT_HAS(err, "appleFamilyMax: must be an integer, not string", "... naming the type");
	UNIT_OK(try(0, "p", PROFILE("1009.5", ""), err) == LM_EINPUT, "a fractional family refused");
	UNIT_OK(try(0, "p", PROFILE("1000", ""), err) == LM_EINPUT, "family 1000 refused");
	UNIT_HAS(err, "appleFamilyMax: 1000 is below the minimum 1001", "... as below the minimum");
	UNIT_OK(try(0, "p", PROFILE("2000", ""), err) == LM_EINPUT, "family 2000 refused");
	UNIT_HAS(err, "above the maximum 1999", "... as above the maximum");
	UNIT_OK(try(0, "p", PROFILE("2001", ""), err) == LM_EINPUT, "Mac family 2001 refused outright");
	UNIT_HAS(err, "2001 is a Mac family", "... as a Mac family");
	UNIT_OK(try(0, "p", PROFILE("3001", ""), err) == LM_EINPUT, "Common family 3001 refused outright");
	UNIT_HAS(err, "3001 is a Common family", "... as a Common family");
	UNIT_OK(try(0, "p", PROFILE("5001", ""), err) == LM_EINPUT, "Metal family 5001 refused outright");
	UNIT_HAS(err, "5001 is a Metal family", "... as a Metal family");
	UNIT_OK(try(0, "p", "{\"id\":\"p\",\"appleFamilyMax\":1009}", err) == LM_EINPUT, "missing fields refused");
	UNIT_HAS(err, "maxThreadgroupMemory: required field is missing", "... naming the field");
	UNIT_OK(try(0, "p", PROFILE("1009", ",\"validatedOn\":[]"), err) == LM_EINPUT, "a duplicate key refused");
	UNIT_HAS(err, "validatedOn: field appears twice", "... naming it");
	UNIT_OK(try(0, "p", "{\"id\":\"p\",\"appleFamilyMax\":1009,\"maxThreadgroupMemory\":65536,"
	    "\"validatedOn\":[{\"hostChip\":\"x\",\"hostOS\":\"1\",\"guestOS\":\"1\",\"guestBuild\":\"b\",\"cpu\":1}]}",
	    err) == LM_EINPUT, "an unknown nested field refused");
	UNIT_HAS(err, "validatedOn[0].cpu: unknown field", "... with its path");
	UNIT_OK(try(0, "p", "{\"id\": \"p\",\n\"appleFamilyMax\": 1009,\n}", err) == LM_EINPUT, "bad JSON refused");
	UNIT_HAS(err, "p.json: not valid JSON (near line 3)", "... with the line");
	UNIT_OK(try(0, "q", PROFILE("1009", ""), err) == LM_EINPUT, "an id that is not the file name refused");
	UNIT_HAS(err, "id: \"p\" does not match the file name", "... saying so");
	UNIT_OK(try(0, "p", PROFILE("1009", ",\"maxThreadgroupMemory\":\"big\""), err) == LM_EINPUT,
	    "threadgroup memory of the wrong type refused");

#define WL(extra) "{\"id\":\"w\",\"label\":\"com.example.w\",\"profile\":\"p\",\"programArguments\":[\"/bin/w\"]," \
	"\"processes\":[\"w\"],\"stdoutPath\":\"~/o\",\"stderrPath\":\"~/e\"" extra "}"
	UNIT_OK(try(1, "w", WL(""), err) == LM_OK, "a minimal workload loads");
	UNIT_OK(try(1, "w", WL(",\"keepAlive\":\"yes\""), err) == LM_EINPUT, "keepAlive as a string refused");
	UNIT_HAS(err, "w.json: keepAlive: must be a boolean, not string", "... naming it");
	UNIT_OK(try(1, "w", WL(",\"programArguments\":[]"), err) == LM_EINPUT, "duplicate programArguments refused");
	UNIT_OK(try(1, "w", "{\"id\":\"w\",\"label\":\"l\",\"profile\":\"p\",\"programArguments\":[],"
	    "\"processes\":[\"w\"],\"stdoutPath\":\"o\",\"stderrPath\":\"e\"}", err) == LM_EINPUT,
	    "empty programArguments refused");
	UNIT_HAS(err, "programArguments: needs at least 1 item", "... saying so");
	UNIT_OK(try(1, "w", WL(",\"environment\":{\"DYLD_INSERT_LIBRARIES\":\"/x\"}"), err) == LM_EINPUT,
	    "a workload may not set the shim's variables");
	UNIT_HAS(err, "environment.DYLD_INSERT_LIBRARIES: reserved", "... naming the variable");
	UNIT_OK(try(1, "w", WL(",\"environment\":{\"X\":1}"), err) == LM_EINPUT, "a numeric env value refused");
	UNIT_HAS(err, "environment.X: must be a string", "... naming it");
	UNIT_OK(try(1, "w", "{\"id\":\"w\",\"label\":\"bad label;rm\",\"profile\":\"p\",\"programArguments\":[\"/w\"],"
	    "\"processes\":[\"w\"],\"stdoutPath\":\"o\",\"stderrPath\":\"e\"}", err) == LM_EINPUT,
	    "a label with shell characters refused");
	UNIT_HAS(err, "label: \"bad label;rm\" does not match", "... naming the field");
	UNIT_OK(try(1, "w", WL(",\"readiness\":{\"url\":\"http://127.0.0.1:8080/health\"}"), err) == LM_OK,
	    "a readiness URL on the guest's loopback loads");
	UNIT_OK(try(1, "w", WL(",\"readiness\":{\"url\":\"http://10.0.0.5:8080/health\"}"), err) == LM_EINPUT,
	    "a readiness URL off the guest's loopback refused");
	UNIT_HAS(err, "readiness.url: \"http://10.0.0.5:8080/health\" does not match", "... naming the field");
	UNIT_OK(try(1, "w", WL(",\"readiness\":{\"url\":\"http://localhost:8080/a b\"}"), err) == LM_EINPUT,
	    "a readiness URL with a space refused (payload.env holds it unquoted)");
	UNIT_OK(try(1, "w", WL(",\"readiness\":{}"), err) == LM_EINPUT, "a readiness without its url refused");

	snprintf(path, sizeof path, "rm -rf '%s'", dir);
	if (system(path) != 0)
		return 2;
	UNIT_DONE();
}
