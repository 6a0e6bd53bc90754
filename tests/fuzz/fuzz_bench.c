/* One llama-bench arm: its `-o json` output, FUZZ_RS, then its stderr (bench_parse_json,
 * bench_parse_stderr); a good arm then goes through what `report` does with it: a table of
 * the arm against itself (with and without a host arm), checked, rendered in every form and
 * made a ledger record. */
#include "core/bench.h"
#include "fuzz.h"

static void
render(const cJSON *table)
{
	char err[LM_ERRLEN];
	lm_buf out = {0};

	fuzz_note("bench_table_check", bench_table_check(table, err), err);
	bench_render(&out, table, BENCH_TEXT, NULL, err);
	bench_render(&out, table, BENCH_CSV, "image,digest,", err);
	bench_markdown_header(&out, "| image ");
	bench_render(&out, table, BENCH_MARKDOWN, "| image ", err);
	cJSON_Delete(bench_record(table, "tahoe-1"));
	lm_buf_free(&out);
}

FUZZ_TARGET(bench)
{
	const uint8_t *json, *se;
	size_t jlen = 0, slen = 0;
	char *text, err[LM_ERRLEN];
	bench_arm arm = {0};
	cJSON *table = NULL;

	json = fuzz_part(data, size, 0, &jlen);
	text = fuzz_str(json, jlen);
	if (fuzz_note("bench_parse_json", bench_parse_json(&arm, text, jlen, "fuzz.json", BENCH_MIN_SAMPLES, err),
	    err) == LM_OK) {
		if ((se = fuzz_part(data, size, 1, &slen)) != NULL) {
			char *stderr_text = fuzz_str(se, slen);

			bench_parse_stderr(&arm.metal, stderr_text);
			free(stderr_text);
			arm.stderr_path = strdup("fuzz.stderr");
		}
		free(bench_label(&arm));
		if (bench_table(&table, &arm, &arm, NULL, NULL, err) == LM_OK)
			render(table);
		cJSON_Delete(table);
		table = NULL;
		if (bench_table(&table, &arm, &arm, &arm, "fuzz", err) == LM_OK)
			render(table);
		cJSON_Delete(table);
	} else if ((se = fuzz_part(data, size, 1, &slen)) != NULL) {
		bench_metal m = {0};
		char *stderr_text = fuzz_str(se, slen);

		bench_parse_stderr(&m, stderr_text);
		free(stderr_text);
	}
	bench_arm_free(&arm);
	free(text);
	return 0;
}
