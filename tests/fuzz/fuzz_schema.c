/* schema_check: the input is a schema, FUZZ_RS, then a document; with no FUZZ_RS it is a
 * document checked against each schema of manifests/schema/. */
#include "fuzz.h"
#include "core/schema.h"
#include "core/util.h"

static cJSON *
parse(const uint8_t *d, size_t n)
{
	char *text = fuzz_str(d, n);
	cJSON *doc = cJSON_Parse(text);

	free(text);
	return doc;
}

static cJSON *
shipped(const char *kind)
{
	char path[4096], *text, err[LM_ERRLEN];
	cJSON *doc;

	snprintf(path, sizeof path, "%s/manifests/schema/%s.schema.json", LM_DATADIR, kind);
	if (lm_read_file(&text, NULL, path, 1 << 20, err) != LM_OK || (doc = cJSON_Parse(text)) == NULL) {
		fprintf(stderr, "fuzz_schema: %s does not parse: %s\n", path, err);
		abort();
	}
	free(text);
	return doc;
}

FUZZ_TARGET(schema)
{
	static cJSON *profile, *workload;
	const uint8_t *s, *d;
	size_t slen = 0, dlen = 0;
	char err[LM_ERRLEN];

	if (profile == NULL) {
		profile = shipped("profile");
		workload = shipped("workload");
	}
	s = fuzz_part(data, size, 0, &slen);
	if ((d = fuzz_part(data, size, 1, &dlen)) != NULL) {
		cJSON *schema = parse(s, slen), *doc = parse(d, dlen);

		if (schema != NULL && doc != NULL)
			fuzz_note("schema_check", schema_check(schema, doc, err), err);
		cJSON_Delete(schema);
		cJSON_Delete(doc);
	} else {
		cJSON *doc = parse(data, size);

		if (doc != NULL) {
			fuzz_note("schema_check profile", schema_check(profile, doc, err), err);
			fuzz_note("schema_check workload", schema_check(workload, doc, err), err);
		}
		cJSON_Delete(doc);
	}
	return 0;
}
