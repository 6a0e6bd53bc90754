/* bench: llama-bench -o json and stderr read, checked and compared (see bench.h); the table's
 * rendering is bench_render.c. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/bench.h"
#include "core/bench_int.h"

#define BENCH_MAX_FILE (16u << 20)

const char *const bench_arm_names[3] = {"stock", "shim", "host"};

static char *
dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

void
bench_arm_free(bench_arm *a)
{
	if (a == NULL)
		return;
	free(a->path);
	free(a->stderr_path);
	free(a->gpu_info);
	free(a->build_commit);
	free(a->model_filename);
	free(a->model_type);
	free(a->tests);
	memset(a, 0, sizeof *a);
	a->build_number = a->n_threads = a->n_gpu_layers = NAN;
	bench_parse_stderr(&a->metal, NULL);
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

void
bench_stats(const double *v, size_t n, double *median, double *min, double *max)
{
	double *s = malloc(n * sizeof *s);

	if (s == NULL || n == 0) {
		*median = *min = *max = NAN;
		free(s);
		return;
	}
	memcpy(s, v, n * sizeof *s);
	qsort(s, n, sizeof *s, cmp_double);
	*min = s[0];
	*max = s[n - 1];
	*median = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
	free(s);
}

int
bench_fmt(char *out, size_t len, double v)
{
	char *p;

	if (isnan(v))
		return lm_fmt(out, len, "%s", "");
	if (lm_fmt(out, len, "%.4f", v) != 0)
		return -1;
	if ((p = strchr(out, '.')) != NULL) {
		char *e = out + strlen(out);

		while (e > p && (e[-1] == '0' || e[-1] == '.')) {
			int dot = e[-1] == '.';

			*--e = '\0';
			if (dot)
				break;
		}
	}
	if (strcmp(out, "-0") == 0)
		strcpy(out, "0");
	return 0;
}

/* Where in text the parser stopped, as a line number, and whether it is a NaN or infinity. */
static int
parse_error(const char *text, size_t len, const char *at, const char *name, char *err)
{
	size_t line = 1;
	const char *p;

	if (len == 0)
		return lm_err(err, LM_EINPUT, "%s: is empty, not llama-bench -o json output", name);
	if (at == NULL || at < text || at > text + len)
		at = text + len;
	for (p = text; p < at; p++)
		line += *p == '\n';
	for (p = at; p < text + len && p < at + 2 && (*p == '-' || *p == '+' || isspace((unsigned char)*p)); p++)
		;
	if ((size_t)(text + len - p) >= 3 && (strncasecmp(p, "nan", 3) == 0 || strncasecmp(p, "inf", 3) == 0))
		return lm_err(err, LM_EINPUT, "%s: line %zu: %.3s is not a number (samples_ts must hold tokens/s figures)",
		    name, line, p);
	if (at >= text + len - 1)
		return lm_err(err, LM_EINPUT, "%s: not valid JSON: it ends before the array is complete (truncated?)", name);
	return lm_err(err, LM_EINPUT, "%s: not valid JSON at line %zu", name, line);
}

/* A whole number field >= 0 (absent: dflt when dflt >= 0). */
static int
count_field(int *out, const cJSON *row, const char *k, int dflt, const char *name, int i, char *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(row, k);

	if (v == NULL && dflt >= 0) {
		*out = dflt;
		return LM_OK;
	}
	if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0) || v->valuedouble > 1e9 ||
	    v->valuedouble != floor(v->valuedouble))
		return lm_err(err, LM_EINPUT, "%s: row %d: %s is %s, not a whole number", name, i, k,
		    v == NULL ? "missing" : "invalid");
	*out = (int)v->valuedouble;
	return LM_OK;
}

