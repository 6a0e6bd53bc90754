/* golden_plan: each step's command, for the dry run's plan and the result (golden_int.h). */
#include "ops/golden.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/guest.h"
#include "net/lume.h"
#include "net/ssh.h"
#include "core/util.h"
#include "ops/golden_int.h"
#include "ops/verdicts.h"

static char *
argv_text(const char *const *argv)
{
	lm_buf b = {0};

	if (lume_argv_text(&b, argv) < 0) {
		lm_buf_free(&b);
		return NULL;
	}
	return b.data ? b.data : strdup("");
}

static char *
text(const char *fmt, const char *a, const char *b)
{
	lm_buf t = {0};

	if (lm_buf_addf(&t, fmt, a, b ? b : "") < 0) {
		lm_buf_free(&t);
		return NULL;
	}
	return t.data;
}

/* Fills g->cmd: every step's concrete command. */
int
golden_plan(golden_run *g)
{
	const golden_opts *o = g->o;
	const char *lume = o->deploy.lume;
	lm_buf b = {0};
	int loopback;

	if (o->pull) {
		const char *a[10] = {lume, "pull", o->pull, o->source};
		size_t n = 4;

		if (o->pull_registry)
			a[n++] = "--registry", a[n++] = o->pull_registry;
		if (o->pull_organization)
			a[n++] = "--organization", a[n++] = o->pull_organization;
		g->cmd[GOLDEN_PULL] = argv_text(a);
	}
	{
		const char *a[] = {lume, "clone", o->source, o->build, NULL};

		g->cmd[GOLDEN_CLONE] = argv_text(a);
	}
	{
		const char *a[] = {lume, "run", o->build, "--no-display", NULL};
		char *t = argv_text(a);

		g->cmd[GOLDEN_RUN] = t ? text("%s (detached)%s", t, NULL) : NULL;
		free(t);
	}
	{
		const char *a[] = {lume, "get", o->build, "--format", "json", NULL};
		char *t = argv_text(a), wait[64];

		snprintf(wait, sizeof wait, " (until running with SSH, at most %d s)", o->deploy.wait_s);
		g->cmd[GOLDEN_SSH] = t ? text("%s%s", t, wait) : NULL;
		free(t);
	}
	g->cmd[GOLDEN_DEPLOY] = text("deploy %s --payload %s --force: upload, verify, probe stock and shimmed against "
	    "the profile, activate only on a pass", o->build, o->deploy.info ? o->deploy.info->sha256 : "?");
	g->cmd[GOLDEN_WORKLOAD] = text(o->model ? "validate --model %s" : "none (no --model)", o->model, NULL);
	{
		const char *a[] = {GUEST_ROOT, NULL};
		remote_cmd *stamp_cmd;

		if (rcmd_script(&stamp_cmd, RSCRIPT_STAMP, a) == LM_OK)
			g->cmd[GOLDEN_STAMP] = text("%s < image.json%s", rcmd_text(stamp_cmd), NULL);
		rcmd_free(stamp_cmd);
	}
	{
		const char *a[] = {lume, "stop", o->build, NULL};

		g->cmd[GOLDEN_STOP] = argv_text(a);
	}
	{
		const char *a[10] = {lume, "push", o->build, g->push_ref}; /* the build's own tag, none else */
		size_t n = 4;

		if (o->registry)
			a[n++] = "--registry", a[n++] = o->registry;
		if (o->organization)
			a[n++] = "--organization", a[n++] = o->organization;
		g->cmd[GOLDEN_PUSH] = argv_text(a);
	}
	loopback = strncmp(g->registry, "127.", 4) == 0 || strncmp(g->registry, "localhost", 9) == 0 ||
	    strncmp(g->registry, "[::1]", 5) == 0;
	if (lm_buf_addf(&b, "GET %s://%s/v2/%s/manifests/%s: the manifest lume pushed, its digest the SHA-256 of its "
	    "bytes", loopback ? "http" : "https", g->registry, g->repo, g->pushed.tag) == 0)
		g->cmd[GOLDEN_DIGEST] = b.data;
	else
		lm_buf_free(&b);
	b = (lm_buf){0};
	if (lm_buf_addf(&b, "PUT %s://%s/v2/%s/manifests/%s", loopback ? "http" : "https", g->registry, g->repo,
	    g->tag) == 0) {
		int ok = 1;

		for (size_t i = 0; i < o->ntags && ok; i++)
			ok = lm_buf_addf(&b, ", %s", o->tags[i]) == 0;
		if (ok && lm_buf_addf(&b, ": those bytes; DELETE .../manifests/%s where the registry deletes tags; GET "
		    "each tag back: it must name the pushed digest", g->pushed.tag) == 0)
			g->cmd[GOLDEN_TAG] = b.data, b.data = NULL;
	}
	lm_buf_free(&b);
	g->cmd[GOLDEN_RECORD] = text(o->model ? "ledger %s/ledger: the workload's validate record and one record of "
	    "kind golden, verdict pass, under imageDigest <the pushed digest>, image %s as their label" : "ledger %s/ledger: "
	    "one record of kind golden, verdict pass, under imageDigest <the pushed digest>, image %s as its label",
	    o->deploy.state, g->reference);
	g->cmd[GOLDEN_ATTACH] = o->deploy.verdicts && o->deploy.verdicts->signing_key ? text("ledger push %s "
	    "(signed by %s): the verdict as an OCI artifact whose subject is the pushed manifest", g->reference,
	    o->deploy.verdicts->signing_key) : text("none: no signing-key in the config file", NULL, NULL);
	{
		const char *a[] = {lume, "delete", o->build, "--force", NULL};

		g->cmd[GOLDEN_DELETE] = o->keep ? text("none: --keep keeps %s, stopped", o->build, NULL) : argv_text(a);
	}
	for (int i = o->pull ? 0 : 1; i < GOLDEN_NSTEPS; i++)
		if (g->cmd[i] == NULL)
			return LM_EFAIL;
	return LM_OK;
}
