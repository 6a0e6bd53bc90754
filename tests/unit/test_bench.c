/* bench: llama-bench JSON and stderr of the published TinyLlama evidence, hostile variants,
 * the published rounding, and bench records through the ledger. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/bench.h"
#include "ops/bench_vm.h"
#include "core/ledger.h"
#include "unit.h"
#include "core/util.h"

#define FIX LM_DATADIR "/tests/fixtures/llama-bench/"
#define TINY FIX "tinyllama-m1-ultra/"

static char dir[] = "/tmp/lm-unit-bench.XXXXXX";

static int
near(double a, double b)
{
	return fabs(a - b) < 1e-9;
}

static const bench_test *
test_named(const bench_arm *a, const char *name)
{
	for (size_t i = 0; i < a->ntests; i++)
		if (strcmp(a->tests[i].name, name) == 0)
			return &a->tests[i];
	return NULL;
}

/* bench_load of a hostile fixture must fail with LM_EINPUT and a message holding needle. */
static void
refused(const char *file, int min_samples, const char *needle, const char *what)
{
	char err[LM_ERRLEN] = "", path[512];
	bench_arm a;
	int rc;

	snprintf(path, sizeof path, FIX "hostile/%s", file);
	rc = bench_load(&a, path, min_samples, err);
	UNIT_OK(rc == LM_EINPUT && a.tests == NULL, "%s is refused (rc %d)", what, rc);
	UNIT_HAS(err, needle, "... saying so");
	UNIT_HAS(err, file, "... naming the file");
	bench_arm_free(&a);
}

static int
pj(bench_arm *a, const char *text, const char *name, int min_samples, char *err)
{
	return bench_parse_json(a, text, strlen(text), name, min_samples, err);
}

/* llama-bench JSON of n pp rows and n tg rows (pp1..ppN, tg1..tgN), samples scaled by f; with
 * repeat > 0 its last row is a second tg<repeat>. Caller frees with lm_buf_free. */
static void
many_rows(lm_buf *b, int n, double f, int repeat)
{
	lm_buf_add(b, "[", 1);
	for (int i = 1; i <= n; i++)
		for (int tg = 0; tg < 2; tg++)
			lm_buf_addf(b, "%s{\"gpu_info\":\"Apple Paravirtual device\",\"model_filename\":\"m.gguf\","
			    "\"model_type\":\"llama 1B\",\"n_prompt\":%d,\"n_gen\":%d,\"samples_ts\":[%g,%g,%g]}",
			    i > 1 || tg ? "," : "", tg ? 0 : i, tg ? (repeat && i == n ? repeat : i) : 0, 10 * f, 11 * f, 12 * f);
	lm_buf_add(b, "]", 1);
}

static int
count_bench(const cJSON *doc, const char *path, void *ctx)
{
	const cJSON *r;
	char err[LM_ERRLEN];

	(void)path;
	cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(doc, "records"))
		if (strcmp(cJSON_GetObjectItemCaseSensitive(r, "kind")->valuestring, "bench") == 0 &&
		    bench_table_check(cJSON_GetObjectItemCaseSensitive(r, "bench"), err) == LM_OK)
			(*(int *)ctx)++;
	return 0;
}

