/* golden_int: what golden.c (the checks and the loop), golden_plan.c (each step's command) and
 * golden_steps.c (the steps) share, included after ops/golden.h (its types). Not for other
 * modules: their interface is golden.h. */
#ifndef LM_GOLDEN_INT_H
#define LM_GOLDEN_INT_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "core/image.h"
#include "ops/golden_publish.h"
#include "ops/validate.h"

/* The bytes of a step's message: its own error with the context the build adds. */
#define GOLDEN_MSG_MAX (LM_ERRLEN + 1400)

/* One build as it runs. */
typedef struct {
	const golden_opts *o;
	cJSON *r, *steps, *cur;         /* the result, its "steps", the running step's entry */
	int64_t t0, ts;                 /* when the build and the running step started */
	int step;
	char *cmd[GOLDEN_NSTEPS];       /* each step's command, for the plan and the result */
	char repo[320], tag[160], reference[640];
	const char *registry, *org;
	golden_pushed pushed;           /* the push under its own tag (golden_publish.h) */
	char push_ref[256];             /* IMAGE:<that tag>, as lume push takes it */
	validate_opts vo;               /* the workload step's: deploy.validate, its pass deferred */
	cJSON *vrec;                    /* that pass's record, filed under the pushed digest; owned */
	/* What the steps hand on. */
	int made, running;              /* the build VM exists; it runs (a stop is due) */
	const char *fail_state;         /* the build's state when a step fails (NULL: "failed") */
	char base[IMAGE_DIGEST_LEN + 1]; /* the source's digest, "" when it has none */
	char when[32];                  /* the stamp's time, the record's */
	cJSON *dep;                     /* deploy_one's result, in r */
	cJSON *key, *rec;               /* the golden record and its key; owned */
} golden_run;

/* One row of the steps: run does the step (msg, GOLDEN_MSG_MAX bytes: why it failed, or what it
 * found, "" for nothing) and returns LM_OK or the build's exit class; skip, when set, says why
 * the step does not run (NULL: it runs). soft: a failure is recorded and the build goes on. */
typedef struct {
	const char *name;
	int (*run)(golden_run *g, char *msg);
	const char *(*skip)(golden_run *g);
	int soft;
} golden_step;

/* The steps, indexed by GOLDEN_*: their names are the progress lines' and the result's. */
extern const golden_step golden_steps[GOLDEN_NSTEPS];

/* Fills g->cmd: every step's concrete command. LM_EFAIL out of memory (golden_plan.c). */
int golden_plan(golden_run *g);

#endif