static int
parse_row(bench_test *t, const cJSON *row, const char *name, int i, int min_samples, char *err)
{
	const cJSON *samples, *s;
	const char *gpu;
	double *v;
	size_t n = 0;
	int rc;

	if (!cJSON_IsObject(row))
		return lm_err(err, LM_EINPUT, "%s: row %d is not an object", name, i);
	if ((rc = count_field(&t->n_prompt, row, "n_prompt", -1, name, i, err)) != LM_OK ||
	    (rc = count_field(&t->n_gen, row, "n_gen", -1, name, i, err)) != LM_OK ||
	    (rc = count_field(&t->n_depth, row, "n_depth", 0, name, i, err)) != LM_OK)
		return rc;
	if (t->n_prompt > 0 && t->n_gen > 0)
		return lm_err(err, LM_EINPUT, "%s: row %d has both n_prompt %d and n_gen %d: neither a pp nor a tg test",
		    name, i, t->n_prompt, t->n_gen);
	if (t->n_prompt == 0 && t->n_gen == 0)
		return lm_err(err, LM_EINPUT, "%s: row %d has n_prompt 0 and n_gen 0: neither a pp nor a tg test", name, i);
	if (lm_fmt(t->name, sizeof t->name, "%s%d", t->n_prompt ? "pp" : "tg", t->n_prompt ? t->n_prompt : t->n_gen) ||
	    (t->n_depth && lm_fmt(t->name + strlen(t->name), sizeof t->name - strlen(t->name), "@d%d", t->n_depth)))
		return lm_err(err, LM_EINPUT, "%s: row %d: test name too long", name, i);
	gpu = lm_jstr(row, "gpu_info");
	if (gpu == NULL || *gpu == '\0')
		return lm_err(err, LM_EINPUT, "%s: row %d (%s): gpu_info is %s: llama-bench saw no Metal device", name, i,
		    t->name, gpu ? "empty" : "missing");
	samples = cJSON_GetObjectItemCaseSensitive(row, "samples_ts");
	if (!cJSON_IsArray(samples))
		return lm_err(err, LM_EINPUT, "%s: row %d (%s): samples_ts is %s", name, i, t->name,
		    samples ? "not an array" : "missing");
	if (cJSON_GetArraySize(samples) == 0)
		return lm_err(err, LM_EINPUT, "%s: row %d (%s): samples_ts is empty", name, i, t->name);
	if ((v = calloc((size_t)cJSON_GetArraySize(samples), sizeof *v)) == NULL)
		return lm_err(err, LM_EFAIL, "out of memory");
	cJSON_ArrayForEach(s, samples) {
		if (!cJSON_IsNumber(s) || !isfinite(s->valuedouble) || s->valuedouble <= 0) {
			free(v);
			if (!cJSON_IsNumber(s))
				return lm_err(err, LM_EINPUT, "%s: row %d (%s): samples_ts[%zu] is not a number", name, i, t->name, n);
			return lm_err(err, LM_EINPUT, "%s: row %d (%s): samples_ts[%zu] is %g: tokens/s must be a positive "
			    "finite number", name, i, t->name, n, s->valuedouble);
		}
		v[n++] = s->valuedouble;
	}
	if (n < (size_t)min_samples) {
		free(v);
		return lm_err(err, LM_EINPUT, "%s: row %d (%s): %zu samples in samples_ts, fewer than the %d required "
		    "(--min-samples)", name, i, t->name, n, min_samples);
	}
	t->nsamples = n;
	bench_stats(v, n, &t->median, &t->min, &t->max);
	free(v);
	return LM_OK;
}

/* tests[0..n) sorted by name (lm_name_sort; pos: the index in tests); NULL when out of
 * memory (or n is 0). Caller frees. */
static lm_name_at *
test_index(const bench_test *tests, size_t n)
{
	lm_name_at *ix = n ? calloc(n, sizeof *ix) : NULL;

	if (ix == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++)
		ix[i] = (lm_name_at){tests[i].name, i};
	lm_name_sort(ix, n);
	return ix;
}

/* The first of tests[0..n), in row order, whose name an earlier one has (lm_first_repeat). */
static size_t
first_repeat(const bench_test *tests, size_t n)
{
	const char **names = n ? calloc(n, sizeof *names) : NULL;
	size_t r;

	if (names == NULL)
		return n ? (size_t)-1 : 0;
	for (size_t i = 0; i < n; i++)
		names[i] = tests[i].name;
	r = lm_first_repeat(names, n);
	free(names);
	return r;
}

/* A repeated test among tests[0..n) as the error for its row; LM_OK when there is none. */
static int
repeat_error(const bench_test *tests, size_t n, const char *name, char *err)
{
	size_t r = first_repeat(tests, n);

	if (r == (size_t)-1)
		return lm_err(err, LM_EFAIL, "out of memory");
	if (r < n)
		return lm_err(err, LM_EINPUT, "%s: row %zu: a second %s test (rows must differ in n_prompt, n_gen or "
		    "n_depth)", name, r + 1, tests[r].name);
	return LM_OK;
}

