/* Resolving Lume VM names through the simulated lume (tests/lume-sim/), with its log lines. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net/lume.h"
#include "unit.h"
#include "core/util.h"

static char dir[] = "/tmp/lm-unit-lume.XXXXXX";
static size_t allocs; /* cJSON's allocations: the parser's work on crafted output */

static void *
count_malloc(size_t n)
{
	allocs++;
	return malloc(n);
}

/* A fake lume in dir/NAME: a sh script with body. Returns its path (static). */
static const char *
fake_lume(const char *name, const char *body)
{
	static char path[1024];
	char cmd[16384];

	snprintf(path, sizeof path, "%s/%s", dir, name);
	snprintf(cmd, sizeof cmd, "printf '#!/bin/sh\\n%%s\\n' '%s' > '%s' && chmod +x '%s'", body, path, path);
	if (system(cmd) != 0)
		printf("not ok - setup %s\n", cmd);
	return path;
}

/* n bytes of crafted Lume output: line repeated, then a real one-VM array. Caller frees. */
static char *
crafted(const char *line, size_t n)
{
	static const char tail[] = "[\n  {\"name\": \"a\", \"status\": \"running\"}\n]\n";
	size_t l = strlen(line), i;
	char *t = malloc(n + sizeof tail);

	for (i = 0; i + l <= n; i += l)
		memcpy(t + i, line, l);
	memcpy(t + i, tail, sizeof tail);
	return t;
}
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

	rc = lume_resolve(&v, lume, "tahoe-1", 0, 0, err);
	UNIT_OK(rc == LM_OK && v && strcmp(v->ip, "192.168.64.5") == 0 && v->ssh_available == 1,
	    "a running VM resolves to its IP %s", rc ? err : "");
	lume_vm_free(v);
	rc = lume_resolve(&v, lume, "tahoe-off", 0, 0, err);
	UNIT_OK(rc == LM_EFAIL && v == NULL, "a stopped VM is a failure (exit 1)");
	UNIT_HAS(err, "VM tahoe-off is stopped; start it with `lume run tahoe-off --no-display`", "... with a hint");
	rc = lume_resolve(&v, lume, "tahoe-noip", 0, 0, err);
	UNIT_OK(rc == LM_EFAIL, "a VM without an IP is a failure");
	UNIT_HAS(err, "VM tahoe-noip is running but has no IP address yet", "... saying so");
	rc = lume_resolve(&v, lume, "tahoe-nossh", 0, 0, err);
	UNIT_OK(rc == LM_EFAIL, "a VM without SSH is a failure");
	UNIT_HAS(err, "VM tahoe-nossh (192.168.64.7): SSH is not available", "... saying so");
	rc = lume_resolve(&v, lume, "no-such-vm", 0, 0, err);
	UNIT_OK(rc == LM_EINPUT, "an unknown VM is an input error");
	UNIT_HAS(err, "VM no-such-vm: not found by lume", "... naming it");
	UNIT_HAS(err, "Virtual machine not found", "... with lume's own words");
	rc = lume_resolve(&v, "/nonexistent/lume", "tahoe-1", 0, 0, err);
	UNIT_OK(rc == LM_EINPUT, "a missing lume binary is an input error");
	UNIT_HAS(err, "cannot run /nonexistent/lume", "... naming it");

	/* --wait: the VM gets its IP after about a second. */
	snprintf(cmd, sizeof cmd, "(sleep 1; sh " LM_DATADIR "/tests/lume-sim/vm.sh %s tahoe-noip running 192.168.64.6 true) &", dir);
	t0 = lm_now_ms();
	if (system(cmd) != 0)
		printf("not ok - background\n");
	rc = lume_resolve(&v, lume, "tahoe-noip", 10, 0, err);
	t0 = lm_now_ms() - t0;
	UNIT_OK(rc == LM_OK && v && strcmp(v->ip, "192.168.64.6") == 0 && t0 >= 900,
	    "--wait polls until the VM has an IP and SSH (%lld ms) %s", (long long)t0, rc ? err : "");
	lume_vm_free(v);
	t0 = lm_now_ms();
	rc = lume_resolve(&v, lume, "tahoe-off", 1, 0, err);
	t0 = lm_now_ms() - t0;
	UNIT_OK(rc == LM_EFAIL && t0 >= 1000 && t0 < 5000, "--wait gives up after its time (%lld ms)", (long long)t0);

	/* Crafted output (a Mac host may send 16 MiB): the parser's work grows with its length
	 * only. Counted as cJSON's allocations, and timed against a generous bound. */
	{
		static const struct {
			const char *line, *what;
			size_t per_line; /* allocations a linear parse may make per line */
			int found;       /* the array after them is found (not when they leave a value open) */
		} shapes[] = {
			{"[\n", "\"[\" lines", 0, 1},
			{"[{\n", "\"[{\" lines", 4, 1},
			{"[{\"a\":\n", "\"[{\\\"a\\\":\" lines (nested to cJSON's depth limit)", 4, 0},
			{"[2026-08-09T12:00:00Z] INFO: x\n", "log lines", 0, 1},
		};
		cJSON_Hooks hooks = {count_malloc, free};

		for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
			size_t len = 64 << 10, lines = len / strlen(shapes[i].line);
			char *t = crafted(shapes[i].line, len);

			cJSON_InitHooks(&hooks);
			allocs = 0;
			doc = lume_parse_output(t);
			cJSON_InitHooks(NULL);
			UNIT_OK((doc || !shapes[i].found) && allocs <= lines * shapes[i].per_line + 16,
			    "64 KiB of %s, then the array: %s, with %zu allocations for %zu lines", shapes[i].what,
			    doc ? "found" : "not found", allocs, lines);
			cJSON_Delete(doc);
			free(t);
		}
		for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
			char *t = crafted(shapes[i].line, 4u << 20);

			t0 = lm_now_ms();
			doc = lume_parse_output(t);
			t0 = lm_now_ms() - t0;
			UNIT_OK((doc || !shapes[i].found) && t0 < 60000, "4 MiB of %s: done in %lld ms (generous bound 60 s)",
			    shapes[i].what, (long long)t0);
			cJSON_Delete(doc);
			free(t);
		}
	}

	/* A lume that fills its stderr before stdout: both streams are read together. */
	{
		const char *l = fake_lume("lume-noisy", "head -c 204800 /dev/zero | tr \"\\\\0\" x >&2; "
		    "exec \"$LUME_SIM\" \"$@\"");

		setenv("LUME_SIM", lume, 1);
		t0 = lm_now_ms();
		rc = lume_resolve(&v, l, "tahoe-1", 0, lm_now_ms() + 30000, err);
		UNIT_OK(rc == LM_OK && v && strcmp(v->ip, "192.168.64.5") == 0, "a lume writing 200 KiB to stderr first "
		    "resolves (%lld ms) %s", (long long)(lm_now_ms() - t0), rc ? err : "");
		lume_vm_free(v);
	}
	/* A hung lume is killed at the deadline, with what it started. */
	{
		const char *l = fake_lume("lume-hung", "echo starting; sleep 4321; echo never");

		t0 = lm_now_ms();
		rc = lume_resolve(&v, l, "tahoe-1", 0, lm_now_ms() + 2000, err);
		t0 = lm_now_ms() - t0;
		UNIT_OK(rc == LM_EFAIL && v == NULL && t0 >= 1900 && t0 < 10000, "a hung lume get ends at its deadline "
		    "(%lld ms)", (long long)t0);
		UNIT_HAS(err, "VM tahoe-1: lume get: ", "... naming the VM and the command");
		UNIT_HAS(err, "timed out after 2 s", "... and the time");
		snprintf(cmd, sizeof cmd, "ps -eo args | grep -q '^sleep 4321$'");
		UNIT_OK(system(cmd) != 0, "... and its child is gone too");
		t0 = lm_now_ms();
		rc = lume_resolve(&v, l, "tahoe-1", 3, lm_now_ms() + 1000, err);
		t0 = lm_now_ms() - t0;
		UNIT_OK(rc == LM_EFAIL && t0 >= 2900 && t0 < 10000, "with --wait the run may last to the end of the wait "
		    "(%lld ms), and is not retried", (long long)t0);
	}

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
