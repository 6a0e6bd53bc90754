/* validate: llama-perplexity's statistics blocks as the real tool prints them (and as
 * tests/guest-sim/bin/llama-perplexity does), CRLF and extra lines, hostile variants, the build
 * line, the verdict against the thresholds, the workload's validation fields, and validate
 * records through the ledger's check. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/ledger.h"
#include "unit.h"
#include "core/util.h"
#include "ops/validate.h"

static const char good[] =
    "chunk             PPL               ln(PPL(Q)/PPL(base))          KL Divergence              \xce\x94p RMS            Same top p\n"
    "   1    9.5134 \xc2\xb1    0.5000    0.00023 \xc2\xb1    0.00011    0.00041 \xc2\xb1    0.00002  0.612 \xc2\xb1  0.010 % 99.214 \xc2\xb1  0.210 %\n"
    "\n"
    "====== Perplexity statistics ======\n"
    "Mean PPL(Q)                   :   9.515601 \xc2\xb1   0.310402\n"
    "Mean PPL(base)                :   9.513400 \xc2\xb1   0.310220\n"
    "Cor(ln(PPL(Q)), ln(PPL(base))):  99.98%\n"
    "Mean ln(PPL(Q)/PPL(base))     :   0.000231 \xc2\xb1   0.000102\n"
    "Mean PPL(Q)/PPL(base)         :   1.000231 \xc2\xb1   0.000102\n"
    "Mean PPL(Q)-PPL(base)         :   0.002201 \xc2\xb1   0.000970\n"
    "\n"
    "====== KL divergence statistics ======\n"
    "Mean    KLD:   0.000412 \xc2\xb1   0.000021\n"
    "Maximum KLD:   0.041209\n"
    "99.9%   KLD:   0.010731\n"
    "99.0%   KLD:   0.003112\n"
    "Median  KLD:   0.000201\n"
    "Minimum KLD:   0.000000\n"
    "\n"
    "====== Token probability statistics ======\n"
    "Mean    \xce\x94p: -0.002 \xc2\xb1 0.011 %\n"
    "RMS \xce\x94p    :  0.612 \xc2\xb1 0.010 %\n"
    "Same top p: 99.214 \xc2\xb1 0.210 %\n";

static int
near(double a, double b)
{
	return fabs(a - b) < 1e-9;
}

/* good with the line starting with from replaced by to (NULL: removed); caller frees. */
static char *
edit(const char *from, const char *to)
{
	const char *p = good, *e;
	char *out;

	while ((p = strstr(p + 1, from)) != NULL && p[-1] != '\n')
		;
	if (p == NULL)
		return NULL;
	e = strchr(p, '\n') + 1;
	if ((out = malloc(sizeof good + (to ? strlen(to) : 0) + 2)) == NULL)
		return NULL;
	sprintf(out, "%.*s%s%s%s", (int)(p - good), good, to ? to : "", to ? "\n" : "", e);
	return out;
}

static int
parse(validate_stats *s, const char *text, char *err)
{
	return validate_parse(s, text, text ? strlen(text) : 0, err);
}