int
bench_parse_json(bench_arm *out, const char *text, size_t len, const char *name, int min_samples, char *err)
{
	const char *end = NULL;
	const cJSON *row, *first;
	cJSON *doc;
	int rc = LM_OK, i = 0, pp = 0, tg = 0;

	memset(out, 0, sizeof *out);
	bench_arm_free(out);
	if (min_samples < 1)
		min_samples = 1;
	if (len == 0 || (doc = cJSON_ParseWithLengthOpts(text, len, &end, 0)) == NULL)
		return parse_error(text, len, end, name, err);
	while (end && end < text + len && isspace((unsigned char)*end))
		end++;
	if (end && end < text + len && *end != '\0') {
		cJSON_Delete(doc);
		return parse_error(text, len, end, name, err);
	}
	if (!cJSON_IsArray(doc) || cJSON_GetArraySize(doc) == 0) {
		rc = lm_err(err, LM_EINPUT, "%s: %s", name, cJSON_IsArray(doc) ? "an empty array: no tests" :
		    "not a JSON array of tests (llama-bench -o json)");
		goto done;
	}
	if ((out->tests = calloc((size_t)cJSON_GetArraySize(doc), sizeof *out->tests)) == NULL) {
		rc = lm_err(err, LM_EFAIL, "out of memory");
		goto done;
	}
	/* Every row in order; a repeated test is found by one sort, and reported before an
	 * error in a later row, as a row-by-row check would. */
	cJSON_ArrayForEach(row, doc) {
		bench_test *t = &out->tests[out->ntests];

		if ((rc = parse_row(t, row, name, ++i, min_samples, err)) != LM_OK) {
			char msg[LM_ERRLEN];

			if (repeat_error(out->tests, out->ntests, name, msg) != LM_OK)
				rc = lm_err(err, LM_EINPUT, "%s", msg);
			goto done;
		}
		pp += t->n_prompt > 0;
		tg += t->n_gen > 0;
		out->ntests++;
	}
	if ((rc = repeat_error(out->tests, out->ntests, name, err)) != LM_OK)
		goto done;
	if (pp == 0 || tg == 0) {
		rc = lm_err(err, LM_EINPUT, "%s: no %s test (a pp row has n_prompt > 0, a tg row n_gen > 0)", name,
		    pp == 0 ? "pp" : "tg");
		goto done;
	}
	first = cJSON_GetArrayItem(doc, 0);
	out->path = strdup(name);
	out->gpu_info = dup_or_null(lm_jstr(first, "gpu_info"));
	out->build_commit = dup_or_null(lm_jstr(first, "build_commit"));
	out->model_filename = dup_or_null(lm_jstr(first, "model_filename"));
	out->model_type = dup_or_null(lm_jstr(first, "model_type"));
	out->build_number = lm_jnum(first, "build_number");
	out->n_threads = lm_jnum(first, "n_threads");
	out->n_gpu_layers = lm_jnum(first, "n_gpu_layers");
	if (out->path == NULL || out->gpu_info == NULL)
		rc = lm_err(err, LM_EFAIL, "out of memory");
done:
	cJSON_Delete(doc);
	if (rc != LM_OK)
		bench_arm_free(out);
	return rc;
}

static char *
trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

static bench_tri
tri(const char *v)
{
	return strcmp(v, "true") == 0 ? BENCH_YES : strcmp(v, "false") == 0 ? BENCH_NO : BENCH_UNKNOWN;
}

