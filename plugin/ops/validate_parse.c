/* validate_parse: what the workload asks (validate_workload_read) and what llama-perplexity
 * printed (its statistics, build line and own errors), held against the thresholds: see
 * validate.h. Reads text only; no guest, no ledger. */
#include "ops/validate.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/util.h"

void
validate_workload_read(validate_workload *out, const cJSON *w)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(w, "validation"), *x;

	out->required = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(w, "requireValidation"));
	out->text = NULL;
	out->th = (validate_thresholds){VALIDATE_MAX_MEAN_KLD, VALIDATE_MIN_SAME_TOP, VALIDATE_MAX_PPL_DEV,
		VALIDATE_CONTEXT, VALIDATE_CHUNKS};
	if (!cJSON_IsObject(v))
		return;
	if (cJSON_IsNumber(x = cJSON_GetObjectItemCaseSensitive(v, "maxMeanKld")))
		out->th.max_mean_kld = x->valuedouble;
	if (cJSON_IsNumber(x = cJSON_GetObjectItemCaseSensitive(v, "minSameTopPercent")))
		out->th.min_same_top = x->valuedouble;
	if (cJSON_IsNumber(x = cJSON_GetObjectItemCaseSensitive(v, "maxPplRatioDeviation")))
		out->th.max_ppl_dev = x->valuedouble;
	if (cJSON_IsNumber(x = cJSON_GetObjectItemCaseSensitive(v, "context")))
		out->th.context = x->valueint;
	if (cJSON_IsNumber(x = cJSON_GetObjectItemCaseSensitive(v, "chunks")))
		out->th.chunks = x->valueint;
	if (cJSON_IsString(x = cJSON_GetObjectItemCaseSensitive(v, "text")))
		out->text = x->valuestring;
}

/* The labels read, as llama-perplexity prints them with whitespace runs as one space. */
enum { F_PPL_Q, F_PPL_BASE, F_RATIO, F_KLD_MEAN, F_KLD_MAX, F_KLD_999, F_SAME_TOP, F_N };
static const struct {
	const char *label;
	double lo, hi;   /* the range a value must be in */
	int required;
} fields[F_N] = {
	[F_PPL_Q] = {"Mean PPL(Q)", 0, INFINITY, 0},
	[F_PPL_BASE] = {"Mean PPL(base)", 0, INFINITY, 0},
	[F_RATIO] = {"Mean PPL(Q)/PPL(base)", 1e-9, INFINITY, 1},
	[F_KLD_MEAN] = {"Mean KLD", -0.001, INFINITY, 1},
	[F_KLD_MAX] = {"Maximum KLD", -0.001, INFINITY, 0},
	[F_KLD_999] = {"99.9% KLD", -0.001, INFINITY, 1},
	[F_SAME_TOP] = {"Same top p", 0, 100, 1},
};

#define LINE_MAX_LEN 4096

/* The next line of [p, end): *n its length without \n, \r\n or \r; returns where the next
 * one starts. */
const char *
validate_next_line(const char *p, const char *end, size_t *n)
{
	const char *q = p;

	while (q < end && *q != '\n' && *q != '\r')
		q++;
	*n = (size_t)(q - p);
	if (q < end && *q == '\r')
		q++;
	if (q < end && *q == '\n')
		q++;
	return q;
}

