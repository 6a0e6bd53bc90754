/* render_html: the evidence page (render.h). One HTML5 document, nothing outside it: the CSS
 * is a <style>, the charts inline SVG drawn with CSS classes, no script, and a
 * Content-Security-Policy of default-src 'none' so no browser fetches anything for it. Light
 * and dark follow prefers-color-scheme; @media print goes back to black on white. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cmd/cli.h"
#include "cmd/render.h"

/* What a title, a path or a reason may take of the text it came from. */
#define TEXT_MAX 512
/* A bar chart: the plot's height, its top margin (the value above the tallest bar), the
 * width of a bar and of its slot; the SVG's size. */
#define PLOT_H 160.0
#define PLOT_TOP 24.0
#define BAR_W 56.0
#define SLOT_W 84.0
#define CHART_W 290
#define CHART_H 222

static const char style[] =
    ":root{--bg:#fff;--fg:#1f2328;--muted:#59636e;--grid:#d1d9e0;--card:#f6f8fa;--stock:#818b98;--shim:#0969da;"
    "--host:#1a7f37;--pass:#1a7f37;--fail:#cf222e;--none:#9a6700}\n"
    "@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;--muted:#9198a1;--grid:#3d444d;"
    "--card:#151b23;--stock:#656c76;--shim:#4493f8;--host:#3fb950;--pass:#238636;--fail:#da3633;--none:#9e6a03}}\n"
    "body{background:var(--bg);color:var(--fg);font:15px/1.45 system-ui,-apple-system,\"Segoe UI\",sans-serif;"
    "max-width:62rem;margin:1.5rem auto;padding:0 1rem}\n"
    "h1{font-size:1.5rem;margin:0 0 .25rem}h2{font-size:1.1rem;margin:0;display:inline}h3{font-size:1rem;"
    "margin:1rem 0 .4rem}\n"
    ".sub{color:var(--muted);margin:.2rem 0 .8rem}\n"
    "section{background:var(--card);border:1px solid var(--grid);border-radius:8px;padding:1rem 1.25rem;"
    "margin:1.25rem 0;break-inside:avoid}\n"
    ".charts{display:flex;flex-wrap:wrap;gap:1.25rem}figure{margin:0}figcaption{color:var(--muted);"
    "font-size:.9rem;text-align:center}.speedup{color:var(--fg);font-size:1.05rem}\n"
    "svg text{fill:var(--fg);font:12px system-ui,sans-serif}svg text.muted{fill:var(--muted)}\n"
    ".stock{fill:var(--stock);background:var(--stock)}.shim{fill:var(--shim);background:var(--shim)}"
    ".host{fill:var(--host);background:var(--host)}\n"
    ".axis{stroke:var(--grid);stroke-width:1}.threshold{stroke:var(--fg);stroke-width:2;stroke-dasharray:4 3}\n"
    ".gauge .track{fill:var(--grid)}.gauge .ok{fill:var(--pass)}.gauge .bad{fill:var(--fail)}\n"
    ".verdict{display:inline-block;margin-left:.6rem;padding:.05rem .6rem;border-radius:1rem;font-size:.85rem;"
    "font-weight:600;color:#fff;vertical-align:.1rem}\n"
    ".verdict.pass{background:var(--pass)}.verdict.fail{background:var(--fail)}.verdict.unrecorded{background:"
    "var(--none)}\n"
    ".key{display:inline-block;width:.8rem;height:.8rem;border-radius:2px;margin:0 .35rem 0 0;"
    "vertical-align:-.05rem}.legend .key{margin-left:.9rem}\n"
    "table{border-collapse:collapse}td,th{padding:.25rem .7rem .25rem 0;text-align:left;border-bottom:1px solid "
    "var(--grid)}td.num{text-align:right;font-variant-numeric:tabular-nums}ul{margin:.3rem 0}\n"
    "@media print{:root{--bg:#fff;--fg:#000;--muted:#444;--grid:#bbb;--card:#fff}body{max-width:none;margin:0}"
    "section{break-inside:avoid;page-break-inside:avoid}*{print-color-adjust:exact;-webkit-print-color-adjust:"
    "exact}}\n";