static void
stderr_line(bench_metal *m, char *line)
{
	static const char *const tags[] = {BENCH_METAL_TAG, BENCH_METAL_TAG_OLD};
	char *p = NULL, *eq, *key, *val;
	size_t i;

	for (i = 0; i < 2 && p == NULL; i++) {
		size_t n = strlen(tags[i]);

		if ((p = strstr(line, tags[i])) != NULL && p[n] == ':')
			p += n + 1;
		else
			p = NULL;
	}
	if (p == NULL)
		return;
	m->seen = 1;
	if (m->tag == NULL)
		m->tag = tags[i - 1];
	p = trim(p);
	if (strncmp(p, "GPU name:", 9) == 0) {
		char *open, *close;

		if (m->gpu_name[0])
			return; /* the first device is the one llama.cpp uses */
		val = trim(p + 9);
		if ((open = strchr(val, '(')) != NULL && (close = strrchr(val, ')')) != NULL && close > open) {
			*close = '\0';
			val = trim(open + 1);
		}
		snprintf(m->gpu_name, sizeof m->gpu_name, "%s", val);
		return;
	}
	if (strncmp(p, "GPU family:", 11) == 0) {
		static const char apple[] = "MTLGPUFamilyApple";
		char *end;
		long n;

		val = trim(p + 11);
		if (strncmp(val, apple, sizeof apple - 1) != 0)
			return;
		n = strtol(val + sizeof apple - 1, &end, 10);
		if (end != val + sizeof apple - 1 && n > 0 && n < 100 && 1000 + n > m->apple_family)
			m->apple_family = 1000 + (int)n;
		return;
	}
	if ((eq = strchr(p, '=')) == NULL)
		return;
	*eq = '\0';
	key = trim(p);
	val = trim(eq + 1);
	if (strcmp(key, "simdgroup reduction") == 0)
		m->simdgroup_reduction = tri(val);
	else if (strcmp(key, "simdgroup matrix mul.") == 0)
		m->simdgroup_mm = tri(val);
	else if (strcmp(key, "has bfloat") == 0)
		m->has_bfloat = tri(val);
	else if (strcmp(key, "use residency sets") == 0)
		m->residency_sets = tri(val);
}

void
bench_parse_stderr(bench_metal *out, const char *text)
{
	memset(out, 0, sizeof *out);
	out->simdgroup_reduction = out->simdgroup_mm = out->has_bfloat = out->residency_sets = BENCH_UNKNOWN;
	while (text && *text) {
		size_t n = strcspn(text, "\n");
		char line[1024];

		snprintf(line, sizeof line, "%.*s", (int)(n < sizeof line ? n : sizeof line - 1), text);
		stderr_line(out, line);
		text += n + (text[n] == '\n');
	}
}

int
bench_load(bench_arm *out, const char *path, int min_samples, char *err)
{
	char *text = NULL, *spath = NULL;
	size_t len = 0, plen = strlen(path);
	int rc;

	memset(out, 0, sizeof *out);
	bench_arm_free(out);
	if ((rc = lm_read_file(&text, &len, path, BENCH_MAX_FILE, err)) != LM_OK)
		return rc;
	rc = bench_parse_json(out, text, len, path, min_samples, err);
	free(text);
	text = NULL;
	if (rc != LM_OK)
		return rc;
	if (plen > 5 && strcmp(path + plen - 5, ".json") == 0) {
		if ((spath = malloc(plen + 3)) == NULL) {
			bench_arm_free(out);
			return lm_err(err, LM_EFAIL, "out of memory");
		}
		memcpy(spath, path, plen - 5);
		strcpy(spath + plen - 5, ".stderr");
		if (access(spath, F_OK) != 0) {
			free(spath);
			return LM_OK;
		}
		if ((rc = lm_read_file(&text, &len, spath, BENCH_MAX_FILE, err)) != LM_OK) {
			free(spath);
			bench_arm_free(out);
			return rc;
		}
		bench_parse_stderr(&out->metal, text);
		out->stderr_path = spath;
		free(text);
	}
	return LM_OK;
}

char *
bench_label(const bench_arm *a)
{
	const char *file = a->model_filename, *type = a->model_type, *slash;
	char *s;
	size_t n;

	if (file && (slash = strrchr(file, '/')) != NULL)
		file = slash + 1;
	if (file && *file == '\0')
		file = NULL;
	if (type && *type == '\0')
		type = NULL;
	if (file == NULL || type == NULL)
		return strdup(file ? file : type ? type : "unknown model");
	n = strlen(file) + strlen(type) + 4;
	if ((s = malloc(n)) != NULL)
		snprintf(s, n, "%s (%s)", file, type);
	return s;
}

cJSON *
bench_tri_json(bench_tri t)
{
	return t == BENCH_UNKNOWN ? cJSON_CreateNull() : cJSON_CreateBool(t == BENCH_YES);
}

