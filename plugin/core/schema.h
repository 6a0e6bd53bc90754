/* schema: checks a cJSON document against the subset of JSON Schema that manifests/schema/
 * uses: type, properties, required, additionalProperties (false or a schema), items,
 * minItems, minimum, maximum, minLength, pattern. Other keywords are ignored. */
#ifndef LM_SCHEMA_H
#define LM_SCHEMA_H

#include <cjson/cJSON.h>

/* Returns LM_OK, or LM_EINPUT with err = "FIELD: REASON" for the first violation, FIELD being
 * a dotted path such as validatedOn[0].hostChip. Neither argument is modified. */
int schema_check(const cJSON *schema, const cJSON *doc, char *err);

#endif