int
validate_parse(validate_stats *out, const char *text, size_t len, char *err)
{
	const char *p = text ? text : "", *end = p + (text ? len : 0);
	double v[F_N];
	int seen[F_N] = {0}, blocks = 0;

	for (int i = 0; i < F_N; i++)
		v[i] = NAN;
	while (p < end) {
		char label[64], num[64], line[LINE_MAX_LEN + 1];
		size_t n, k = 0, i = 0;
		const char *colon, *start = p;

		p = validate_next_line(p, end, &n);
		if (n > LINE_MAX_LEN)
			continue;
		memcpy(line, start, n);
		line[n] = '\0';
		n = strlen(line); /* a NUL ends it */
		if (strncmp(line, "======", 6) == 0 && strstr(line, "statistics") != NULL)
			blocks++;
		if ((colon = strchr(line, ':')) == NULL)
			continue;
		/* The label: leading blanks dropped, runs of blanks as one space, trailing ones dropped. */
		for (const char *c = line; c < colon && k < sizeof label - 1; c++) {
			if (*c == ' ' || *c == '\t') {
				if (k > 0 && label[k - 1] != ' ')
					label[k++] = ' ';
			} else
				label[k++] = *c;
		}
		while (k > 0 && label[k - 1] == ' ')
			k--;
		label[k] = '\0';
		for (i = 0; i < F_N && strcmp(label, fields[i].label) != 0; i++)
			;
		if (i == F_N)
			continue;
		if (seen[i]++)
			return lm_err(err, LM_EINPUT, "llama-perplexity printed \"%s\" twice", fields[i].label);
		{
			const char *c = colon + 1, *e = line + n;
			size_t m = 0;
			char *stop;

			while (c < e && (*c == ' ' || *c == '\t'))
				c++;
			while (c < e && m < sizeof num - 1 && strchr("0123456789+-.eE", *c) != NULL)
				num[m++] = *c++;
			num[m] = '\0';
			v[i] = m ? strtod(num, &stop) : NAN;
			/* The number ends at a blank or the line's end: "0x1p-3" is not 0. */
			if (m == 0 || *stop != '\0' || (c < e && *c != ' ' && *c != '\t') || !isfinite(v[i]) || v[i] < fields[i].lo || v[i] > fields[i].hi)
				return lm_err(err, LM_EINPUT, "llama-perplexity's \"%s\" is not a number in its range: %.40s",
				    fields[i].label, m ? num : "(none)");
		}
	}
	if (blocks == 0 && !seen[F_RATIO] && !seen[F_KLD_MEAN] && !seen[F_KLD_999] && !seen[F_SAME_TOP])
		return lm_err(err, LM_EINPUT, "llama-perplexity printed no statistics block: it compared fewer than 100 "
		    "token positions; raise --chunks (each chunk of context c gives c - 1 - c/2 positions)");
	for (int i = 0; i < F_N; i++)
		if (fields[i].required && !seen[i])
			return lm_err(err, LM_EINPUT, "llama-perplexity's statistics have no \"%s\" line", fields[i].label);
	*out = (validate_stats){v[F_PPL_Q], v[F_PPL_BASE], v[F_RATIO], v[F_KLD_MEAN], v[F_KLD_MAX], v[F_KLD_999],
		v[F_SAME_TOP]};
	return LM_OK;
}

void
validate_parse_build(char out[201], const char *text, size_t len)
{
	const char *p = text ? text : "", *end = p + (text ? len : 0);

	out[0] = '\0';
	while (p < end) {
		const char *line = p;
		size_t n, k = 0;

		p = validate_next_line(p, end, &n);
		if (n < 7 || memcmp(line, "build: ", 7) != 0)
			continue;
		for (size_t i = 7; i < n && k < 200; i++)
			out[k++] = (unsigned char)line[i] >= 0x20 && (unsigned char)line[i] < 0x7f ? line[i] : '?';
		out[k] = '\0';
		return;
	}
}

static void
reason(cJSON *reasons, const char *fmt, double a, double b)
{
	char s[200];

	if (reasons == NULL)
		return;
	snprintf(s, sizeof s, fmt, a, b);
	cJSON_AddItemToArray(reasons, cJSON_CreateString(s));
}

/* Slack for the figures' binary rounding: 1.01 - 1 is 0.010000000000000009. */
#define SLACK 1e-9

