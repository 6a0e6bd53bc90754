/* lume-metal report: the evidence table from llama-bench JSON, or from the ledger's bench records. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/bench.h"
#include "cmd/cli.h"
#include "cmd/render.h"
#include "core/ledger.h"

enum { FORM_TEXT, FORM_CSV, FORM_MARKDOWN, FORM_JSON };

typedef struct {
	const char *image; /* --image filter, or NULL */
	int form, records;
	lm_buf out;
	cJSON *all;        /* --json: one object per document with bench records */
	cJSON *sections;   /* --html: one render_html section per document with a bench record, */
	cJSON *unbenched;  /* and per document with a validate record only (after them on the page) */
} walk;

/* A CSV field into b, escaped as cli_printf escapes it (so it holds no newline), and quoted
 * when it holds a comma or a quote. */
static void
csv(lm_buf *b, const char *v)
{
	lm_buf e = {0};

	if (cli_escape(&e, v) != 0 || e.data == NULL)
		lm_buf_add(b, ",", 1);
	else if (strpbrk(e.data, ",\"") == NULL)
		lm_buf_addf(b, "%s,", e.data);
	else {
		lm_buf_add(b, "\"", 1);
		for (const char *p = e.data; *p; p++) {
			if (*p == '"')
				lm_buf_add(b, "\"", 1);
			lm_buf_add(b, p, 1);
		}
		lm_buf_add(b, "\",", 2);
	}
	lm_buf_free(&e);
}

/* A Markdown cell into b, escaped, its pipes as \|. */
static void
md(lm_buf *b, const char *v)
{
	lm_buf e = {0};

	lm_buf_add(b, "| ", 2);
	if (cli_escape(&e, v) == 0 && e.data != NULL)
		for (const char *p = e.data; *p; p++)
			lm_buf_add(b, *p == '|' ? "\\|" : p, *p == '|' ? 2 : 1);
	lm_buf_add(b, " ", 1);
	lm_buf_free(&e);
}

static void
cell(char *out, size_t len, double v, const char *suffix)
{
	if (isfinite(v))
		snprintf(out, len, "%.2f%s", v, suffix);
	else
		snprintf(out, len, "-");
}

/* --html FILE: the page of sections, then those of more (may be NULL), written whole
 * (lm_write_file_atomic); rc, or the exit code of a failure. */
static int
write_html(const char *file, cJSON *sections, cJSON *more, int rc)
{
	lm_buf b = {0};
	char err[LM_ERRLEN];
	int k = LM_EFAIL;

	if (file == NULL)
		return rc;
	while (cJSON_GetArraySize(more) > 0)
		cJSON_AddItemToArray(sections, cJSON_DetachItemFromArray(more, 0));
	if (render_html(&b, "lume-metal evidence", sections) == 0 && b.data != NULL)
		k = lm_write_file_atomic(file, b.data, b.len, 0644, err);
	else
		snprintf(err, sizeof err, "out of memory");
	lm_buf_free(&b);
	return k == LM_OK ? rc : cli_error(k == LM_EINPUT ? EXIT_USAGE : EXIT_SOMEFAIL, "report: --html %s", err);
}

/* "guest macOS 26.5.2 (25F84), VirtualMac2,1 · host Apple M1 Ultra, Mac13,2, macOS 26.5 (25F71)"
 * of a key, what it does not know left out. */
static void
key_words(char *out, size_t len, const cJSON *key)
{
	lm_buf b = {0};

	lm_buf_addf(&b, "guest macOS %s", *lm_jstr_or(key, "guestOS", "") ? lm_jstr_or(key, "guestOS", "") : "?");
	if (*lm_jstr_or(key, "guestBuild", ""))
		lm_buf_addf(&b, " (%s)", lm_jstr_or(key, "guestBuild", ""));
	if (*lm_jstr_or(key, "guestModel", ""))
		lm_buf_addf(&b, ", %s", lm_jstr_or(key, "guestModel", ""));
	lm_buf_addf(&b, " · host %s", *lm_jstr_or(key, "hostChip", "") ? lm_jstr_or(key, "hostChip", "") : "?");
	if (*lm_jstr_or(key, "hostModel", ""))
		lm_buf_addf(&b, ", %s", lm_jstr_or(key, "hostModel", ""));
	if (*lm_jstr_or(key, "hostOS", ""))
		lm_buf_addf(&b, ", macOS %s", lm_jstr_or(key, "hostOS", ""));
	if (*lm_jstr_or(key, "hostBuild", ""))
		lm_buf_addf(&b, " (%s)", lm_jstr_or(key, "hostBuild", ""));
	snprintf(out, len, "%s", b.data ? b.data : "");
	lm_buf_free(&b);
}

