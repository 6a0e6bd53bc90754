/* schema: see schema.h. */
#include "core/schema.h"

#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <string.h>

#include "core/util.h"

#define SCHEMA_PATTERN_MAX 256

/* True when a quantifier (+ * ? or a {m,n} bound) follows another one. */
static int
stacked_quantifiers(const char *p)
{
	int prev = 0;

	for (; *p; p++) {
		int q = *p == '+' || *p == '*' || *p == '?' || *p == '{';

		if (*p == '\\' && p[1]) {
			p++;
			prev = 0;
			continue;
		}
		if (*p == '[') { /* a bracket expression is one atom: its + * ? are literal */
			p += 1 + (p[1] == '^');
			p += *p == ']';
			p += strcspn(p, "]");
			if (*p == '\0')
				return 0;
			prev = 0;
			continue;
		}
		if (q && prev)
			return 1;
		if (*p == '{') {
			p += strcspn(p, "}");
			if (*p == '\0')
				return 0;
		}
		prev = q;
	}
	return 0;
}

static const char *
type_of(const cJSON *v)
{
	if (cJSON_IsString(v))
		return "string";
	if (cJSON_IsBool(v))
		return "boolean";
	if (cJSON_IsNull(v))
		return "null";
	if (cJSON_IsArray(v))
		return "array";
	if (cJSON_IsObject(v))
		return "object";
	if (cJSON_IsNumber(v))
		return (v->valuedouble == floor(v->valuedouble) && fabs(v->valuedouble) < 9007199254740992.0)
		    ? "integer" : "number";
	return "invalid";
}

static int
type_ok(const char *want, const cJSON *v)
{
	const char *got = type_of(v);

	return strcmp(want, got) == 0 || (strcmp(want, "number") == 0 && strcmp(got, "integer") == 0);
}

static const char *
field(const char *path)
{
	return *path ? path : "(document)";
}

static int check(const cJSON *s, const cJSON *v, const char *path, char *err);

static int
check_object(const cJSON *s, const cJSON *v, const char *path, char *err)
{
	const cJSON *props = cJSON_GetObjectItemCaseSensitive(s, "properties");
	const cJSON *extra = cJSON_GetObjectItemCaseSensitive(s, "additionalProperties");
	const cJSON *req = cJSON_GetObjectItemCaseSensitive(s, "required"), *it;
	char sub[256];
	int rc;

	cJSON_ArrayForEach(it, req) {
		if (cJSON_IsString(it) && cJSON_GetObjectItemCaseSensitive(v, it->valuestring) == NULL)
			return lm_err(err, LM_EINPUT, "%s%s%s: required field is missing", path,
			    *path ? "." : "", it->valuestring);
	}
	cJSON_ArrayForEach(it, v) {
		const cJSON *ps = props ? cJSON_GetObjectItemCaseSensitive(props, it->string) : NULL;

		if (lm_fmt(sub, sizeof sub, "%s%s%s", path, *path ? "." : "", it->string) < 0)
			return lm_err(err, LM_EINPUT, "%s: field name too long", field(path));
		if (cJSON_GetObjectItemCaseSensitive(v, it->string) != it)
			return lm_err(err, LM_EINPUT, "%s: field appears twice", sub);
		if (ps == NULL && cJSON_IsFalse(extra))
			return lm_err(err, LM_EINPUT, "%s: unknown field", sub);
		if (ps == NULL && cJSON_IsObject(extra))
			ps = extra;
		if (ps != NULL && (rc = check(ps, it, sub, err)) != LM_OK)
			return rc;
	}
	return LM_OK;
}

static int
check(const cJSON *s, const cJSON *v, const char *path, char *err)
{
	const cJSON *k;
	char sub[256];
	int rc, i = 0;

	if ((k = cJSON_GetObjectItemCaseSensitive(s, "type")) != NULL && cJSON_IsString(k) &&
	    !type_ok(k->valuestring, v))
		return lm_err(err, LM_EINPUT, "%s: must be %s %s, not %s", field(path),
		    strchr("aeiou", k->valuestring[0]) ? "an" : "a", k->valuestring, type_of(v));
	if (cJSON_IsNumber(v)) {
		if ((k = cJSON_GetObjectItemCaseSensitive(s, "minimum")) != NULL && v->valuedouble < k->valuedouble)
			return lm_err(err, LM_EINPUT, "%s: %.17g is below the minimum %.17g", field(path),
			    v->valuedouble, k->valuedouble);
		if ((k = cJSON_GetObjectItemCaseSensitive(s, "maximum")) != NULL && v->valuedouble > k->valuedouble)
			return lm_err(err, LM_EINPUT, "%s: %.17g is above the maximum %.17g", field(path),
			    v->valuedouble, k->valuedouble);
	}
	if (cJSON_IsString(v)) {
		if ((k = cJSON_GetObjectItemCaseSensitive(s, "minLength")) != NULL &&
		    (double)strlen(v->valuestring) < k->valuedouble)
			return lm_err(err, LM_EINPUT, "%s: shorter than %.0f characters", field(path), k->valuedouble);
		if ((k = cJSON_GetObjectItemCaseSensitive(s, "pattern")) != NULL && cJSON_IsString(k)) {
			regex_t re;

			/* A long pattern, or quantifiers stacked on quantifiers ("a++", "a*+"), can make
			 * glibc's regcomp build gigabytes (make fuzz: 2 GB for a 300-byte pattern): the
			 * schemas need neither. */
			if (strlen(k->valuestring) > SCHEMA_PATTERN_MAX || stacked_quantifiers(k->valuestring))
				return lm_err(err, LM_EFAIL, "%s: schema pattern is longer than %d bytes or stacks "
				    "quantifiers", field(path), SCHEMA_PATTERN_MAX);
			if (regcomp(&re, k->valuestring, REG_EXTENDED | REG_NOSUB) != 0)
				return lm_err(err, LM_EFAIL, "%s: schema pattern does not compile", field(path));
			rc = regexec(&re, v->valuestring, 0, NULL, 0);
			regfree(&re);
			if (rc != 0)
				return lm_err(err, LM_EINPUT, "%s: \"%s\" does not match %s", field(path),
				    v->valuestring, k->valuestring);
		}
	}
	if (cJSON_IsArray(v)) {
		const cJSON *items = cJSON_GetObjectItemCaseSensitive(s, "items"), *it;

		if ((k = cJSON_GetObjectItemCaseSensitive(s, "minItems")) != NULL &&
		    (double)cJSON_GetArraySize(v) < k->valuedouble)
			return lm_err(err, LM_EINPUT, "%s: needs at least %.0f item(s)", field(path), k->valuedouble);
		cJSON_ArrayForEach(it, v) {
			if (items != NULL) {
				if (lm_fmt(sub, sizeof sub, "%s[%d]", path, i) < 0)
					return lm_err(err, LM_EINPUT, "%s: path too long", field(path));
				if ((rc = check(items, it, sub, err)) != LM_OK)
					return rc;
			}
			i++;
		}
	}
	if (cJSON_IsObject(v))
		return check_object(s, v, path, err);
	return LM_OK;
}

int
schema_check(const cJSON *schema, const cJSON *doc, char *err)
{
	return check(schema, doc, "", err);
}
