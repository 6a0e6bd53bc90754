/* bench_render: a bench table (bench.h) rendered: a terminal table with its arms, CSV rows, or
 * markdown rows under bench_markdown_header. The table is read and checked in bench.c. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/bench.h"
#include "core/bench_int.h"

static const char *
tri_name(bench_tri t)
{
	return t == BENCH_YES ? "true" : t == BENCH_NO ? "false" : "unknown";
}

/* A CSV field, quoted when it holds a comma, quote or newline. */
static int
csv_field(lm_buf *b, const char *v, int last)
{
	int rc = 0;

	if (strpbrk(v, ",\"\n\r") == NULL)
		rc = lm_buf_add(b, v, strlen(v));
	else {
		rc |= lm_buf_add(b, "\"", 1);
		for (; *v && rc == 0; v++)
			rc |= *v == '"' ? lm_buf_add(b, "\"\"", 2) : lm_buf_add(b, v, 1);
		rc |= lm_buf_add(b, "\"", 1);
	}
	return rc | lm_buf_add(b, last ? "\n" : ",", 1);
}

static int
csv_num(lm_buf *b, double v, int last)
{
	char s[64];

	if (bench_fmt(s, sizeof s, v) != 0)
		s[0] = '\0';
	return csv_field(b, s, last);
}

/* A markdown cell: | escaped. */
static int
md_cell(lm_buf *b, const char *v)
{
	int rc = lm_buf_add(b, "| ", 2);

	for (; *v && rc == 0; v++)
		rc |= *v == '|' ? lm_buf_add(b, "\\|", 2) : *v == '\n' ? lm_buf_add(b, " ", 1) : lm_buf_add(b, v, 1);
	return rc | lm_buf_add(b, " ", 1);
}

static void
fmt2(char *out, size_t len, double v, const char *suffix)
{
	if (isnan(v))
		snprintf(out, len, "%s", "");
	else
		snprintf(out, len, "%.2f%s", v, suffix);
}

int
bench_markdown_header(lm_buf *out, const char *lead_header)
{
	int rc = 0;

	if (lead_header)
		rc |= lm_buf_addf(out, "%s", lead_header);
	rc |= lm_buf_addf(out, "| workload | metric | bare-metal host | stock guest | shim guest | speedup | shim / host |\n");
	if (lead_header)
		for (const char *p = lead_header; *p; p++)
			if (*p == '|')
				rc |= lm_buf_addf(out, "| --- ");
	rc |= lm_buf_addf(out, "| --- | --- | ---: | ---: | ---: | ---: | ---: |\n");
	return rc ? LM_EFAIL : LM_OK;
}

static int
render_arm(lm_buf *b, const char *name, const cJSON *a)
{
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(a, "metal");
	const char *gpu = lm_jstr(a, "gpu_info"), *commit = lm_jstr(a, "build_commit");
	double build = lm_jnum(a, "build_number"), threads = lm_jnum(a, "n_threads"),
	    ngl = lm_jnum(a, "n_gpu_layers");
	int rc = 0;

	rc |= lm_buf_addf(b, "%-6s %s\n", name, lm_jstr(a, "path") ? lm_jstr(a, "path") : "");
	rc |= lm_buf_addf(b, "       gpu_info %s; llama.cpp %s", gpu ? gpu : "?", commit ? commit : "?");
	if (isfinite(build))
		rc |= lm_buf_addf(b, " (b%.0f)", build);
	if (isfinite(threads))
		rc |= lm_buf_addf(b, ", %.0f threads", threads);
	if (isfinite(ngl))
		rc |= lm_buf_addf(b, ", -ngl %.0f", ngl);
	rc |= lm_buf_addf(b, "\n");
	if (!cJSON_IsObject(m))
		return rc | lm_buf_addf(b, "       Metal: no stderr read\n");
	{
		const char *keys[] = {"simdgroup_reduction", "simdgroup_matrix_mul", "has_bfloat", "use_residency_sets"};
		const char *labels[] = {"simdgroup reduction", "simdgroup matrix mul.", "bfloat", "residency sets"};
		double fam = lm_jnum(m, "apple_family");

		rc |= lm_buf_addf(b, "       Metal (%s): %s", bench_base(lm_jstr(a, "stderr")),
		    lm_jstr(m, "gpu_name") ? lm_jstr(m, "gpu_name") : "GPU name not printed");
		if (isfinite(fam))
			rc |= lm_buf_addf(b, ", Apple%.0f (%.0f)", fam - 1000, fam);
		else
			rc |= lm_buf_addf(b, ", no Apple family printed");
		for (int i = 0; i < 4; i++) {
			const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, keys[i]);

			rc |= lm_buf_addf(b, ", %s %s", labels[i],
			    tri_name(cJSON_IsTrue(v) ? BENCH_YES : cJSON_IsFalse(v) ? BENCH_NO : BENCH_UNKNOWN));
		}
		rc |= lm_buf_addf(b, "\n");
	}
	return rc;
}