/* An --html section for the document: its image version and Mac, its last bench and validate
 * records and its verdict (the last deploy or golden record, as status and the gate read it).
 * Documents with a bench come first, each group in the ledger's order. */
static void
add_section(walk *w, const cJSON *doc, const char *label)
{
	const cJSON *b = ledger_last(doc, "bench"), *v = ledger_last(doc, "validate");
	const cJSON *d = ledger_last(doc, "deploy|golden");
	char sub[1024];
	cJSON *sec;

	if ((b == NULL && v == NULL) || w->sections == NULL || w->unbenched == NULL || (sec = cJSON_CreateObject()) == NULL)
		return;
	key_words(sub, sizeof sub, cJSON_GetObjectItemCaseSensitive(doc, "key"));
	cJSON_AddStringToObject(sec, "title", label);
	cJSON_AddStringToObject(sec, "subtitle", sub);
	cJSON_AddItemToObject(sec, "bench", b ? cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(b, "bench"), 1) :
	    cJSON_CreateNull());
	if (b)
		snprintf(sub, sizeof sub, "%s%s%s", *lm_jstr_or(b, "vm", "") ? lm_jstr_or(b, "vm", "") : "", *lm_jstr_or(b, "vm", "") ? " at " : "", lm_jstr_or(b, "time", ""));
	cJSON_AddStringToObject(sec, "benchWhen", b ? sub : "");
	cJSON_AddItemToObject(sec, "validation", v ? cJSON_Duplicate(v, 1) : cJSON_CreateNull());
	cJSON_AddItemToObject(sec, "verdict", d ? cJSON_Duplicate(d, 1) : cJSON_CreateNull());
	cJSON_AddItemToArray(b ? w->sections : w->unbenched, sec);
}

/* The --html section of a table read from files: no image version, validation or verdict. */
static cJSON *
file_section(const cJSON *table, const char *const files[3])
{
	cJSON *all = cJSON_CreateArray(), *sec = cJSON_CreateObject();
	char sub[2048];

	snprintf(sub, sizeof sub, "from llama-bench files: stock %s, shim %s%s%s", files[0], files[1],
	    files[2] ? ", host " : "", files[2] ? files[2] : "");
	cJSON_AddStringToObject(sec, "title", lm_jstr_or(table, "workload", ""));
	cJSON_AddStringToObject(sec, "subtitle", sub);
	cJSON_AddItemToObject(sec, "bench", cJSON_Duplicate(table, 1));
	cJSON_AddNullToObject(sec, "validation");
	cJSON_AddNullToObject(sec, "verdict");
	cJSON_AddItemToArray(all, sec);
	return all;
}

