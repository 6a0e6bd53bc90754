/* render: the documents other systems read, made from the very result objects the text and
 * NDJSON outputs print (no second source that could disagree): JUnit XML for a CI's test
 * report (render_junit.c), the Prometheus text format that is also OpenMetrics, for
 * node_exporter's textfile collector (render_openmetrics.c), and the evidence as one HTML page
 * (render_html.c). docs/interfaces.md describes each. Every string that came from a guest, a
 * Mac, the ledger or a file goes through render_clean first, then through the one escaping
 * function of its format. Nothing here prints or exits: each appends to an lm_buf. */
#ifndef LM_RENDER_H
#define LM_RENDER_H

#include <stddef.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "core/util.h"

/* Appends a string literal. */
#define RENDER_LIT(b, lit) lm_buf_add((b), (lit), sizeof(lit) - 1)

/* The documents --format names beside json and text (cli_conn_format: which command makes which). */
typedef enum { RENDER_NONE = 0, RENDER_JUNIT, RENDER_OPENMETRICS } render_doc;

/* Writes a rendered document to stdout and frees it (main's output, in cmd/). */
void render_put(lm_buf *doc);

/* Appends at most max bytes of s (cut at a UTF-8 boundary, then "...") to out as the terminal
 * sees it (cli_escape_n): C0 controls, DEL, C1 controls, bidi overrides and bytes that are not
 * UTF-8 as the text \xNN, newlines kept with keep_nl. What remains is printable, well-formed
 * UTF-8: what every format below may hold, once its own characters are escaped. 0, or -1. */
int render_clean(lm_buf *out, const char *s, size_t max, int keep_nl);

/* The UTC time t as 2026-01-31T23:59:59 (zone: Z when zone, else none, as JUnit's timestamp). */
void render_utc(char out[32], time_t t, int zone);

/* "REF@sha256:1a2b3c4d… (macOS 26.5 25F71)" as ledger_key_label names a VM result's image
 * version ("REF (no digest)", "unknown@..."), or "unknown (not reached)": the summary's
 * "byImage" and the documents below group VMs by it. */
void render_image_label(char *out, size_t len, const cJSON *res);

/* A VM command's results as the document doc (render_junit_vms or render_openmetrics_status);
 * started is when the run began. 0, or -1 when out of memory. */
int render_vms(lm_buf *out, int doc, const char *cmd, cJSON *const *res, size_t n, time_t started);

/* JUnit XML: one testsuite per image version (render_image_label), its properties the version's
 * key and the payload; one testcase per VM, whose state decides pass, failure (the VM is not as
 * it should be: validation-failed, drift, refused, failed, ...), error (it could not be asked:
 * unreachable, auth-failed, hostkey-mismatch, timeout, abandoned) or skipped, with the message,
 * the cause and the result. Valid under tests/junit.xsd. */
int render_junit_vms(lm_buf *out, const char *cmd, cJSON *const *res, size_t n, time_t started);
/* JUnit XML of golden_build's result: one testsuite, one testcase per step. */
int render_junit_golden(lm_buf *out, const cJSON *golden, time_t started);

/* status's results in the Prometheus text format, which is also OpenMetrics (gauges only, no
 * timestamps, "# EOF" last): per VM its state, whether it was read, the shim, the service, drift,
 * the release and whether it is behind its image version's verdict, that verdict, and when it
 * was checked. Label values bounded (RENDER_LABEL_MAX) and escaped. */
#define RENDER_LABEL_MAX 128
int render_openmetrics_status(lm_buf *out, cJSON *const *res, size_t n);

/* Writes status's metrics to DIR/lume-metal.prom as node_exporter's textfile collector wants
 * it: a temporary file in DIR (a name not ending in .prom, which the collector skips), then
 * renamed over it (lm_write_file_atomic), mode 0644. LM_OK, or an error naming the path. */
#define RENDER_TEXTFILE "lume-metal.prom"
int render_textfile(const char *dir, cJSON *const *res, size_t n, char *err);

/* The evidence page: one self-contained HTML document (inline CSS and SVG; no script, nothing
 * fetched, a Content-Security-Policy that allows neither), light and dark (prefers-color-scheme)
 * and printable. sections is an array of {"title", "subtitle", "bench": TABLE (bench.h) or null,
 * "benchWhen", "validation": a validate record or null, "verdict": a deploy or golden record or
 * null}: per llama-bench test one bar chart of stock, shim and bare metal (each bar's height
 * proportional to its median; data-value holds the number), the speedup, the validation's
 * figures against their thresholds, and the verdict. */
int render_html(lm_buf *out, const char *title, const cJSON *sections);

#endif