/* HTML escaping, the one place: s made clean (render_clean: control characters, bidi
 * overrides and bytes that are not UTF-8 shown as \xNN text, at most TEXT_MAX bytes), then
 * & < > " ' as references, so it is text wherever it goes: an element or an attribute. */
static void
html(lm_buf *out, const char *s)
{
	lm_buf c = {0};

	if (render_clean(&c, s ? s : "", TEXT_MAX, 0) == 0 && c.data != NULL)
		for (const char *p = c.data; *p; p++) {
			const char *e = *p == '&' ? "&amp;" : *p == '<' ? "&lt;" : *p == '>' ? "&gt;" : *p == '"' ? "&quot;" :
			    *p == '\'' ? "&#39;" : NULL;

			lm_buf_add(out, e ? e : p, e ? strlen(e) : 1);
		}
	lm_buf_free(&c);
}

/* A number as the tables show it: two decimals, or "-" when there is none. */
static void
fig(lm_buf *out, double v, const char *suffix)
{
	if (isfinite(v))
		lm_buf_addf(out, "%.2f%s", v, suffix);
	else
		RENDER_LIT(out, "-");
}

static const char *const arm_names[3] = {"stock", "shim", "host"};
static const char *const arm_words[3] = {"stock", "shim", "bare metal"};

/* One test's chart: a bar per arm that has a figure, its height PLOT_H times its median over
 * the largest of them, and the number above it; data-value is the median as the table has it. */
static void
chart(lm_buf *out, const cJSON *test, int effective)
{
	const char *name = lm_jstr(test, "test") ? lm_jstr(test, "test") : "?";
	double v[3], max = 0;
	int k, shown = 0;

	for (k = 0; k < 3; k++) {
		v[k] = lm_jnum(cJSON_GetObjectItemCaseSensitive(test, arm_names[k]), "median");
		if (isfinite(v[k]) && v[k] > max)
			max = v[k];
	}
	lm_buf_addf(out, "<figure><svg class=\"chart\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" "
	    "data-test=\"", CHART_W, CHART_H, CHART_W, CHART_H);
	html(out, name);
	lm_buf_addf(out, "\" data-plot-height=\"%.0f\"><title>", PLOT_H);
	html(out, name);
	RENDER_LIT(out, ": tokens/s");
	for (k = 0; k < 3; k++)
		if (isfinite(v[k])) {
			lm_buf_addf(out, "%s %s ", shown++ ? "," : "", arm_words[k]);
			fig(out, v[k], "");
		}
	lm_buf_addf(out, "</title><line class=\"axis\" x1=\"8\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>", PLOT_TOP + PLOT_H,
	    CHART_W - 8, PLOT_TOP + PLOT_H);
	for (k = 0, shown = 0; k < 3; k++) {
		double x = 16 + SLOT_W * shown + (SLOT_W - BAR_W) / 2, h;

		if (!isfinite(v[k]))
			continue;
		h = max > 0 ? round(v[k] / max * PLOT_H * 100) / 100 : 0;
		lm_buf_addf(out, "<rect class=\"bar %s\" data-arm=\"%s\" data-value=\"%.15g\" x=\"%.1f\" y=\"%.2f\" "
		    "width=\"%.0f\" height=\"%.2f\" rx=\"3\"/>", arm_names[k], arm_names[k], v[k], x, PLOT_TOP + PLOT_H - h,
		    BAR_W, h);
		lm_buf_addf(out, "<text x=\"%.1f\" y=\"%.2f\" text-anchor=\"middle\">", x + BAR_W / 2, PLOT_TOP + PLOT_H - h - 6);
		fig(out, v[k], "");
		lm_buf_addf(out, "</text><text class=\"muted\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>",
		    x + BAR_W / 2, PLOT_TOP + PLOT_H + 18, arm_words[k]);
		shown++;
	}
	RENDER_LIT(out, "</svg><figcaption>");
	html(out, name);
	if (!effective)
		RENDER_LIT(out, " · shim not effective");
	else {
		RENDER_LIT(out, " · <strong class=\"speedup\">");
		fig(out, lm_jnum(test, "guest_ratio"), "×");
		RENDER_LIT(out, "</strong> the stock guest");
		if (isfinite(lm_jnum(test, "shim_to_host_percent"))) {
			RENDER_LIT(out, " · ");
			fig(out, lm_jnum(test, "shim_to_host_percent"), "%");
			RENDER_LIT(out, " of bare metal");
		}
	}
	RENDER_LIT(out, "</figcaption></figure>\n");
}