/* One ledger document: its bench records, in the chosen form. */
static int
each(const cJSON *doc, const char *path, void *ctx)
{
	walk *w = ctx;
	const cJSON *key = cJSON_GetObjectItemCaseSensitive(doc, "key"), *r;
	cJSON *recs = NULL;
	char err[LM_ERRLEN], guest[256], label[LEDGER_STR_MAX + 64];
	const char *ref = ledger_doc_ref(doc);
	int n = 0;

	if (w->image && !ledger_doc_is(doc, w->image))
		return 0;
	ledger_key_label(label, sizeof label, key, ref);
	snprintf(guest, sizeof guest, "%s (%s)", lm_jstr_or(key, "guestOS", ""), lm_jstr_or(key, "guestBuild", ""));
	cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(doc, "records")) {
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(r, "bench"), *x;
		lm_buf lead = {0};

		n++;
		if (strcmp(lm_jstr_or(r, "kind", ""), "bench") != 0)
			continue;
		if (bench_table_check(t, err) != LM_OK) {
			cJSON_Delete(recs);
			return cli_error(EXIT_USAGE, "%s: record %d: %s", path, n, err);
		}
		w->records++;
		if (w->form == FORM_JSON) {
			if (recs == NULL)
				recs = cJSON_CreateArray();
			cJSON_AddItemToArray(recs, cJSON_Duplicate(r, 1));
			continue;
		}
		if (w->form == FORM_TEXT) {
			cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(t, "tests")) {
				char st[32], sh[32], ho[32], ra[32], pc[32];
				const cJSON *eff = cJSON_GetObjectItemCaseSensitive(t, "shim_effective");

				cell(st, sizeof st, lm_jnum(cJSON_GetObjectItemCaseSensitive(x, "stock"), "median"), "");
				cell(sh, sizeof sh, lm_jnum(cJSON_GetObjectItemCaseSensitive(x, "shim"), "median"), "");
				cell(ho, sizeof ho, lm_jnum(cJSON_GetObjectItemCaseSensitive(x, "host"), "median"), "");
				cell(ra, sizeof ra, lm_jnum(x, "guest_ratio"), "x");
				cell(pc, sizeof pc, lm_jnum(x, "shim_to_host_percent"), "%");
				cli_bprintf(&w->out, "%-40s %-18s %-20s %-12s %-24s %-12s %10s %10s %10s %10s %9s\n", label,
				    guest, lm_jstr_or(r, "time", ""), *lm_jstr_or(r, "vm", "") ? lm_jstr_or(r, "vm", "") : "-", lm_jstr_or(t, "workload", ""), lm_jstr_or(x, "test", ""), st, sh, ho,
				    cJSON_IsFalse(eff) ? "no effect" : ra, pc);
			}
			continue;
		}
		if (w->form == FORM_CSV) {
			csv(&lead, ref ? ref : ""), csv(&lead, lm_jstr_or(key, "imageDigest", "")), csv(&lead, lm_jstr_or(key, "guestOS", ""));
			csv(&lead, lm_jstr_or(key, "guestBuild", "")), csv(&lead, lm_jstr_or(key, "hostChip", "")), csv(&lead, lm_jstr_or(key, "hostBuild", ""));
			csv(&lead, lm_jstr_or(r, "time", "")), csv(&lead, lm_jstr_or(r, "vm", ""));
		} else {
			md(&lead, label), md(&lead, guest), md(&lead, lm_jstr_or(r, "time", "")), md(&lead, lm_jstr_or(r, "vm", ""));
		}
		if (lead.data == NULL || bench_render(&w->out, t, w->form == FORM_CSV ? BENCH_CSV : BENCH_MARKDOWN, lead.data,
		    err) != LM_OK) {
			lm_buf_free(&lead);
			return cli_error(EXIT_SOMEFAIL, "%s: record %d: %s", path, n, lead.data ? err : "out of memory");
		}
		lm_buf_free(&lead);
	}
	add_section(w, doc, label);
	if (recs) {
		cJSON *d = cJSON_CreateObject();

		cJSON_AddItemToObject(d, "key", cJSON_Duplicate(key, 1));
		cJSON_AddStringToObject(d, "path", path);
		cJSON_AddItemToObject(d, "records", recs);
		cJSON_AddItemToArray(w->all, d);
	}
	return 0;
}

static int
report_ledger(const char *state, const char *image, int form, const char *html)
{
	walk w = {.image = image, .form = form, .sections = html ? cJSON_CreateArray() : NULL,
		.unbenched = html ? cJSON_CreateArray() : NULL};
	char err[LM_ERRLEN];
	int rc;

	if (form == FORM_TEXT)
		lm_buf_addf(&w.out, "%-40s %-18s %-20s %-12s %-24s %-12s %10s %10s %10s %10s %9s\n", "image", "guest", "time",
		    "vm", "workload", "test", "stock", "shim", "host", "speedup", "shim/host");
	else if (form == FORM_CSV)
		lm_buf_addf(&w.out, "image,image_digest,guest_os,guest_build,host_chip,host_build,time,vm,%s\n",
		    BENCH_CSV_HEADER);
	else if (form == FORM_MARKDOWN)
		bench_markdown_header(&w.out, "| image | guest | time | vm ");
	w.all = cJSON_CreateArray();
	rc = ledger_each(state, each, &w, err);
	if (rc < 0) { /* what the readable documents hold, then the one that is not */
		if (form == FORM_JSON)
			cli_print_json(w.all);
		else if (w.out.data)
			fputs(w.out.data, stdout);
		rc = write_html(html, w.sections, w.unbenched, cli_fail(rc, err));
		cJSON_Delete(w.all);
		cJSON_Delete(w.sections);
		cJSON_Delete(w.unbenched);
		lm_buf_free(&w.out);
		return rc;
	}
	if (rc > 0) { /* each printed the reason */
		cJSON_Delete(w.all);
		cJSON_Delete(w.sections);
		cJSON_Delete(w.unbenched);
		lm_buf_free(&w.out);
		return rc;
	}
	if (form == FORM_JSON)
		cli_print_json(w.all);
	else if (w.records == 0 && form == FORM_TEXT)
		cli_printf("no bench records%s%s under %s/ledger\n", image ? " for " : "", image ? image : "", state);
	else if (w.out.data)
		cli_text(stdout, w.out.data, 1);
	rc = write_html(html, w.sections, w.unbenched, EXIT_OK);
	cJSON_Delete(w.all);
	cJSON_Delete(w.sections);
	cJSON_Delete(w.unbenched);
	lm_buf_free(&w.out);
	return rc;
}