static cJSON *
arm_json(const bench_arm *a)
{
	cJSON *o = cJSON_CreateObject(), *m;

	lm_jadd_str(o, "path", a->path);
	lm_jadd_str(o, "stderr", a->stderr_path);
	lm_jadd_str(o, "gpu_info", a->gpu_info);
	lm_jadd_str(o, "build_commit", a->build_commit);
	lm_jadd_num(o, "build_number", a->build_number);
	lm_jadd_str(o, "model_filename", a->model_filename);
	lm_jadd_str(o, "model_type", a->model_type);
	lm_jadd_num(o, "n_threads", a->n_threads);
	lm_jadd_num(o, "n_gpu_layers", a->n_gpu_layers);
	if (!a->metal.seen) {
		cJSON_AddNullToObject(o, "metal");
		return o;
	}
	m = cJSON_AddObjectToObject(o, "metal");
	lm_jadd_str(m, "gpu_name", a->metal.gpu_name[0] ? a->metal.gpu_name : NULL);
	if (a->metal.apple_family)
		cJSON_AddNumberToObject(m, "apple_family", a->metal.apple_family);
	else
		cJSON_AddNullToObject(m, "apple_family");
	cJSON_AddItemToObject(m, "simdgroup_reduction", bench_tri_json(a->metal.simdgroup_reduction));
	cJSON_AddItemToObject(m, "simdgroup_matrix_mul", bench_tri_json(a->metal.simdgroup_mm));
	cJSON_AddItemToObject(m, "has_bfloat", bench_tri_json(a->metal.has_bfloat));
	cJSON_AddItemToObject(m, "use_residency_sets", bench_tri_json(a->metal.residency_sets));
	return o;
}

static cJSON *
fig_json(const bench_test *t)
{
	cJSON *o = cJSON_CreateObject();

	lm_jadd_num(o, "median", t->median);
	lm_jadd_num(o, "min", t->min);
	lm_jadd_num(o, "max", t->max);
	cJSON_AddNumberToObject(o, "samples", (double)t->nsamples);
	return o;
}

/* The test of arm a named name, through ix (a's test_index): NULL when a has none. */
static const bench_test *
find_test(const bench_arm *a, const lm_name_at *ix, const char *name)
{
	const lm_name_at *t = lm_name_find(ix, a->ntests, name);

	return t ? &a->tests[t->pos] : NULL;
}

const char *
bench_base(const char *p)
{
	const char *s = p ? strrchr(p, '/') : NULL;

	return s ? s + 1 : p ? p : "";
}

/* Arms must be runs of one model: the same model_type and model file name. */
static int
same_model(const bench_arm *a, const bench_arm *b, char *err)
{
	const char *ta = a->model_type ? a->model_type : "", *tb = b->model_type ? b->model_type : "";

	if (strcmp(ta, tb) != 0 || strcmp(bench_base(a->model_filename), bench_base(b->model_filename)) != 0)
		return lm_err(err, LM_EINPUT, "%s and %s are runs of different models (%s \"%s\", %s \"%s\")", a->path,
		    b->path, bench_base(a->model_filename), ta, bench_base(b->model_filename), tb);
	return LM_OK;
}