static int
render_text(lm_buf *b, const cJSON *t)
{
	const cJSON *tests = cJSON_GetObjectItemCaseSensitive(t, "tests"), *x,
	    *arms = cJSON_GetObjectItemCaseSensitive(t, "arms"),
	    *eff = cJSON_GetObjectItemCaseSensitive(t, "shim_effective");
	int rc = 0;

	rc |= lm_buf_addf(b, "%s: %s, medians of samples_ts\n\n", lm_jstr(t, "workload"),
	    lm_jstr(t, "unit") ? lm_jstr(t, "unit") : "tokens/s");
	rc |= lm_buf_addf(b, "%-12s %-6s %10s %10s %10s %4s\n", "test", "arm", "median", "min", "max", "n");
	cJSON_ArrayForEach(x, tests) {
		double ratio = lm_jnum(x, "guest_ratio"), pct = lm_jnum(x, "shim_to_host_percent");
		int first = 1;

		for (int a = 0; a < 3; a++) {
			const cJSON *f = cJSON_GetObjectItemCaseSensitive(x, bench_arm_names[a]);

			if (!cJSON_IsObject(f))
				continue;
			rc |= lm_buf_addf(b, "%-12s %-6s %10.2f %10.2f %10.2f %4.0f\n", first ? lm_jstr(x, "test") : "",
			    bench_arm_names[a], lm_jnum(f, "median"), lm_jnum(f, "min"), lm_jnum(f, "max"),
			    lm_jnum(f, "samples"));
			first = 0;
		}
		if (cJSON_IsFalse(eff))
			rc |= lm_buf_addf(b, "%-12s shim/stock: shim not effective", "");
		else
			rc |= lm_buf_addf(b, "%-12s shim/stock %.2fx", "", ratio);
		if (isfinite(pct))
			rc |= lm_buf_addf(b, "   shim/host %.2f%%", pct);
		rc |= lm_buf_addf(b, "\n");
	}
	rc |= lm_buf_addf(b, "\n");
	for (int a = 0; a < 3; a++) {
		const cJSON *o = cJSON_GetObjectItemCaseSensitive(arms, bench_arm_names[a]);

		if (cJSON_IsObject(o))
			rc |= render_arm(b, bench_arm_names[a], o);
	}
	if (cJSON_IsFalse(eff))
		rc |= lm_buf_addf(b, "\nshim not effective: the shim arm's stderr shows simdgroup matrix mul. = false "
		    "(llama.cpp took the stock path), so its figures are no speedup\n");
	else if (cJSON_IsTrue(eff))
		rc |= lm_buf_addf(b, "\nshim effective: the shim arm took the simdgroup matrix path\n");
	else
		rc |= lm_buf_addf(b, "\nshim effect unknown: no " BENCH_METAL_TAG " (or, before about b6500, "
		    BENCH_METAL_TAG_OLD ") lines for the shim arm\n");
	return rc;
}

int
bench_render(lm_buf *out, const cJSON *table, bench_form form, const char *lead, char *err)
{
	const cJSON *tests = cJSON_GetObjectItemCaseSensitive(table, "tests"), *x;
	const char *workload = lm_jstr(table, "workload"), *unit = lm_jstr(table, "unit");
	int rc, eff_false;

	if ((rc = bench_table_check(table, err)) != LM_OK)
		return rc;
	if (form == BENCH_TEXT)
		return render_text(out, table) ? lm_err(err, LM_EFAIL, "out of memory") : LM_OK;
	eff_false = cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(table, "shim_effective"));
	rc = 0;
	cJSON_ArrayForEach(x, tests) {
		double host = bench_fig(x, "host", "median"), stock = bench_fig(x, "stock", "median"),
		    shim = bench_fig(x, "shim", "median"), ratio = eff_false ? NAN : lm_jnum(x, "guest_ratio"),
		    pct = lm_jnum(x, "shim_to_host_percent");
		char a[64], b[64], c[64], d[64], e[64];

		if (lead)
			rc |= lm_buf_addf(out, "%s", lead);
		if (form == BENCH_CSV) {
			rc |= csv_field(out, workload, 0) | csv_field(out, lm_jstr(x, "test"), 0);
			rc |= csv_field(out, unit ? unit : "tokens/s", 0) | csv_num(out, host, 0) | csv_num(out, stock, 0);
			rc |= csv_num(out, shim, 0) | csv_num(out, ratio, 0) | csv_num(out, pct, 1);
			continue;
		}
		fmt2(a, sizeof a, host, "");
		fmt2(b, sizeof b, stock, "");
		fmt2(c, sizeof c, shim, "");
		fmt2(d, sizeof d, ratio, "x");
		fmt2(e, sizeof e, pct, "%");
		rc |= md_cell(out, workload) | md_cell(out, lm_jstr(x, "test")) | md_cell(out, a) | md_cell(out, b);
		rc |= md_cell(out, c) | md_cell(out, eff_false ? "shim not effective" : d) | md_cell(out, e);
		rc |= lm_buf_add(out, "|\n", 2);
	}
	return rc ? lm_err(err, LM_EFAIL, "out of memory") : LM_OK;
}