/* The option table: name, argument, the id cli_getopt returns; each row's help is in the
 * usage below (tests/cli/t-help.sh checks that every row is named there). */
static const struct option options[] = {
	{"workload", required_argument, NULL, 'w'}, {"csv", no_argument, NULL, 'c'},
	{"markdown", no_argument, NULL, 'm'}, {"json", no_argument, NULL, 'j'},
	{"min-samples", required_argument, NULL, 'n'}, {"ledger", no_argument, NULL, 'l'},
	{"image", required_argument, NULL, 'i'}, {"state", required_argument, NULL, 's'},
	{"html", required_argument, NULL, 'H'}, {NULL, 0, NULL, 0},
};

static int
cmd_report(int argc, char **argv)
{
	const char *files[3] = {NULL, NULL, NULL}, *names[3] = {"stock", "shim", "host"}, *workload = NULL, *image = NULL;
	const char *html = NULL;
	bench_arm arms[3];
	char err[LM_ERRLEN], *end;
	int c, form = FORM_TEXT, forms = 0, ledger = 0, rc = EXIT_OK, loaded = 0;
	long min_samples = BENCH_MIN_SAMPLES;
	cJSON *table = NULL, *sections = NULL;
	lm_buf out = {0};
	cli_conn conn;

	cli_conn_init(&conn);
	while ((c = cli_getopt(argc, argv, "report", "", options)) != -1) {
		switch (c) {
		case 'w': workload = optarg; break;
		case 'c': form = FORM_CSV, forms++; break;
		case 'm': form = FORM_MARKDOWN, forms++; break;
		case 'j': form = FORM_JSON, forms++; break;
		case 'l': ledger = 1; break;
		case 'i': image = optarg; break;
		case 'H': html = optarg; break;
		case 's': cli_conn_flag(&conn, CLI_OPT_STATE, optarg, "report"); break;
		case 'n':
			errno = 0;
			min_samples = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || min_samples < 1 || min_samples > 1000000)
				return cli_error(EXIT_USAGE, "report: --min-samples %s: not a whole number of at least 1", optarg);
			break;
		default: return EXIT_USAGE;
		}
	}
	if (forms > 1)
		return cli_error(EXIT_USAGE, "report: takes one of --csv, --markdown and --json");
	if (ledger) {
		if (argc - optind != 0)
			return cli_error(EXIT_USAGE, "report --ledger: takes no stock=, shim= or host= files");
		if ((rc = cli_conn_ready(&conn, "report")) != EXIT_OK)
			return rc;
		return report_ledger(conn.r.state, image, form, html);
	}
	if (image)
		return cli_error(EXIT_USAGE, "report: --image goes with --ledger");
	for (int i = optind; i < argc; i++) {
		const char *eq = strchr(argv[i], '=');
		int a = -1;

		for (int k = 0; k < 3 && eq; k++)
			if ((size_t)(eq - argv[i]) == strlen(names[k]) && strncmp(argv[i], names[k], strlen(names[k])) == 0)
				a = k;
		if (a < 0 || eq[1] == '\0')
			return cli_error(EXIT_USAGE, "report: %s: expected stock=FILE, shim=FILE or host=FILE", argv[i]);
		if (files[a])
			return cli_error(EXIT_USAGE, "report: %s= given twice", names[a]);
		files[a] = eq + 1;
	}
	if (files[0] == NULL || files[1] == NULL)
		return cli_error(EXIT_USAGE, "report: needs stock=FILE and shim=FILE; see 'lume-metal help report'");
	for (; loaded < 3; loaded++) {
		if (files[loaded] == NULL) {
			memset(&arms[loaded], 0, sizeof arms[loaded]);
			continue;
		}
		if ((rc = bench_load(&arms[loaded], files[loaded], (int)min_samples, err)) != LM_OK) {
			rc = cli_fail(rc, err);
			goto done;
		}
	}
	if ((rc = bench_table(&table, &arms[0], &arms[1], files[2] ? &arms[2] : NULL, workload, err)) != LM_OK) {
		rc = cli_fail(rc, err);
		goto done;
	}
	if (form == FORM_JSON) {
		cli_print_json(table);
	} else {
		if (form == FORM_CSV)
			lm_buf_addf(&out, "%s\n", BENCH_CSV_HEADER);
		else if (form == FORM_MARKDOWN)
			bench_markdown_header(&out, NULL);
		if ((rc = bench_render(&out, table, form == FORM_CSV ? BENCH_CSV : form == FORM_MARKDOWN ? BENCH_MARKDOWN :
		    BENCH_TEXT, NULL, err)) != LM_OK) {
			rc = cli_fail(rc, err);
			goto done;
		}
		cli_text(stdout, out.data, 1);
	}
	if ((rc = write_html(html, sections = file_section(table, files), NULL, EXIT_OK)) != EXIT_OK)
		goto done;
	if (cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(table, "shim_effective")))
		rc = cli_error(EXIT_SOMEFAIL, "report: shim not effective: %s shows simdgroup matrix mul. = false "
		    "(the stock path)", arms[1].stderr_path);
