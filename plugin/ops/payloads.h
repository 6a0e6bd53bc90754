/* payloads: the payload an operation pushes and what its workload asks: built and cached under
 * <state>/payloads/ or verified from --payload FILE, the workload manifest's validation setup,
 * and the data folder they come from (build, verify and --version use the same). Never prints:
 * errors go to err (LM_ERRLEN). */
#ifndef LM_PAYLOADS_H
#define LM_PAYLOADS_H

#include "core/datadir.h"
#include "core/payload.h"
#include "ops/request.h"
#include "ops/validate.h"

/* The data folder (datadir.h): *note says what is missing and every folder looked in when the
 * one returned lacks the data, else "". */
const char *ops_datadir(char *note);
/* The candidates in search order, and the SHA-256 of DIR/REL (datadir.h). */
size_t ops_datadir_candidates(datadir_candidate c[3]);
int ops_datadir_sha256(char out[65], char *path, size_t pathlen, const char *dir, const char *rel, char *err);

/* Builds a payload (build), verifies one (verify; sha may be NULL), frees what either gave. */
int ops_payload_build(payload_info **info, const payload_build_opts *o, char *err);
int ops_payload_verify(payload_info **info, const char *path, const char *sha, char *err);
void ops_payload_free(payload_info *info);

/* The payload of the request: r->payload_file (verified), or one built for r's target, profile
 * and workload under <state>/payloads/ (from datadir); r->payload and r->info own it, and
 * o->payload and o->info point into r. A payload with placeholders is LM_EREFUSED ("PATH: holds
 * N placeholder file(s); it cannot be deployed"). */
int ops_payload(ops_request *r, const char *datadir, session_opts *o, char *err);

/* The validation of validate and deploy --validate-workload, and what sets it up. */
typedef struct {
	validate_opts v;        /* model, llama-perplexity, text, evidence, thresholds, progress */
	const char *text_flag;  /* --text FILE, overriding the workload's text */
	int chunks;             /* --chunks N; 0: the workload's */
	int asked;              /* deploy --validate-workload */
	char text[4096];        /* the text's path on this host */
	char label[512];        /* the name recorded: --text as given, or the workload's */
} ops_validation;

/* After ops_payload: reads the payload's workload manifest (under datadir) for
 * "requireValidation" (into o->require_validation) and its "validation" thresholds and text;
 * when validation will run (run: validate, or deploy --validate-workload) requires a model,
 * resolves the text (--text, else the workload's under datadir) and sets o->validate to &v->v.
 * LM_EINPUT on bad input, err saying why. */
int ops_validation_setup(ops_validation *v, const ops_request *r, const char *datadir, session_opts *o, int run,
    char *err);

#endif