int
main(void)
{
	validate_stats s;
	validate_thresholds th = {VALIDATE_MAX_MEAN_KLD, VALIDATE_MIN_SAME_TOP, VALIDATE_MAX_PPL_DEV, 512, 8};
	char err[LM_ERRLEN] = "", build[201], *t;
	cJSON *reasons;

	UNIT_OK(parse(&s, good, err) == LM_OK, "the real statistics blocks parse (%s)", err);
	UNIT_OK(near(s.ppl_ratio, 1.000231) && near(s.kld_mean, 0.000412) && near(s.kld_999, 0.010731) &&
	    near(s.same_top, 99.214) && near(s.kld_max, 0.041209) && near(s.ppl_q, 9.515601) && near(s.ppl_base, 9.5134),
	    "... every figure read");
	UNIT_OK(validate_verdict(NULL, &s, &th) == 1, "... and within the default thresholds");

	/* CRLF line ends and log lines between the rows. */
	{
		lm_buf b = {0};

		for (const char *p = good; *p; p++) {
			if (*p == '\n')
				lm_buf_add(&b, "\r\nllama_perf_context_print: extra\r\n", 35);
			else
				lm_buf_add(&b, p, 1);
		}
		UNIT_OK(validate_parse(&s, b.data, b.len, err) == LM_OK && near(s.kld_mean, 0.000412) &&
		    near(s.same_top, 99.214), "CRLF and extra lines read the same (%s)", err);
		for (size_t i = 0; i < b.len; i++)
			if (b.data[i] == '\n')
				b.data[i] = '\r';
		UNIT_OK(validate_parse(&s, b.data, b.len, err) == LM_OK && near(s.ppl_ratio, 1.000231),
		    "old-Mac CR line ends too (%s)", err);
		lm_buf_free(&b);
	}
	t = edit("Mean    KLD", "  Mean\tKLD :  0.5");
	UNIT_OK(parse(&s, t, err) == LM_OK && near(s.kld_mean, 0.5), "blanks inside and around a label count as one");
	free(t);

	/* Too few positions: the rows, and no statistics at all. */
	{
		char rows[sizeof good + 1]; /* the rows, a newline and the NUL */
		const char *stop = strstr(good, "\n\n====== Perplexity");

		snprintf(rows, sizeof rows, "%.*s\n", (int)(stop - good), good);
		UNIT_OK(parse(&s, rows, err) == LM_EINPUT, "rows without a statistics block are refused");
		UNIT_HAS(err, "raise --chunks", "... saying to raise --chunks");
		UNIT_OK(parse(&s, "", err) == LM_EINPUT, "empty output is refused");
		UNIT_OK(validate_parse(&s, NULL, 0, err) == LM_EINPUT, "no output is refused");
	}

	/* A block missing one of the four figures. */
	{
		static const char *const need[] = {"Mean PPL(Q)/PPL(base)", "Mean    KLD", "99.9%   KLD", "Same top p"};
		static const char *const named[] = {"Mean PPL(Q)/PPL(base)", "Mean KLD", "99.9% KLD", "Same top p"};

		for (int i = 0; i < 4; i++) {
			t = edit(need[i], NULL);
			UNIT_OK(parse(&s, t, err) == LM_EINPUT, "a block without %s is refused", named[i]);
			UNIT_HAS(err, named[i], "... naming it");
			free(t);
		}
	}

	/* Hostile values. */
	{
		static const struct {
			const char *line, *why;
		} bad[] = {
			{"Mean    KLD:        nan \xc2\xb1 nan", "nan"},
			{"Mean    KLD:        inf \xc2\xb1 0", "inf"},
			{"Mean    KLD:  -5.000000 \xc2\xb1 0", "a negative KLD"},
			{"Mean    KLD:", "nothing"},
			{"Mean    KLD:  0x1p-3", "hexadecimal"},
			{"Mean    KLD:  1e999", "an overflow"},
			{"Mean    KLD:  0.0001.5", "two points"},
			{"Same top p: 100.5 \xc2\xb1 0.1 %", "a percentage over 100"},
			{"Same top p: -1 \xc2\xb1 0.1 %", "a negative percentage"},
			{"Mean PPL(Q)/PPL(base)         :   0.000000 \xc2\xb1 0", "a zero ratio"},
		};

		for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
			char from[16];

			snprintf(from, sizeof from, "%.10s", bad[i].line);
			t = edit(strncmp(from, "Mean    KL", 10) == 0 ? "Mean    KLD" : strncmp(from, "Same top p", 10) == 0
			    ? "Same top p" : "Mean PPL(Q)/PPL(base)", bad[i].line);
			UNIT_OK(t && parse(&s, t, err) == LM_EINPUT, "%s is refused (%s)", bad[i].why, err);
			free(t);
		}
	}
	{
		size_t n = strlen(good);
		char *two = malloc(2 * n + 1);

		sprintf(two, "%s%s", good, good);
		UNIT_OK(parse(&s, two, err) == LM_EINPUT, "the statistics printed twice are refused");
		UNIT_HAS(err, "twice", "... saying so");
		free(two);
	}
	{
		/* A line over 4096 bytes is skipped, whatever it holds: the figure must come from a real line. */
		lm_buf b = {0};

		lm_buf_addf(&b, "Mean    KLD: 0.000001");
		for (int i = 0; i < 5000; i++)
			lm_buf_add(&b, " ", 1);
		lm_buf_addf(&b, "\n%s", good);
		UNIT_OK(validate_parse(&s, b.data, b.len, err) == LM_OK && near(s.kld_mean, 0.000412),
		    "a line over 4096 bytes is skipped, not read (%s)", err);
		lm_buf_free(&b);
	}
	{
		/* A NUL inside the text ends that line only. */
		char nul[sizeof good + 32];
		size_t n = (size_t)snprintf(nul, sizeof nul, "Mean    KLD: 7%c\n", 'X');

		nul[n - 3] = '\0';
		memcpy(nul + n, good, sizeof good);
		UNIT_OK(validate_parse(&s, nul, n + sizeof good - 1, err) == LM_EINPUT, "a NUL does not hide a second "
		    "Mean KLD line");
	}

	/* The verdict. */
	reasons = cJSON_CreateArray();
	s = (validate_stats){9.5, 9.4, 1.02, 0.02, 0.3, 0.5, 96.0};
	UNIT_OK(validate_verdict(reasons, &s, &th) == 0 && cJSON_GetArraySize(reasons) == 3,
	    "mean KLD 0.02, 96%% same top and a ratio of 1.02 fail three ways");
	UNIT_HAS(cJSON_GetArrayItem(reasons, 0)->valuestring, "mean KLD 0.020000 is above 0.01", "... the KLD named");
	UNIT_HAS(cJSON_GetArrayItem(reasons, 1)->valuestring, "96.000% is below 97%", "... the top token named");
	UNIT_HAS(cJSON_GetArrayItem(reasons, 2)->valuestring, "1.020000 is not within 0.01 of 1", "... the ratio named");
	cJSON_Delete(reasons);
	s = (validate_stats){9.5, 9.5, 1.01, 0.01, 0.3, 0.5, 97.0};
	UNIT_OK(validate_verdict(NULL, &s, &th) == 1, "the thresholds themselves pass");
	s = (validate_stats){9.5, 9.5, 0.99, 0.0, 0.3, 0.5, 97.0};
	UNIT_OK(validate_verdict(NULL, &s, &th) == 1, "a ratio 0.01 below 1 passes too");
	s = (validate_stats){9.5, 9.5, 1.0, NAN, 0.3, 0.5, 100.0};
	UNIT_OK(validate_verdict(NULL, &s, &th) == 0, "an unknown figure never passes");

	/* The build line. */
	validate_parse_build(build, "x\r\nbuild: 6325 (ee3d1b54c) with cc\r\nmore\n", 39);
	UNIT_OK(strcmp(build, "6325 (ee3d1b54c) with cc") == 0, "the build line without its CR (%s)", build);
	validate_parse_build(build, "build: 1 \033]0;x\007\n", 17);
	UNIT_OK(strcmp(build, "1 ?]0;x?") == 0, "control characters in it become '?' (%s)", build);
	validate_parse_build(build, "no build here\n", 14);
	UNIT_OK(build[0] == '\0', "no build line is empty");

	/* llama-perplexity's own errors, after which it exits 0 (tools/perplexity/perplexity.cpp's
	 * LOG_ERR lines, as the real tool prints them). */
	{
		static const char few[] =
		    "perplexity: saving all logits to /tmp/x/base.kld\n"
		    "perplexity: tokenizing the input ..\n"
		    "perplexity: tokenization took 1.234 ms\n"
		    "perplexity: you need at least 1024 tokens to evaluate perplexity with a context of 512\r\n"
		    "perplexity: the data file you provided tokenizes to only 750 tokens\n"
		    "llama_perf_context_print:        load time =     100.00 ms\n";
		char e[401];
		lm_buf big = {0};
#define PERR(lit) validate_parse_errors(e, lit, sizeof lit - 1)

		UNIT_OK(validate_parse_errors(e, few, sizeof few - 1) == 1 && strcmp(e, "perplexity: you need at least 1024 "
		    "tokens to evaluate perplexity with a context of 512; perplexity: the data file you provided tokenizes "
		    "to only 750 tokens") == 0, "too few tokens: both lines, CR dropped, the log's lines skipped (%s)", e);
		UNIT_OK(PERR("kl_divergence: failed to open /tmp/x/base.kld\n") == 1 &&
		    strcmp(e, "kl_divergence: failed to open /tmp/x/base.kld") == 0, "kl_divergence: failed to open");
		UNIT_OK(PERR("kl_divergence: b does not look like a file containing log-probabilities\n") == 1,
		    "... not a logits file");
		UNIT_OK(PERR("kl_divergence: failed reading n_vocab, n_chunk from b\n") == 1,
		    "... a base file with a header alone");
		UNIT_OK(PERR("perplexity: failed to open b for writing\n") == 1,
		    "perplexity: failed to open BASE for writing");
		UNIT_OK(PERR("x\nkl_divergence : failed to eval\n") == 2 &&
		    strcmp(e, "kl_divergence : failed to eval") == 0, "\"kl_divergence : failed to eval\": the evaluation's (2)");
		UNIT_OK(PERR("perplexity : failed to decode\n") == 2, "... \"failed to decode\" too");
		UNIT_OK(PERR("perplexity: calculating perplexity over 8 chunks, n_ctx=512\n"
		    "kl_divergence: 0.25 seconds per pass - ETA 0.03 minutes\nperplexityX: you need at least 2 tokens\n"
		    "main: error: you need at least 2 tokens\n") == 0 && e[0] == '\0',
		    "its log lines, another function's and another prefix are not errors");
		UNIT_OK(PERR("kl_divergence: failed to open \033]0;x\007\n") == 1 &&
		    strcmp(e, "kl_divergence: failed to open ?]0;x?") == 0, "control characters become '?' (%s)", e);
		for (int i = 0; i < 100; i++)
			lm_buf_addf(&big, "perplexity: failed to open /a/very/long/path/to/some/base/file.kld for writing\n");
		UNIT_OK(validate_parse_errors(e, big.data, big.len) == 1 && strlen(e) == 400, "many: at most 400 bytes");
		lm_buf_free(&big);
		UNIT_OK(validate_parse_errors(e, NULL, 0) == 0, "no stderr: none");
#undef PERR
	}

	/* A text too short for 2 x context tokens, refused before anything runs. */
	{
		char path[] = "/tmp/lm-unit-text.XXXXXX";
		int fd = mkstemp(path);
		char buf[1100];

		memset(buf, 'a', sizeof buf);
		UNIT_OK(fd >= 0 && write(fd, buf, 1021) == 1021, "a text of 1021 bytes");
		UNIT_OK(validate_text_check(path, 512, err) == LM_EINPUT, "... is refused for context 512 (1024 tokens)");
		UNIT_HAS(err, "has 1021 bytes: llama-perplexity needs at least 2 x context = 1024 tokens", "... saying why");
		UNIT_OK(write(fd, buf, 1) == 1 && validate_text_check(path, 512, err) == LM_OK,
		    "1022 bytes may hold 1024 tokens (a BOS, a leading space): left to llama-perplexity");
		UNIT_OK(validate_text_check(path, 128, err) == LM_OK, "... and are enough bytes for context 128");
		if (fd >= 0)
			close(fd);
		unlink(path);
		UNIT_OK(validate_text_check(path, 512, err) == LM_EINPUT, "a missing text is refused");
	}

	/* The workload's fields. */
	{
		cJSON *w = cJSON_Parse("{\"requireValidation\":true,\"validation\":{\"maxMeanKld\":0.005,\"chunks\":4,"
		    "\"text\":\"manifests/texts/x.txt\"}}");
		validate_workload vw;

		validate_workload_read(&vw, w);
		UNIT_OK(vw.required && near(vw.th.max_mean_kld, 0.005) && vw.th.chunks == 4 && vw.th.context == 512 &&
		    near(vw.th.min_same_top, 97) && strcmp(vw.text, "manifests/texts/x.txt") == 0,
		    "the workload's fields, defaults for the rest");
		cJSON_Delete(w);
		w = cJSON_Parse("{}");
		validate_workload_read(&vw, w);
		UNIT_OK(!vw.required && vw.text == NULL && near(vw.th.max_ppl_dev, 0.01) && vw.th.chunks == 8,
		    "no fields: not required, every default");
		cJSON_Delete(w);
	}

	/* A validate record is a ledger record; the gate reads the last one. */
	{
		char dir[] = "/tmp/lm-unit-validate.XXXXXX", why[160];
		cJSON *key = ledger_key("img", NULL, "26.5.2", "25F84", "VirtualMac2,1", "chip", "25F84");
		cJSON *rec = cJSON_Parse("{\"kind\":\"validate\",\"vm\":\"tahoe-1\",\"verdict\":\"pass\",\"reasons\":[],"
		    "\"payloadSha256\":\"0123\"}");

		UNIT_OK(mkdtemp(dir) != NULL, "a scratch state directory");
		UNIT_OK(validate_check(dir, key, NULL, err) == LM_EREFUSED, "no record: refused");
		UNIT_HAS(err, "no validate record", "... saying so");
		UNIT_OK(ledger_append(dir, key, rec, err) == LM_OK, "a passing validate record is written (%s)", err);
		UNIT_OK(validate_check(dir, key, NULL, err) == LM_OK, "... and lets the gate through");
		cJSON_ReplaceItemInObject(rec, "verdict", cJSON_CreateString("fail"));
		cJSON_AddItemToArray(cJSON_GetObjectItem(rec, "reasons"), cJSON_CreateString("mean KLD 1.8 is above 0.01"));
		UNIT_OK(ledger_append(dir, key, rec, err) == LM_OK, "a failing one after it");
		UNIT_OK(validate_check(dir, key, NULL, err) == LM_EREFUSED, "... refuses: the last one counts");
		UNIT_HAS(err, "mean KLD 1.8", "... naming its reason");
		cJSON_ReplaceItemInObject(rec, "verdict", cJSON_CreateString("maybe"));
		UNIT_OK(ledger_record_problem(rec, why) != NULL, "a validate record's verdict is pass or fail");
		{
			char cmd[64];

			snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
			UNIT_OK(system(cmd) == 0, "scratch removed");
		}
		cJSON_Delete(rec);
		cJSON_Delete(key);
	}
	UNIT_DONE();
}
