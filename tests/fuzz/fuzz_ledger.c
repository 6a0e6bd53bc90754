/* A ledger document, as an older lume-metal left it under <state>/ledger/ and as `ledger merge`
 * fetches them from other machines: the input written as the JSON document of a fixed key
 * under a fresh state directory, which the first use migrates into the database
 * (ledger_load_verdict), then ledger_each (with ledger_key_label of the document's key, and
 * for each record ledger_record_problem, ledger_record_who and ledger_probe_summary of its
 * probes; for a "bench" one what `report --ledger` does with its table), ledger_merge of the
 * input as a file into a second state and of that state's database back, ledger_append of a
 * deploy record and an observation, ledger_prune (a dry run, then for real) and ledger_load. */
#include "core/bench.h"
#include "fuzz.h"
#include "core/ledger.h"

static int
each(const cJSON *doc, const char *path, void *ctx)
{
	const cJSON *rec;
	char err[LM_ERRLEN], label[512];

	(void)path, (void)ctx;
	ledger_key_label(label, sizeof label, cJSON_GetObjectItemCaseSensitive(doc, "key"), NULL);
	cJSON_ArrayForEach(rec, cJSON_GetObjectItemCaseSensitive(doc, "records")) {
		const cJSON *kind = cJSON_GetObjectItemCaseSensitive(rec, "kind"),
			*table = cJSON_GetObjectItemCaseSensitive(rec, "bench");
		char why[160], who[512];
		lm_buf out = {0};

		ledger_record_problem(rec, why);
		ledger_record_who(who, sizeof who, rec);
		cJSON_Delete(ledger_probe_summary(cJSON_GetObjectItemCaseSensitive(rec, "stock")));
		cJSON_Delete(ledger_probe_summary(cJSON_GetObjectItemCaseSensitive(rec, "shimmed")));
		if (!cJSON_IsString(kind) || strcmp(kind->valuestring, "bench") != 0 ||
		    bench_table_check(table, err) != LM_OK)
			continue;
		bench_render(&out, table, BENCH_TEXT, NULL, err);
		bench_render(&out, table, BENCH_CSV, "image,digest,", err);
		bench_render(&out, table, BENCH_MARKDOWN, "| image ", err);
		lm_buf_free(&out);
	}
	return 0;
}

FUZZ_TARGET(ledger)
{
	char state[4200], state2[4200], dir[4300], doc_path[4300], src_path[4300], err[LM_ERRLEN];
	cJSON *key = ledger_key("ghcr.io/trycua/macos-tahoe-cua:latest", NULL, "26.5.2", "25F84", "VirtualMac2,1",
	    "Apple M1 Ultra (Virtual)", "Linux 6.1.0");
	cJSON *last = NULL, *doc = NULL, *rec = cJSON_CreateObject();
	ledger_merge_counts counts;
	const char *src[1];
	int recorded = 0;
	const ledger_want dep = {"deploy|golden", "0123", NULL, NULL, 0}, bench = {"bench", NULL, NULL, NULL, 1};

	snprintf(state, sizeof state, "%s", fuzz_path("state"));
	snprintf(state2, sizeof state2, "%s", fuzz_path("state2"));
	snprintf(dir, sizeof dir, "%s/ledger", state);
	if (key == NULL || rec == NULL || mkdir(state, 0700) != 0 || mkdir(dir, 0700) != 0 ||
	    ledger_path(doc_path, sizeof doc_path, state, key) != LM_OK)
		abort();
	fuzz_write(doc_path, data, size);
	snprintf(src_path, sizeof src_path, "%s", fuzz_path("src.json"));
	fuzz_write(src_path, data, size);

	fuzz_note("ledger_load_verdict", ledger_load_verdict(&last, &recorded, state, key, &dep, err), err);
	cJSON_Delete(last);
	last = NULL;
	ledger_load_verdict(&last, &recorded, state, key, &bench, err);
	cJSON_Delete(last);
	fuzz_note("ledger_each", ledger_each(state, each, NULL, err), err);
	src[0] = src_path;
	if (fuzz_note("ledger_merge", ledger_merge(&counts, state2, src, 1, err), err) == LM_OK) {
		src[0] = state2;
		ledger_merge(&counts, state, src, 1, err);
	}
	cJSON_AddStringToObject(rec, "kind", "deploy");
	cJSON_AddStringToObject(rec, "vm", "tahoe-1");
	cJSON_AddStringToObject(rec, "verdict", "pass");
	cJSON_AddStringToObject(rec, "payloadSha256", "0123");
	fuzz_note("ledger_append", ledger_append(state, key, rec, err), err);
	cJSON_ReplaceItemInObject(rec, "kind", cJSON_CreateString(LEDGER_OBSERVE));
	cJSON_AddStringToObject(rec, "result", "current");
	ledger_append(state, key, rec, err);
	{
		cJSON *pruned = NULL;

		ledger_prune(&pruned, state, 1, 1, err);
		cJSON_Delete(pruned);
		pruned = NULL;
		fuzz_note("ledger_prune", ledger_prune(&pruned, state, 1, 0, err), err);
		cJSON_Delete(pruned);
	}
	ledger_load(&doc, state, key, err);

	cJSON_Delete(doc);
	cJSON_Delete(rec);
	cJSON_Delete(key);
	fuzz_rmtree(state);
	fuzz_rmtree(state2);
	return 0;
}
