/* bench: llama-bench results read, checked and compared. One arm is one llama-bench
 * `-o json` file (and the stderr beside it); a table compares a stock arm, a shim arm and an
 * optional bare-metal host arm, test by test, on medians of samples_ts. No printing, no exit.
 *
 * The table is a JSON object, and the same object is what a ledger record of kind "bench"
 * holds under "bench" (see bench_record), so `report` renders a fresh comparison and the
 * ledger's history the same way:
 *
 *   {"format":"lume-metal-bench/1", "workload":LABEL, "unit":"tokens/s",
 *    "shim_effective":true|false|null,           null: the shim arm's stderr was not read
 *    "arms":{"stock":ARM, "shim":ARM, "host":ARM},   host only when given
 *    "tests":[{"test":"pp512", "n_prompt":512, "n_gen":0, "n_depth":0,
 *              "stock":FIG, "shim":FIG, "host":FIG|null,
 *              "guest_ratio":shim/stock, "shim_to_host_percent":100*shim/host|null}, ...]}
 *   ARM = {"path":FILE, "stderr":FILE|null, "gpu_info", "build_commit", "build_number",
 *          "model_filename", "model_type", "n_threads", "n_gpu_layers",
 *          "metal":{"gpu_name", "apple_family", "simdgroup_reduction", "simdgroup_matrix_mul",
 *                   "has_bfloat", "use_residency_sets"}|null}     unknown values are null
 *   FIG = {"median", "min", "max", "samples"}                     of samples_ts, tokens/s
 *
 * A ledger record: {"kind":"bench", "vm":VM|null, "workload":LABEL,
 *   "verdict":"effective"|"not-effective"|"unknown", "bench":TABLE} (ledger_append adds "time"). */
#ifndef LM_BENCH_H
#define LM_BENCH_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "core/util.h"

#define BENCH_FORMAT "lume-metal-bench/1"
#define BENCH_MIN_SAMPLES 3
/* The columns of the published results.csv. */
#define BENCH_CSV_HEADER \
	"workload,metric,unit,host_baremetal,stock_guest,safe_shim_guest,guest_ratio,shim_to_host_percent"

/* true, false, or not printed. */
typedef enum { BENCH_UNKNOWN = -1, BENCH_NO = 0, BENCH_YES = 1 } bench_tri;
/* t as JSON: true, false, or null when not printed. Caller owns it. */
cJSON *bench_tri_json(bench_tri t);

/* The function that prints llama.cpp's Metal device lines: ggml_metal_device_init since the
 * backend's split into a device part (PR 15995, mid-September 2025, about b6500); builds before
 * it print the same lines from BENCH_METAL_TAG_OLD. */
#define BENCH_METAL_TAG "ggml_metal_device_init"
#define BENCH_METAL_TAG_OLD "ggml_metal_init"

/* What ggml_metal_device_init (or an older build's ggml_metal_init) printed on stderr. */
typedef struct {
	int seen;               /* any ggml_metal_device_init: or ggml_metal_init: line */
	const char *tag;        /* BENCH_METAL_TAG or BENCH_METAL_TAG_OLD, the first seen; NULL */
	char gpu_name[128];     /* "Apple Paravirtual device" from "GPU name:   MTL0 (...)" or an
	                         * older build's "GPU name:   Apple Paravirtual device", or "" */
	int apple_family;       /* the highest MTLGPUFamilyAppleN printed (1005), 0 when none */
	bench_tri simdgroup_reduction, simdgroup_mm, has_bfloat, residency_sets;
} bench_metal;

/* One test of an arm: a pp (n_prompt > 0, n_gen 0) or tg (n_gen > 0, n_prompt 0) row. */
typedef struct {
	char name[48];          /* "pp512", "tg128", "pp512@d4096" when n_depth > 0 */
	int n_prompt, n_gen, n_depth;
	size_t nsamples;
	double median, min, max; /* of samples_ts */
} bench_test;

