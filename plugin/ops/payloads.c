/* payloads: the payload of an operation and its workload's validation (payloads.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/manifest.h"
#include "ops/payloads.h"

const char *
ops_datadir(char *note)
{
	return datadir_path(note);
}

size_t
ops_datadir_candidates(datadir_candidate c[3])
{
	return datadir_candidates(c);
}

int
ops_datadir_sha256(char out[65], char *path, size_t pathlen, const char *dir, const char *rel, char *err)
{
	return datadir_sha256(out, path, pathlen, dir, rel, err);
}

int
ops_payload_build(payload_info **info, const payload_build_opts *o, char *err)
{
	return payload_build(info, o, err);
}

int
ops_payload_verify(payload_info **info, const char *path, const char *sha, char *err)
{
	return payload_verify(info, path, sha, err);
}

void
ops_payload_free(payload_info *info)
{
	payload_info_free(info);
}

int
ops_payload(ops_request *r, const char *datadir, session_opts *o, char *err)
{
	payload_build_opts b = {.datadir = datadir, .target = r->target, .profile = r->profile,
		.workload = r->workload};
	payload_info **info = &r->info;
	char **path = &r->payload;
	const char *file = r->payload_file, *state = r->state, *target = r->target, *profile = r->profile,
		*workload = r->workload;
	char dir[4096], out[4400];
	int rc;

	*info = NULL;
	*path = NULL;
	if (file != NULL) {
		if ((rc = payload_verify(info, file, NULL, err)) != LM_OK)
			return rc;
		*path = strdup(file);
	} else {
		if (lm_fmt(dir, sizeof dir, "%s/payloads", state) < 0 || lm_fmt(out, sizeof out, "%s/lume-metal-%s-%s-%s.tar.gz",
		    dir, target, profile ? profile : "default", workload) < 0)
			return lm_err(err, LM_EINPUT, "--state %s: path too long", state);
		if (strchr(out + strlen(dir) + 1, '/') != NULL)
			return lm_err(err, LM_EINPUT, "--profile and --workload take ids here, not paths");
		if ((rc = lm_mkdirs(dir, err)) != LM_OK)
			return rc;
		b.out = out;
		if ((rc = payload_build(info, &b, err)) != LM_OK)
			return rc;
		*path = strdup(out);
	}
	if (*path == NULL)
		return lm_err(err, LM_EFAIL, "out of memory");
	if ((*info)->placeholders > 0)
		return lm_err(err, LM_EREFUSED, "%s: holds %d placeholder file(s); it cannot be deployed", *path,
		    (*info)->placeholders);
	o->payload = *path;
	o->info = *info;
	return LM_OK;
}

int
ops_validation_setup(ops_validation *v, const ops_request *r, const char *datadir, session_opts *o, int run,
    char *err)
{
	manifest_workload *w = NULL;
	validate_workload vw;
	char why[LM_ERRLEN];
	int rc;

	if (manifest_workload_load(&w, datadir, r->info->workload, why) != LM_OK)
		return lm_err(err, LM_EINPUT, "the payload's workload %s: %s", r->info->workload, why);
	validate_workload_read(&vw, w->json);
	o->require_validation = vw.required;
	v->v.th = vw.th;
	if (v->chunks > 0)
		v->v.th.chunks = v->chunks;
	if (v->v.llama_perplexity == NULL)
		v->v.llama_perplexity = "llama-perplexity";
	rc = LM_OK;
	if (!run)
		goto done;
	if (v->v.model == NULL) {
		rc = lm_err(err, LM_EINPUT, "--model PATH (the model's path in the guest) is required");
		goto done;
	}
	if (v->text_flag)
		rc = lm_fmt(v->text, sizeof v->text, "%s", v->text_flag);
	else if (vw.text)
		rc = lm_fmt(v->text, sizeof v->text, "%s/%s", datadir, vw.text);
	else {
		rc = lm_err(err, LM_EINPUT, "the workload %s names no validation text; give --text FILE", w->id);
		goto done;
	}
	if (rc != 0 || access(v->text, R_OK) != 0) {
		rc = lm_err(err, LM_EINPUT, "the validation text %s cannot be read", v->text);
		goto done;
	}
	if ((rc = validate_text_check(v->text, v->v.th.context, why)) != LM_OK) {
		rc = lm_err(err, LM_EINPUT, "%s", why);
		goto done;
	}
	v->v.text = v->text;
	snprintf(v->label, sizeof v->label, "%s", v->text_flag ? v->text_flag : vw.text);
	v->v.text_label = v->label;
	o->validate = &v->v;
done:
	manifest_workload_free(w);
	return rc;
}