/* The bench table's charts, one per test, and where its arms came from. */
static void
bench(lm_buf *out, const cJSON *t, const char *when)
{
	const cJSON *x, *arms = cJSON_GetObjectItemCaseSensitive(t, "arms");
	int effective = !cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(t, "shim_effective"));

	RENDER_LIT(out, "<h3>llama-bench, tokens per second (median)</h3>\n<p class=\"sub\">");
	html(out, lm_jstr(t, "workload"));
	if (when) {
		RENDER_LIT(out, " · ");
		html(out, when);
	}
	for (int k = 0; k < 3; k++) {
		const cJSON *a = cJSON_GetObjectItemCaseSensitive(arms, arm_names[k]);
		const char *gpu = lm_jstr(cJSON_GetObjectItemCaseSensitive(a, "metal"), "gpu_name");

		if (!cJSON_IsObject(a))
			continue;
		lm_buf_addf(out, "<br><i class=\"key %s\"></i>%s: ", arm_names[k], arm_words[k]);
		html(out, gpu ? gpu : lm_jstr(a, "gpu_info"));
		if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(a, "metal"),
		    "apple_family")))
			lm_buf_addf(out, ", Apple family %.0f", lm_jnum(cJSON_GetObjectItemCaseSensitive(a, "metal"), "apple_family"));
	}
	RENDER_LIT(out, "</p>\n<div class=\"charts\">\n");
	cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(t, "tests"))
		chart(out, x, effective);
	RENDER_LIT(out, "</div>\n");
}

/* One validation figure against its threshold: a row with the number, the bound and whether it
 * holds, and a gauge whose bar is the figure and whose dashed line the threshold (at most: the
 * figure must stay left of it; at least: right of it), each in data-value and data-threshold. */
static void
gauge_row(lm_buf *out, const char *what, double v, double th, int at_most, double scale, const char *unit)
{
	int holds = isfinite(v) && isfinite(th) && (at_most ? v <= th : v >= th);
	double w = 180, bw = isfinite(v) ? fmin(v / scale, 1) * w : 0, tx = isfinite(th) ? fmin(th / scale, 1) * w : 0;

	lm_buf_addf(out, "<tr><td>%s</td><td class=\"num\">", what);
	if (isfinite(v))
		lm_buf_addf(out, "%.6g%s", v, unit);
	else
		RENDER_LIT(out, "-");
	lm_buf_addf(out, "</td><td>%s %.6g%s</td><td>%s</td><td><svg class=\"gauge\" width=\"190\" height=\"16\" "
	    "data-value=\"%.15g\" data-threshold=\"%.15g\" data-scale=\"%.15g\"><rect class=\"track\" x=\"0\" y=\"4\" "
	    "width=\"%.0f\" height=\"8\" rx=\"4\"/><rect class=\"%s\" x=\"0\" y=\"4\" width=\"%.2f\" height=\"8\" rx=\"4\"/>"
	    "<line class=\"threshold\" x1=\"%.2f\" y1=\"0\" x2=\"%.2f\" y2=\"16\"/></svg></td></tr>\n",
	    at_most ? "at most" : "at least", th, unit, holds ? "holds" : "<strong>does not hold</strong>",
	    isfinite(v) ? v : -1, th, scale, w, holds ? "ok" : "bad", bw, tx, tx);
}