/* One llama-bench run. Every pointer is owned by the arm; bench_arm_free releases them. */
typedef struct {
	char *path, *stderr_path;   /* stderr_path NULL when no stderr was read */
	char *gpu_info, *build_commit, *model_filename, *model_type; /* NULL when absent */
	double build_number, n_threads, n_gpu_layers;                /* NAN when absent */
	bench_test *tests;
	size_t ntests;
	bench_metal metal;          /* metal.seen 0 when no stderr or no device lines */
} bench_arm;

/* Parses llama-bench -o json text (len bytes) into *out; name is the file named in errors.
 * Refuses (LM_EINPUT, naming name and the row) text that does not parse, a row that is both
 * or neither pp and tg, a repeated test, samples_ts missing, empty, with a non-number, NaN,
 * infinite, zero or negative value, or fewer than min_samples of them, an empty or missing
 * gpu_info (no Metal device), and a file with no pp or no tg row. Unknown fields are
 * ignored. On failure *out is left empty (safe to free). */
int bench_parse_json(bench_arm *out, const char *text, size_t len, const char *name, int min_samples, char *err);

/* Parses llama-bench's (or llama-perplexity's) stderr, the Metal device lines of either format;
 * never fails, unknown lines are skipped. */
void bench_parse_stderr(bench_metal *out, const char *text);

/* Reads path with bench_parse_json and, when path ends in ".json" and the same name ending in
 * ".stderr" exists, that file with bench_parse_stderr. */
int bench_load(bench_arm *out, const char *path, int min_samples, char *err);

/* Frees what the arm owns and empties it; NULL is fine. */
void bench_arm_free(bench_arm *a);

/* Median, min and max of v[0..n-1] (n > 0); v is not changed. */
void bench_stats(const double *v, size_t n, double *median, double *min, double *max);

/* The published rounding: at most 4 decimals, trailing zeros and point dropped
 * (4871.99, 431.8625, 4786.7). Writes "" for NAN. */
int bench_fmt(char *out, size_t len, double v);

/* The label from an arm: "MODEL_FILE_BASENAME (MODEL_TYPE)", either alone when the other
 * is absent, or "unknown model". Returns a string the caller frees, NULL when out of memory. */
char *bench_label(const bench_arm *a);

/* Builds the table object (format above) for stock, shim and host (NULL: none). workload
 * NULL takes bench_label(stock). Refuses (LM_EINPUT, naming both files) arms of different
 * models and a test missing from an arm. *out is the caller's (cJSON_Delete). */
int bench_table(cJSON **out, const bench_arm *stock, const bench_arm *shim, const bench_arm *host,
    const char *workload, char *err);

/* Checks that t is a table of this format (one read from a ledger, say): LM_EINPUT otherwise. */
int bench_table_check(const cJSON *t, char *err);

/* A new ledger record (format above) holding a copy of table; vm may be NULL. Caller frees. */
cJSON *bench_record(const cJSON *table, const char *vm);

/* Output forms of bench_render. */
typedef enum { BENCH_TEXT, BENCH_CSV, BENCH_MARKDOWN } bench_form;

/* Appends table, checked with bench_table_check, to out in form: BENCH_TEXT a terminal
 * table with its arms; BENCH_CSV the data lines of BENCH_CSV_HEADER (no header; empty fields
 * for a missing host, and for the ratios when the shim was not effective); BENCH_MARKDOWN
 * the rows of the table begun by bench_markdown_header. lead, when not NULL, is put before
 * every CSV and markdown row ("image,digest," or "| image "), so several tables can share
 * one header. */
int bench_render(lm_buf *out, const cJSON *table, bench_form form, const char *lead, char *err);

/* The markdown header row and rule, with lead_header ("| image ") before them when not NULL. */
int bench_markdown_header(lm_buf *out, const char *lead_header);

#endif