int
validate_verdict(cJSON *reasons, const validate_stats *s, const validate_thresholds *th)
{
	int pass = 1;

	if (!(s->kld_mean <= th->max_mean_kld + SLACK)) {
		reason(reasons, "mean KLD %.6f is above %g", s->kld_mean, th->max_mean_kld);
		pass = 0;
	}
	if (!(s->same_top >= th->min_same_top - SLACK)) {
		reason(reasons, "same top token %.3f%% is below %g%%", s->same_top, th->min_same_top);
		pass = 0;
	}
	if (!(fabs(s->ppl_ratio - 1) <= th->max_ppl_dev + SLACK)) {
		reason(reasons, "PPL(Q)/PPL(base) %.6f is not within %g of 1", s->ppl_ratio, th->max_ppl_dev);
		pass = 0;
	}
	return pass;
}

/* llama-perplexity's own errors (tools/perplexity/perplexity.cpp): LOG_ERR lines of perplexity()
 * and kl_divergence() ("perplexity: ...", "kl_divergence : failed to eval"), after which main
 * returns 0; so they are read from its stderr, not its exit status. The last two are the
 * model's evaluation failing. */
static const char *const ppl_err_msgs[] = {
	"you need at least ", "the data file you provided tokenizes to only ", "failed to open ",
	"does not look like a file containing log-probabilities", "has been computed with ", "failed reading ",
	"inconsistent vocabulary", "you must provide a name of a file", "stride is ", "there are only ",
	"failed to eval", "failed to decode",
};
#define PPL_EVAL_MSGS 2

/* s (n bytes, not NUL-terminated) holds the string w. */
static int
has(const char *s, size_t n, const char *w)
{
	size_t k = strlen(w);

	for (size_t i = 0; i + k <= n; i++)
		if (memcmp(s + i, w, k) == 0)
			return 1;
	return 0;
}

int
validate_parse_errors(char out[401], const char *text, size_t len)
{
	const char *p = text ? text : "", *end = p + (text ? len : 0);
	size_t k = 0, nmsg = sizeof ppl_err_msgs / sizeof ppl_err_msgs[0];
	int found = 0;

	out[0] = '\0';
	while (p < end) {
		const char *line = p, *m = line;
		size_t n, i;

		p = validate_next_line(p, end, &n);
		if (n > 10 && memcmp(line, "perplexity", 10) == 0)
			m = line + 10;
		else if (n > 13 && memcmp(line, "kl_divergence", 13) == 0)
			m = line + 13;
		else
			continue;
		if (line + n - m > 3 && memcmp(m, "_v2", 3) == 0)
			m += 3;
		if (m < line + n && *m == ' ')
			m++;
		if (line + n - m < 2 || m[0] != ':' || m[1] != ' ')
			continue;
		m += 2;
		for (i = 0; i < nmsg && !has(m, (size_t)(line + n - m), ppl_err_msgs[i]); i++) /* some follow a name */
			;
		if (i == nmsg)
			continue;
		if (i >= nmsg - PPL_EVAL_MSGS)
			found = 2;
		else if (!found)
			found = 1;
		if (k > 0 && k < 398)
			out[k++] = ';', out[k++] = ' ';
		for (size_t j = 0; j < n && k < 400; j++)
			out[k++] = (unsigned char)line[j] >= 0x20 && (unsigned char)line[j] < 0x7f ? line[j] : '?';
		out[k] = '\0';
	}
	return found;
}

int
validate_text_check(const char *path, int context, char *err)
{
	struct stat st;
	long long need = 2LL * context;

	if (stat(path, &st) != 0)
		return lm_err(err, LM_EINPUT, "the validation text %s cannot be read: %s", path, strerror(errno));
	/* A token holds at least one byte of the text; common_tokenize adds a BOS token and may add a
	 * leading space: so fewer than 2 * context - 2 bytes are fewer than 2 * context tokens. */
	if ((long long)st.st_size + 2 < need)
		return lm_err(err, LM_EINPUT, "the validation text %s has %lld bytes: llama-perplexity needs at least 2 x "
		    "context = %lld tokens of it (it refuses fewer, \"you need at least %lld tokens\"), and a token is at "
		    "least one byte; give a longer text, or a smaller validation context", path, (long long)st.st_size, need,
		    need);
	return LM_OK;
}