int
main(void)
{
	char err[LM_ERRLEN] = "", s[64], *csv = NULL, *label;
	bench_arm stock, shim, host, x;
	const bench_test *t;
	bench_metal m;
	cJSON *table = NULL, *rec, *k1, *k2, *doc = NULL;
	lm_buf out = {0};
	size_t len;
	double med, lo, hi, v5[] = {5, 1, 4, 2, 3}, v4[] = {4, 1, 3, 2};
	int rc, n = 0;

	/* The published rounding. */
	struct { double v; const char *want; } fmts[] = {
		{4871.99, "4871.99"}, {431.8625, "431.8625"}, {4786.7, "4786.7"}, {4786.0, "4786"},
		{11.083851920460795, "11.0839"}, {98.24945, "98.2494"}, {72.05884, "72.0588"}, {0.00001, "0"},
		{-0.00001, "0"}, {100, "100"}, {286.70549999999997, "286.7055"}, {1.00539, "1.0054"},
	};
	for (size_t i = 0; i < sizeof fmts / sizeof fmts[0]; i++) {
		bench_fmt(s, sizeof s, fmts[i].v);
		UNIT_OK(strcmp(s, fmts[i].want) == 0, "bench_fmt(%.10g) is %s (got %s)", fmts[i].v, fmts[i].want, s);
	}
	bench_fmt(s, sizeof s, NAN);
	UNIT_OK(s[0] == '\0', "bench_fmt(NAN) is empty");

	bench_stats(v5, 5, &med, &lo, &hi);
	UNIT_OK(med == 3 && lo == 1 && hi == 5 && v5[0] == 5, "median of an odd count is the middle, input unchanged");
	bench_stats(v4, 4, &med, &lo, &hi);
	UNIT_OK(med == 2.5 && lo == 1 && hi == 4, "median of an even count is the mean of the middle two");

	/* The published evidence. */
	rc = bench_load(&stock, TINY "tiny-stock-minimal.json", BENCH_MIN_SAMPLES, err);
	rc |= bench_load(&shim, TINY "tiny-safe-shim-10x-final.json", BENCH_MIN_SAMPLES, err);
	rc |= bench_load(&host, TINY "tiny-host-minimal.json", BENCH_MIN_SAMPLES, err);
	UNIT_OK(rc == LM_OK, "the three TinyLlama runs load %s", rc ? err : "");
	if (rc != LM_OK)
		UNIT_DONE();
	UNIT_OK(stock.ntests == 2 && strcmp(stock.tests[0].name, "pp512") == 0 && strcmp(stock.tests[1].name, "tg128") == 0,
	    "stock has pp512 and tg128");
	t = test_named(&stock, "pp512");
	UNIT_OK(t && near(t->median, 431.8625) && t->min == 427.898 && t->max == 433.785 && t->nsamples == 10,
	    "stock pp512: median 431.8625 of samples_ts (not avg_ts 431.32), min 427.898, max 433.785");
	t = test_named(&stock, "tg128");
	UNIT_OK(t && near(t->median, 12.6307) && t->min == 8.63801, "stock tg128: median 12.6307, min 8.63801");
	t = test_named(&host, "pp512");
	UNIT_OK(t && near(t->median, 4871.99), "host pp512: median 4871.99");
	UNIT_OK(strcmp(stock.gpu_info, "Apple Paravirtual device") == 0 && strcmp(stock.build_commit, "ee3d1b54c") == 0 &&
	    stock.build_number == 10167 && stock.n_threads == 8 && stock.n_gpu_layers == -1 &&
	    strcmp(stock.model_type, "llama 1B Q4_K - Medium") == 0, "the kept fields are read");
	UNIT_OK(stock.stderr_path && strstr(stock.stderr_path, "tiny-stock-minimal.stderr"), "the .stderr beside it is read");
	UNIT_OK(stock.metal.seen && stock.metal.apple_family == 1005 && stock.metal.simdgroup_mm == BENCH_NO &&
	    stock.metal.simdgroup_reduction == BENCH_NO && stock.metal.has_bfloat == BENCH_NO &&
	    stock.metal.residency_sets == BENCH_YES && strcmp(stock.metal.gpu_name, "Apple Paravirtual device") == 0,
	    "stock stderr: Apple Paravirtual device, Apple5, no simdgroup matrix mul., no bfloat, residency sets");
	UNIT_OK(shim.metal.apple_family == 1009 && shim.metal.simdgroup_mm == BENCH_YES &&
	    shim.metal.simdgroup_reduction == BENCH_YES && shim.metal.has_bfloat == BENCH_YES,
	    "shim stderr: Apple9 with simdgroup reduction, matrix mul. and bfloat");
	UNIT_OK(host.metal.apple_family == 1007 && strcmp(host.metal.gpu_name, "Apple M1 Ultra") == 0,
	    "host stderr: Apple M1 Ultra, Apple7 (Metal4 and Common3 lines are not Apple families)");
	label = bench_label(&stock);
	UNIT_OK(label && strcmp(label, "tinyllama-1.1b-chat-v1.0.Q4_K_M.gguf (llama 1B Q4_K - Medium)") == 0,
	    "the default label is the model file and model_type (%s)", label ? label : "NULL");
	free(label);

	/* The table reproduces the published results.csv rows byte for byte. */
	rc = bench_table(&table, &stock, &shim, &host, "TinyLlama 1.1B Q4_K_M (llama.cpp)", err);
	UNIT_OK(rc == LM_OK && table, "the table is built %s", rc ? err : "");
	rc = bench_render(&out, table, BENCH_CSV, NULL, err);
	lm_read_file(&csv, &len, TINY "results.csv", 1 << 16, err);
	if (csv) {
		char *l2 = strchr(csv, '\n') + 1, *l4 = strchr(strchr(l2, '\n') + 1, '\n') + 1;

		UNIT_OK(strncmp(csv, BENCH_CSV_HEADER "\n", strlen(BENCH_CSV_HEADER) + 1) == 0,
		    "BENCH_CSV_HEADER is the published header");
		*l4 = '\0';
		UNIT_OK(rc == LM_OK && out.data && strcmp(out.data, l2) == 0, "CSV rows are the published TinyLlama rows");
		if (out.data && strcmp(out.data, l2) != 0)
			printf("#   got:\n%s#   want:\n%s", out.data, l2);
	} else
		UNIT_OK(0, "results.csv is readable: %s", err);
	free(csv);
	lm_buf_free(&out);
	{
		const cJSON *pp = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(table, "tests"), 0);

		UNIT_OK(near(cJSON_GetObjectItemCaseSensitive(pp, "guest_ratio")->valuedouble, 4786.7 / 431.8625) &&
		    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(table, "shim_effective")),
		    "pp512 guest_ratio is shim/stock, the shim is effective");
	}
	rc = bench_render(&out, table, BENCH_TEXT, NULL, err);
	UNIT_OK(rc == LM_OK && strstr(out.data, "shim/stock 11.08x   shim/host 98.25%") &&
	    strstr(out.data, "shim/stock 16.36x   shim/host 72.06%") && strstr(out.data, "Apple5 (1005)") &&
	    strstr(out.data, "shim effective"), "the terminal table shows the ratios and the families");
	lm_buf_free(&out);
	rc = bench_render(&out, table, BENCH_MARKDOWN, NULL, err);
	UNIT_OK(rc == LM_OK && out.data && strcmp(out.data, "| TinyLlama 1.1B Q4_K_M (llama.cpp) | pp512 | 4871.99 | 431.86 | "
	    "4786.70 | 11.08x | 98.25% |\n| TinyLlama 1.1B Q4_K_M (llama.cpp) | tg128 | 286.71 | 12.63 | 206.60 | 16.36x | "
	    "72.06% |\n") == 0, "the markdown rows are the evidence table's");
	lm_buf_free(&out);

	/* Bench records through the ledger: two image versions, read back by ledger_each. */
	if (mkdtemp(dir) == NULL)
		return 2;
	k1 = ledger_key("ghcr.io/trycua/macos-tahoe-cua:latest", NULL, "26.5.2", "25F84", "VirtualMac2,1", "Apple M1 Ultra",
	    "25G76");
	k2 = ledger_key("ghcr.io/trycua/macos-tahoe-cua:latest", NULL, "26.6", "25G5", "VirtualMac2,1", "Apple M1 Ultra",
	    "25G76");
	rec = bench_record(table, "tahoe-1");
	UNIT_OK(rec && strcmp(cJSON_GetObjectItemCaseSensitive(rec, "kind")->valuestring, "bench") == 0 &&
	    strcmp(cJSON_GetObjectItemCaseSensitive(rec, "verdict")->valuestring, "effective") == 0,
	    "bench_record is kind bench, verdict effective");
	rc = ledger_append(dir, k1, rec, err);
	rc |= ledger_append(dir, k2, rec, err);
	UNIT_OK(rc == LM_OK, "two bench records are appended %s", rc ? err : "");
	rc = ledger_each(dir, count_bench, &n, err);
	UNIT_OK(rc == LM_OK && n == 2, "ledger_each finds both, each a valid table (%d)", n);
	ledger_load(&doc, dir, k1, err);
	UNIT_OK(doc && cJSON_Compare(cJSON_GetObjectItemCaseSensitive(ledger_last(doc, "bench"), "bench"), table, 1),
	    "the record holds the table unchanged");
	cJSON_Delete(doc);
	cJSON_Delete(rec);
	cJSON_Delete(k1);
	cJSON_Delete(k2);
	cJSON_Delete(table);
	table = NULL;
	{
		char cmd[sizeof dir + 16];

		snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
		if (system(cmd) != 0)
			return 2;
	}

	/* Arms that do not match. */
	rc = bench_load(&x, FIX "hostile/shim-stock-path.json", BENCH_MIN_SAMPLES, err);
	UNIT_OK(rc == LM_OK && x.metal.simdgroup_mm == BENCH_NO, "a shim arm on the stock path loads");
	rc = bench_table(&table, &stock, &x, NULL, NULL, err);
	UNIT_OK(rc == LM_OK && cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(table, "shim_effective")),
	    "... and is shim_effective false");
	rc = bench_render(&out, table, BENCH_CSV, NULL, err);
	UNIT_OK(rc == LM_OK && out.data && strstr(out.data, ",431.8625,431.8625,,\n"),
	    "... with no guest_ratio in the CSV (not a speedup)");
	lm_buf_free(&out);
	rc = bench_render(&out, table, BENCH_TEXT, NULL, err);
	UNIT_OK(rc == LM_OK && strstr(out.data, "shim not effective") && !strstr(out.data, "1.00x"),
	    "... and 'shim not effective' in the table");
	lm_buf_free(&out);
	rec = bench_record(table, NULL);
	UNIT_OK(rec && strcmp(cJSON_GetObjectItemCaseSensitive(rec, "verdict")->valuestring, "not-effective") == 0,
	    "... its record's verdict is not-effective");
	cJSON_Delete(rec);
	cJSON_Delete(table);
	table = NULL;
	free(x.model_type);
	x.model_type = strdup("llama 8B Q8_0");
	rc = bench_table(&table, &stock, &x, NULL, NULL, err);
	UNIT_OK(rc == LM_EINPUT && table == NULL, "runs of different models are refused");
	UNIT_HAS(err, "different models", "... saying so");
	bench_arm_free(&x);
	rc = pj(&x, "[{\"n_prompt\":512,\"n_gen\":0,\"gpu_info\":\"g\",\"samples_ts\":[1,2,3]},"
	    "{\"n_prompt\":0,\"n_gen\":64,\"gpu_info\":\"g\",\"samples_ts\":[1,2,3]}]", "small.json", 3, err);
	UNIT_OK(rc == LM_OK && x.ntests == 2 && strcmp(x.tests[1].name, "tg64") == 0, "a minimal file parses %s",
	    rc ? err : "");
	rc = bench_table(&table, &stock, &x, NULL, NULL, err);
	UNIT_OK(rc == LM_EINPUT, "a shim without the stock's tg128 is refused");
	bench_arm_free(&x);
	rc = pj(&x, "[{\"n_prompt\":512,\"n_gen\":0,\"gpu_info\":\"g\",\"samples_ts\":[1,2,3]},"
	    "{\"n_prompt\":512,\"n_gen\":0,\"gpu_info\":\"g\",\"samples_ts\":[1,2,3]}]", "dup.json", 3, err);
	UNIT_OK(rc == LM_EINPUT, "a repeated test is refused");
	UNIT_HAS(err, "dup.json: row 2: a second pp512", "... naming file and row");
	rc = pj(&x, "{\"n_prompt\":512}", "obj.json", 3, err);
	UNIT_HAS(err, "obj.json: not a JSON array", "an object instead of an array is refused");
	rc = pj(&x, "", "empty.json", 3, err);
	UNIT_OK(rc == LM_EINPUT, "an empty file is refused");
	rc = pj(&x, "[{\"n_prompt\":512,\"n_gen\":0,\"gpu_info\":\"g\",\"samples_ts\":[1,2,1e999]}]", "inf.json",
	    3, err);
	UNIT_HAS(err, "inf.json: row 1 (pp512): samples_ts[2] is inf", "an infinite sample is refused");
	bench_arm_free(&x);

	/* Hostile files. */
	refused("truncated.json", 3, "truncated", "truncated JSON");
	refused("trailing-garbage.json", 3, "not valid JSON at line 92", "JSON with trailing garbage");
	refused("nan.json", 3, "line 44: nan is not a number", "a bare nan sample");
	refused("nan-string.json", 3, "row 1 (pp512): samples_ts[1] is not a number", "a \"NaN\" string sample");
	refused("negative.json", 3, "row 2 (tg128): samples_ts[1] is -12.6872", "a negative sample");
	refused("empty-samples.json", 3, "row 2 (tg128): samples_ts is empty", "an empty samples_ts");
	refused("pp-and-tg.json", 3, "row 2 has both n_prompt 512 and n_gen 128", "a row with n_prompt and n_gen");
	refused("few-samples.json", 3, "row 1 (pp512): 2 samples in samples_ts, fewer than the 3", "too few samples");
	refused("few-samples.json", 10, "fewer than the 10", "fewer than min_samples 10");
	refused("no-metal.json", 3, "gpu_info is empty: llama-bench saw no Metal device", "no Metal gpu_info");
	refused("no-tg.json", 3, "no tg test", "a file without a tg row");
	rc = bench_load(&x, FIX "hostile/few-samples.json", 2, err);
	UNIT_OK(rc == LM_OK && x.tests[0].nsamples == 2 && near(x.tests[0].median, (433.539 + 432.314) / 2),
	    "min_samples 2 accepts the two samples");
	bench_arm_free(&x);
	rc = bench_load(&x, FIX "hostile/extra-field.json", 3, err);
	UNIT_OK(rc == LM_OK && near(test_named(&x, "pp512")->median, 4786.7), "unknown extra fields are accepted %s",
	    rc ? err : "");
	bench_arm_free(&x);
	rc = bench_load(&x, FIX "hostile/missing.json", 3, err);
	UNIT_OK(rc == LM_EINPUT, "a missing file is an input error");
	UNIT_HAS(err, "missing.json", "... naming it");

	/* Stderr of a newer llama.cpp: extra lines, families out of order, CRLF. */
	rc = bench_load(&x, FIX "hostile/shim-newer.json", 3, err);
	UNIT_OK(rc == LM_OK && x.metal.apple_family == 1009 && x.metal.simdgroup_mm == BENCH_YES &&
	    x.metal.simdgroup_reduction == BENCH_YES && x.metal.residency_sets == BENCH_NO &&
	    strcmp(x.metal.gpu_name, "Apple Paravirtual device") == 0,
	    "newer stderr: the highest Apple family (Apple9 among 7, 9, 8), CRLF lines, extra lines skipped");
	bench_arm_free(&x);
	/* Builds before the Metal backend's device split (about b6500) print ggml_metal_init lines,
	 * the GPU name alone; here as llama.cpp's own CI logs have them (an M4, the log's timestamps
	 * and levels before each line), then a paravirtual guest's in that format. */
	bench_parse_stderr(&m,
	    "0.00.036.387 I ggml_metal_init: allocating\n"
	    "0.00.036.392 I ggml_metal_init: found device: Apple M4\n"
	    "0.00.036.397 I ggml_metal_init: picking default device: Apple M4\n"
	    "0.00.037.169 I ggml_metal_init: using embedded metal library\n"
	    "0.00.041.279 I ggml_metal_init: GPU name:   Apple M4\n"
	    "0.00.041.282 I ggml_metal_init: GPU family: MTLGPUFamilyApple9  (1009)\n"
	    "0.00.041.283 I ggml_metal_init: GPU family: MTLGPUFamilyCommon3 (3003)\n"
	    "0.00.041.283 I ggml_metal_init: GPU family: MTLGPUFamilyMetal3  (5001)\n"
	    "0.00.041.283 I ggml_metal_init: simdgroup reduction   = true\n"
	    "0.00.041.283 I ggml_metal_init: simdgroup matrix mul. = true\n"
	    "0.00.041.284 I ggml_metal_init: has residency sets    = true\n"
	    "0.00.041.284 I ggml_metal_init: has bfloat            = true\n"
	    "0.00.041.284 I ggml_metal_init: use bfloat            = true\n"
	    "0.00.041.285 I ggml_metal_init: hasUnifiedMemory      = true\n"
	    "0.00.041.285 I ggml_metal_init: recommendedMaxWorkingSetSize  = 11453.25 MB\n"
	    "ggml_metal_init: loaded kernel_add                                    0x101404a50 | th_max = 1024 | th_width =   32\n");
	UNIT_OK(m.seen && m.tag && strcmp(m.tag, "ggml_metal_init") == 0 && strcmp(m.gpu_name, "Apple M4") == 0 &&
	    m.apple_family == 1009 && m.simdgroup_reduction == BENCH_YES && m.simdgroup_mm == BENCH_YES &&
	    m.has_bfloat == BENCH_YES && m.residency_sets == BENCH_UNKNOWN,
	    "an older build's ggml_metal_init lines: the GPU's name alone, Apple9, simdgroup matrix mul. (%s, %s)",
	    m.tag ? m.tag : "no tag", m.gpu_name);
	bench_parse_stderr(&m,
	    "ggml_metal_init: allocating\n"
	    "ggml_metal_init: found device: Apple Paravirtual device\n"
	    "ggml_metal_init: picking default device: Apple Paravirtual device\n"
	    "ggml_metal_load_library: using embedded metal library\n"
	    "ggml_metal_init: GPU name:   Apple Paravirtual device\n"
	    "ggml_metal_init: GPU family: MTLGPUFamilyApple5  (1005)\n"
	    "ggml_metal_init: GPU family: MTLGPUFamilyCommon3 (3003)\n"
	    "ggml_metal_init: simdgroup reduction   = false\n"
	    "ggml_metal_init: simdgroup matrix mul. = false\n");
	UNIT_OK(m.seen && strcmp(m.gpu_name, "Apple Paravirtual device") == 0 && m.apple_family == 1005 &&
	    m.simdgroup_reduction == BENCH_NO && m.simdgroup_mm == BENCH_NO,
	    "... a stock paravirtual device in that format: Apple5, no simdgroup matrix mul.");
	bench_parse_stderr(&m, "ggml_metal_device_init: GPU name:   MTL0 (Apple M1 Ultra)\n"
	    "ggml_metal_device_init: simdgroup matrix mul. = true\n");
	UNIT_OK(m.seen && strcmp(m.tag, "ggml_metal_device_init") == 0 && strcmp(m.gpu_name, "Apple M1 Ultra") == 0 &&
	    m.simdgroup_mm == BENCH_YES, "the current format names ggml_metal_device_init, the name in MTL0's parentheses");
	bench_parse_stderr(&m, "xggml_metal_initx: simdgroup matrix mul. = true\nggml_metal_init simdgroup matrix mul. = "
	    "true\n");
	UNIT_OK(!m.seen && m.simdgroup_mm == BENCH_UNKNOWN, "only the function's name with its colon counts");
	bench_parse_stderr(&m, "llama_model_load: nothing about metal\n");
	UNIT_OK(!m.seen && m.apple_family == 0 && m.simdgroup_mm == BENCH_UNKNOWN && m.has_bfloat == BENCH_UNKNOWN,
	    "stderr without device lines leaves everything unknown");
	bench_parse_stderr(&m, "ggml_metal_device_init: simdgroup matrix mul. = false");
	UNIT_OK(m.seen && m.simdgroup_mm == BENCH_NO && m.simdgroup_reduction == BENCH_UNKNOWN,
	    "a last line without a newline is read; absent keys stay unknown");

	/* A table read back from somewhere else is checked. */
	table = cJSON_Parse("{\"format\":\"lume-metal-bench/1\",\"workload\":\"w\",\"tests\":[{\"test\":\"pp512\"}]}");
	UNIT_OK(bench_table_check(table, err) == LM_EINPUT, "a table without medians is refused");
	UNIT_OK(bench_render(&out, table, BENCH_CSV, NULL, err) == LM_EINPUT && out.len == 0, "... and not rendered");
	cJSON_Delete(table);

	/* 40000 rows (a repeat check compared each row with every earlier one, and the table looked
	 * each test up in a list: 13.5 s). A generous bound, the figure printed. */
	{
		lm_buf a = {0}, b = {0}, c = {0};
		bench_arm sa, sb;
		int64_t t0 = lm_now_ms();

		many_rows(&a, 20000, 1, 0);
		many_rows(&b, 20000, 2, 0);
		rc = bench_parse_json(&sa, a.data, a.len, "big-stock.json", 3, err);
		rc |= bench_parse_json(&sb, b.data, b.len, "big-shim.json", 3, err);
		if (rc == LM_OK)
			rc = bench_table(&table, &sa, &sb, NULL, NULL, err);
		t0 = lm_now_ms() - t0;
		UNIT_OK(rc == LM_OK && sa.ntests == 40000 && cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(table,
		    "tests")) == 40000 && t0 < 60000, "two arms of 40000 rows parse and compare in %lld ms (generous "
		    "bound 60 s) %s", (long long)t0, rc ? err : "");
		UNIT_OK(table && near(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(
		    table, "tests"), 39999), "guest_ratio")->valuedouble, 2), "... the last test's ratio is 2");
		cJSON_Delete(table);
		table = NULL;
		bench_arm_free(&sb);
		many_rows(&c, 20000, 2, 777);
		rc = bench_parse_json(&sb, c.data, c.len, "big-repeat.json", 3, err);
		UNIT_OK(rc == LM_EINPUT && sb.tests == NULL, "a repeat in row 40000 is refused");
		UNIT_HAS(err, "big-repeat.json: row 40000: a second tg777 test", "... naming the row and the test");
		bench_arm_free(&sa);
		bench_arm_free(&sb);
		lm_buf_free(&a);
		lm_buf_free(&b);
		lm_buf_free(&c);
	}
	rc = pj(&x, "[{\"gpu_info\":\"g\",\"n_prompt\":1,\"n_gen\":0,\"samples_ts\":[1,1,1]},"
	    "{\"gpu_info\":\"g\",\"n_prompt\":1,\"n_gen\":0,\"samples_ts\":[1,1,1]},"
	    "{\"gpu_info\":\"g\",\"n_prompt\":2,\"n_gen\":0,\"samples_ts\":[]}]", "rep.json", 1, err);
	UNIT_OK(rc == LM_EINPUT, "a repeat before a bad row");
	UNIT_HAS(err, "rep.json: row 2: a second pp1 test", "... is the error reported, as row by row");
	bench_arm_free(&x);

	/* The guest's hash step: three lines, each bounded and checked (a guest may print anything). */
	{
		const char *h1 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
		const char *h2 = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210";
		char good[512], a150[151], lsha[65], msha[65], *lb = (char *)"x";
		char *big = malloc(20000);
		const struct {
			const char *text;
			size_t len;
			const char *why;
		} bad[] = {
			{a150, 150, "150 bytes and no newline (was a SEGV)"},
			{"", 0, "nothing"},
			{"/usr/bin/llama-bench", 20, "a path without a newline"},
			{"\n", 1, "an empty first line"},
			{"/usr/bin/llama-bench\n", 21, "the path alone"},
			{"/usr/bin/llama-bench\n0123\n", 26, "a short hash"},
			{big, 20000, "a first line of 20000 bytes (was a heap-buffer-overflow read)"},
			{"/a\x01b\n", 5, "a control character in the path"},
			{"/a\0b\n", 5, "a NUL in the path"},
		};

		memset(a150, 'A', 150);
		a150[150] = '\0';
		memset(big, 'B', 20000);
		for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
			lb = (char *)"x";
			rc = bench_parse_hashes(&lb, lsha, msha, bad[i].text, bad[i].len, err);
			UNIT_OK(rc == LM_EINPUT && lb == NULL && !*lsha && !*msha, "hash output refused: %s", bad[i].why);
		}
		snprintf(good, sizeof good, "/opt/llama/llama-bench\n%s\n%s\n", h1, h2);
		rc = bench_parse_hashes(&lb, lsha, msha, good, strlen(good), err);
		UNIT_OK(rc == LM_OK && lb && strcmp(lb, "/opt/llama/llama-bench") == 0 && strcmp(lsha, h1) == 0 &&
		    strcmp(msha, h2) == 0, "the path and both hashes are read %s", rc ? err : "");
		free(lb);
		rc = bench_parse_hashes(&lb, lsha, msha, good, strlen(good) - 1, err);
		UNIT_OK(rc == LM_EINPUT && lb == NULL, "... and refused without the last newline");
		snprintf(good, sizeof good, "/opt/llama/llama-bench\n%s\n%s\nextra\n", h1, h2);
		rc = bench_parse_hashes(&lb, lsha, msha, good, strlen(good), err);
		UNIT_OK(rc == LM_EINPUT && lb == NULL, "... or with a line after them");
		snprintf(good, sizeof good, "/opt/llama/llama-bench\n%s\n%.63sG\n", h1, h2);
		rc = bench_parse_hashes(&lb, lsha, msha, good, strlen(good), err);
		UNIT_OK(rc == LM_EINPUT && lb == NULL, "... or with a non-hex digit");
		UNIT_HAS(err, "shasum in the guest printed no SHA-256", "... saying what it wanted");
		free(big);
	}

	bench_arm_free(&stock);
	bench_arm_free(&shim);
	bench_arm_free(&host);
	bench_arm_free(NULL);
	UNIT_DONE();
}