static void
validation(lm_buf *out, const cJSON *rec)
{
	const cJSON *val = cJSON_GetObjectItemCaseSensitive(rec, "validation"), *r;
	const cJSON *th = cJSON_GetObjectItemCaseSensitive(val, "thresholds");
	double kld = lm_jnum(val, "meanKld"), maxk = lm_jnum(th, "maxMeanKld");
	double dev = lm_jnum(th, "maxPplRatioDeviation");

	RENDER_LIT(out, "<h3>Validation: llama-perplexity, stock against shim</h3>\n");
	if (!cJSON_IsObject(rec)) {
		RENDER_LIT(out, "<p class=\"sub\">No validation recorded.</p>\n");
		return;
	}
	RENDER_LIT(out, "<p class=\"sub\">");
	html(out, lm_jstr(rec, "time"));
	RENDER_LIT(out, " · verdict ");
	html(out, lm_jstr(rec, "verdict"));
	if (lm_jstr(rec, "vm")) {
		RENDER_LIT(out, " · on ");
		html(out, lm_jstr(rec, "vm"));
	}
	RENDER_LIT(out, "</p>\n<table>\n");
	gauge_row(out, "mean KLD", kld, maxk, 1, fmax(2 * maxk, isfinite(kld) ? kld * 1.1 : 0), "");
	gauge_row(out, "same top token", lm_jnum(val, "sameTopPercent"), lm_jnum(th, "minSameTopPercent"), 0, 100, "%");
	gauge_row(out, "|PPL(Q)/PPL(base) - 1|", fabs(lm_jnum(val, "pplRatio") - 1), dev, 1, fmax(2 * dev, isfinite(
	    lm_jnum(val, "pplRatio")) ? fabs(lm_jnum(val, "pplRatio") - 1) * 1.1 : 0), "");
	RENDER_LIT(out, "</table>\n");
	if (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(rec, "reasons")) > 0) {
		RENDER_LIT(out, "<ul>");
		cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(rec, "reasons")) {
			RENDER_LIT(out, "<li>");
			html(out, cJSON_IsString(r) ? r->valuestring : "?");
			RENDER_LIT(out, "</li>");
		}
		RENDER_LIT(out, "</ul>\n");
	}
}

static void
section(lm_buf *out, const cJSON *s)
{
	const cJSON *verdict = cJSON_GetObjectItemCaseSensitive(s, "verdict");
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(s, "bench");
	const char *v = lm_jstr(verdict, "verdict");

	if (v == NULL || (strcmp(v, "pass") != 0 && strcmp(v, "fail") != 0))
		v = "unrecorded";
	RENDER_LIT(out, "<section>\n<h2>");
	html(out, lm_jstr(s, "title"));
	lm_buf_addf(out, "</h2><span class=\"verdict %s\" data-verdict=\"%s\">verdict %s</span>\n<p class=\"sub\">", v, v, v);
	html(out, lm_jstr(s, "subtitle"));
	if (cJSON_IsObject(verdict)) {
		RENDER_LIT(out, " · verdict from ");
		html(out, lm_jstr(verdict, "kind"));
		RENDER_LIT(out, " ");
		html(out, lm_jstr(verdict, "time"));
	}
	RENDER_LIT(out, "</p>\n");
	if (cJSON_IsObject(t))
		bench(out, t, lm_jstr(s, "benchWhen"));
	else
		RENDER_LIT(out, "<h3>llama-bench</h3>\n<p class=\"sub\">No bench recorded.</p>\n");
	validation(out, cJSON_GetObjectItemCaseSensitive(s, "validation"));
	RENDER_LIT(out, "</section>\n");
}

int
render_html(lm_buf *out, const char *title, const cJSON *sections)
{
	const cJSON *s;
	char when[32];

	render_utc(when, time(NULL), 1);
	RENDER_LIT(out, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	    "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
	    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
	    "<meta name=\"color-scheme\" content=\"light dark\">\n<title>");
	html(out, title);
	lm_buf_addf(out, "</title>\n<style>\n%s</style>\n</head>\n<body>\n<h1>", style);
	html(out, title);
	lm_buf_addf(out, "</h1>\n<p class=\"sub\">Written %s by lume-metal %s. Bars are tokens per second, the median "
	    "of llama-bench's samples, scaled per test.</p>\n"
	    "<p class=\"legend\"><i class=\"key stock\"></i>stock guest<i class=\"key shim\"></i>guest with the shim"
	    "<i class=\"key host\"></i>bare metal (the host)</p>\n", when, LM_VERSION);
	cJSON_ArrayForEach(s, sections)
		section(out, s);
	if (cJSON_GetArraySize(sections) == 0)
		RENDER_LIT(out, "<p>Nothing recorded.</p>\n");
	return RENDER_LIT(out, "</body>\n</html>\n");
}