int
bench_table(cJSON **out, const bench_arm *stock, const bench_arm *shim, const bench_arm *host, const char *workload,
    char *err)
{
	const bench_arm *arms[3] = {stock, shim, host};
	lm_name_at *ix[3] = {NULL, NULL, NULL};
	cJSON *t = NULL, *o, *tests;
	char *label = NULL;
	int rc;

	*out = NULL;
	if ((rc = same_model(stock, shim, err)) != LM_OK || (host && (rc = same_model(stock, host, err)) != LM_OK))
		return rc;
	for (int a = 0; a < 3; a++)
		if (arms[a] && arms[a]->ntests && (ix[a] = test_index(arms[a]->tests, arms[a]->ntests)) == NULL) {
			rc = lm_err(err, LM_EFAIL, "out of memory");
			goto done;
		}
	/* Every arm runs the same tests (each looked up by binary search). */
	for (int a = 1; a < 3; a++) {
		if (arms[a] == NULL)
			continue;
		for (size_t i = 0; i < stock->ntests; i++)
			if (find_test(arms[a], ix[a], stock->tests[i].name) == NULL) {
				rc = lm_err(err, LM_EINPUT, "%s has no %s test, which %s has", arms[a]->path, stock->tests[i].name,
				    stock->path);
				goto done;
			}
		for (size_t i = 0; i < arms[a]->ntests; i++)
			if (find_test(stock, ix[0], arms[a]->tests[i].name) == NULL) {
				rc = lm_err(err, LM_EINPUT, "%s has no %s test, which %s has", stock->path,
				    arms[a]->tests[i].name, arms[a]->path);
				goto done;
			}
	}
	if (workload == NULL && (workload = label = bench_label(stock)) == NULL) {
		rc = lm_err(err, LM_EFAIL, "out of memory");
		goto done;
	}
	t = cJSON_CreateObject();
	cJSON_AddStringToObject(t, "format", BENCH_FORMAT);
	cJSON_AddStringToObject(t, "workload", workload);
	cJSON_AddStringToObject(t, "unit", "tokens/s");
	cJSON_AddItemToObject(t, "shim_effective", bench_tri_json(shim->metal.seen ? shim->metal.simdgroup_mm : BENCH_UNKNOWN));
	o = cJSON_AddObjectToObject(t, "arms");
	for (int a = 0; a < 3; a++)
		if (arms[a])
			cJSON_AddItemToObject(o, bench_arm_names[a], arm_json(arms[a]));
	tests = cJSON_AddArrayToObject(t, "tests");
	for (size_t i = 0; i < stock->ntests; i++) {
		const bench_test *st = &stock->tests[i], *sh = find_test(shim, ix[1], st->name),
		    *ho = host ? find_test(host, ix[2], st->name) : NULL;

		o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "test", st->name);
		cJSON_AddNumberToObject(o, "n_prompt", st->n_prompt);
		cJSON_AddNumberToObject(o, "n_gen", st->n_gen);
		cJSON_AddNumberToObject(o, "n_depth", st->n_depth);
		cJSON_AddItemToObject(o, "stock", fig_json(st));
		cJSON_AddItemToObject(o, "shim", fig_json(sh));
		cJSON_AddItemToObject(o, "host", ho ? fig_json(ho) : cJSON_CreateNull());
		lm_jadd_num(o, "guest_ratio", sh->median / st->median);
		lm_jadd_num(o, "shim_to_host_percent", ho ? 100 * sh->median / ho->median : NAN);
		cJSON_AddItemToArray(tests, o);
	}
	if (cJSON_GetObjectItemCaseSensitive(t, "tests") == NULL || cJSON_GetArraySize(tests) != (int)stock->ntests) {
		rc = lm_err(err, LM_EFAIL, "out of memory");
		goto done;
	}
	*out = t;
	t = NULL;
done:
	cJSON_Delete(t);
	free(label);
	for (int a = 0; a < 3; a++)
		free(ix[a]);
	return rc;
}

double
bench_fig(const cJSON *test, const char *arm, const char *k)
{
	return lm_jnum(cJSON_GetObjectItemCaseSensitive(test, arm), k);
}

int
bench_table_check(const cJSON *t, char *err)
{
	const char *f = lm_jstr(t, "format");
	const cJSON *tests = cJSON_GetObjectItemCaseSensitive(t, "tests"), *x;
	int i = 0;

	if (!cJSON_IsObject(t) || f == NULL || strcmp(f, BENCH_FORMAT) != 0)
		return lm_err(err, LM_EINPUT, "not a bench table of format %s", BENCH_FORMAT);
	if (lm_jstr(t, "workload") == NULL || !cJSON_IsArray(tests) || cJSON_GetArraySize(tests) == 0)
		return lm_err(err, LM_EINPUT, "bench table without a workload or tests");
	cJSON_ArrayForEach(x, tests) {
		i++;
		if (lm_jstr(x, "test") == NULL || !(bench_fig(x, "stock", "median") > 0) ||
		    !(bench_fig(x, "shim", "median") > 0))
			return lm_err(err, LM_EINPUT, "bench table test %d has no name or no stock and shim medians", i);
	}
	return LM_OK;
}

cJSON *
bench_record(const cJSON *table, const char *vm)
{
	const cJSON *eff = cJSON_GetObjectItemCaseSensitive(table, "shim_effective");
	cJSON *r = cJSON_CreateObject();

	if (r == NULL)
		return NULL;
	cJSON_AddStringToObject(r, "kind", "bench");
	lm_jadd_str(r, "vm", vm);
	lm_jadd_str(r, "workload", lm_jstr(table, "workload"));
	cJSON_AddStringToObject(r, "verdict", cJSON_IsTrue(eff) ? "effective" : cJSON_IsFalse(eff) ? "not-effective" :
	    "unknown");
	cJSON_AddItemToObject(r, "bench", cJSON_Duplicate(table, 1));
	if (cJSON_GetObjectItemCaseSensitive(r, "bench") == NULL) {
		cJSON_Delete(r);
		return NULL;
	}
	return r;
}