done:
	for (int i = 0; i < loaded; i++)
		bench_arm_free(&arms[i]);
	cJSON_Delete(table);
	cJSON_Delete(sections);
	lm_buf_free(&out);
	return rc;
}

const cli_command cli_cmd_report = {
	.name = "report", .fn = cmd_report, .options = options,
	.summary = "the evidence table from llama-bench JSON or the ledger",
	.usage =
	    "report stock=FILE shim=FILE [host=FILE] [--workload NAME] [--csv|--markdown|--json] [--min-samples N]"
	    " [--html FILE]\n"
	    "       report --ledger [--image REF] [--state DIR] [--csv|--markdown|--json] [--html FILE]\n\n"
	    "Compares llama-bench -o json runs test by test (pp<n_prompt>, tg<n_gen>) on the medians of\n"
	    "samples_ts, with min and max: guest_ratio = shim/stock, shim_to_host_percent = 100*shim/host.\n"
	    "FILE.stderr beside each FILE.json is read for what ggml_metal_device_init (or, before about\n"
	    "b6500, ggml_metal_init) chose (GPU name,\n"
	    "highest Apple family, simdgroup reduction and matrix mul., bfloat, residency sets); a shim\n"
	    "arm on the stock path (simdgroup matrix mul. = false) is reported as \"shim not effective\",\n"
	    "exit 1. Input that does not parse, a row both pp and tg, no pp or no tg test, a bad or empty\n"
	    "samples_ts, too few samples, or no Metal device in gpu_info is exit 2, naming the file.\n\n"
	    "  --workload NAME   the workload label (default: the model file and model_type of the JSON)\n"
	    "  --csv             the columns of the published results.csv, with its rounding\n"
	    "  --markdown        the evidence README table\n"
	    "  --json            one object: arms with paths and Metal lines, per-test figures, ratios\n"
	    "  --min-samples N   samples each test needs (default 3)\n"
	    "  --ledger          every ledger record of kind bench, per image version side by side\n"
	    "  --image REF       with --ledger: that image only\n"
	    "  --state DIR       ledger directory (default $XDG_STATE_HOME/lume-metal)\n"
	    "  --html FILE       also write the evidence as one HTML page: per image version and Mac, bars of\n"
	    "                    stock, shim and bare metal per test, the speedup, the validation against\n"
	    "                    its thresholds, the verdict; inline CSS and SVG, no script, nothing fetched\n",
	.examples = "  lume-metal report stock=stock.json shim=shim.json host=host.json --markdown\n"
	    "  lume-metal report --ledger --csv\n"
	    "  lume-metal report --ledger --html evidence.html\n",
};
