/* Resolving Lume VM names through the simulated lume (tests/lume-sim/), with its log lines. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lume.h"
#include "unit.h"
#include "util.h"

static char dir[] = "/tmp/lm-unit-lume.XXXXXX";
static const char *lume = LM_DATADIR "/tests/lume-sim/lume";

static void
vm(const char *name, const char *status, const char *ip, const char *ssh)
{
	char cmd[8192];

	snprintf(cmd, sizeof cmd, "sh " LM_DATADIR "/tests/lume-sim/vm.sh %s %s '%s' %s %s", dir, name, status, ip, ssh);
	if (system(cmd) != 0)
		printf("not ok - setup %s\n", cmd);
}

int
main(void)
{
	char err[LM_ERRLEN] = "", cmd[8192];
	lume_vm *v = NULL, **all = NULL;
	size_t n = 0;
	cJSON *doc;
	int rc;
	int64_t t0;

	if (mkdtemp(dir) == NULL)
		return 2;
	setenv("LUME_SIM_DIR", dir, 1);
	doc = lume_parse_output("[2026-08-09T12:00:00Z] INFO: Cleaned up stale session file\n"
	    "[\n  {\"name\": \"a\", \"status\": \"running\"}\n]\n[2026-08-09T12:00:01Z] INFO: done\n");
	UNIT_OK(doc && cJSON_GetArraySize(doc) == 1, "the JSON array is found between log lines");
	cJSON_Delete(doc);
	doc = lume_parse_output("[2026-08-09T12:00:00Z] INFO: nothing\n");
	UNIT_OK(doc == NULL, "log lines alone are no VM list");

	vm("tahoe-1", "running", "192.168.64.5", "true");
	vm("tahoe-off", "stopped", "null", "null");
	vm("tahoe-noip", "running", "null", "null");
	vm("tahoe-nossh", "running", "192.168.64.7", "false");

	rc = lume_resolve(&v, lume, "tahoe-1", 0, err);
	UNIT_OK(rc == LM_OK && v && strcmp(v->ip, "192.168.64.5") == 0 && v->ssh_available == 1,
	    "a running VM resolves to its IP %s", rc ? err : "");
	lume_vm_free(v);
	rc = lume_resolve(&v, lume, "tahoe-off", 0, err);
	UNIT_OK(rc == LM_EFAIL && v == NULL, "a stopped VM is a failure (exit 1)");
	UNIT_HAS(err, "VM tahoe-off is stopped; start it with `lume run tahoe-off --no-display`", "... with a hint");
	rc = lume_resolve(&v, lume, "tahoe-noip", 0, err);
	UNIT_OK(rc == LM_EFAIL, "a VM without an IP is a failure");
	UNIT_HAS(err, "VM tahoe-noip is running but has no IP address yet", "... saying so");
	rc = lume_resolve(&v, lume, "tahoe-nossh", 0, err);
	UNIT_OK(rc == LM_EFAIL, "a VM without SSH is a failure");
	UNIT_HAS(err, "VM tahoe-nossh (192.168.64.7): SSH is not available", "... saying so");
	rc = lume_resolve(&v, lume, "no-such-vm", 0, err);
	UNIT_OK(rc == LM_EINPUT, "an unknown VM is an input error");
	UNIT_HAS(err, "VM no-such-vm: not found by lume", "... naming it");
	UNIT_HAS(err, "Virtual machine not found", "... with lume's own words");
	rc = lume_resolve(&v, "/nonexistent/lume", "tahoe-1", 0, err);
	UNIT_OK(rc == LM_EINPUT, "a missing lume binary is an input error");
	UNIT_HAS(err, "cannot run /nonexistent/lume", "... naming it");

	/* --wait: the VM gets its IP after about a second. */
	snprintf(cmd, sizeof cmd, "(sleep 1; sh " LM_DATADIR "/tests/lume-sim/vm.sh %s tahoe-noip running 192.168.64.6 true) &", dir);
	t0 = lm_now_ms();
	if (system(cmd) != 0)
		printf("not ok - background\n");
	rc = lume_resolve(&v, lume, "tahoe-noip", 10, err);
	t0 = lm_now_ms() - t0;
	UNIT_OK(rc == LM_OK && v && strcmp(v->ip, "192.168.64.6") == 0 && t0 >= 900,
	    "--wait polls until the VM has an IP and SSH (%lld ms) %s", (long long)t0, rc ? err : "");
	lume_vm_free(v);
	t0 = lm_now_ms();
	rc = lume_resolve(&v, lume, "tahoe-off", 1, err);
	t0 = lm_now_ms() - t0;
	UNIT_OK(rc == LM_EFAIL && t0 >= 1000 && t0 < 5000, "--wait gives up after its time (%lld ms)", (long long)t0);

	rc = lume_list(&all, &n, lume, err);
	UNIT_OK(rc == LM_OK && n == 4, "lume ls lists 4 VMs %s", rc ? err : "");
	for (size_t i = 0; i < n; i++)
		lume_vm_free(all[i]);
	free(all);

	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		return 2;
	UNIT_DONE();
}
