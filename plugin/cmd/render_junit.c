/* render_junit: JUnit XML (render.h) as Ant's JUnit task wrote it and Jenkins, GitLab and the
 * GitHub Actions reporters read it: <testsuites> of <testsuite> elements, each with its
 * <properties>, <testcase> elements (a <failure>, <error> or <skipped> in one that did not
 * pass), <system-out> and <system-err>. tests/junit.xsd is the schema the tests hold it to. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cli.h"
#include "cmd/render.h"

/* What a message attribute, a failure's text and a whole result may take of a guest's words. */
#define MSG_MAX 4096
#define BODY_MAX (64u << 10)
#define RESULT_MAX (16u << 10)

enum { T_PASS, T_FAIL, T_ERROR, T_SKIP };

/* o's string k, or dflt. */
static const char *
field(const cJSON *o, const char *k, const char *dflt)
{
	return lm_jstr(o, k) ? lm_jstr(o, k) : dflt;
}

/* o's number k over scale (seconds of "seconds", of "ms" at 1000), or 0. */
static double
secs(const cJSON *o, const char *k, double scale)
{
	double v = lm_jnum(o, k);

	return v > 0 ? v / scale : 0;
}

/* XML escaping, the one place: s made clean (render_clean: no control character, well-formed
 * UTF-8, at most max bytes; in an attribute, a name or a message, newlines too, shown as \n),
 * then & < > " ' as entities. */
static void
xml(lm_buf *out, const char *s, size_t max, int attr)
{
	lm_buf c = {0};

	if (render_clean(&c, s, max, !attr) == 0 && c.data != NULL)
		for (const char *p = c.data; *p; p++) {
			const char *e = *p == '&' ? "&amp;" : *p == '<' ? "&lt;" : *p == '>' ? "&gt;" : *p == '"' ? "&quot;" :
			    *p == '\'' ? "&apos;" : NULL;

			lm_buf_add(out, e ? e : p, e ? strlen(e) : 1);
		}
	lm_buf_free(&c);
}

/* One attribute, name="value", its value escaped. */
static void
attr(lm_buf *out, const char *name, const char *value)
{
	lm_buf_addf(out, " %s=\"", name);
	xml(out, value, MSG_MAX, 1);
	RENDER_LIT(out, "\"");
}

/* <property name value/>, when there is a value. */
static void
property(lm_buf *out, const char *name, const char *value)
{
	if (value == NULL)
		return;
	RENDER_LIT(out, "      <property");
	attr(out, "name", name);
	attr(out, "value", value);
	RENDER_LIT(out, "/>\n");
}

/* Whether VM state of cmd passed: a CI's red or green for it. */
static int
outcome(const char *cmd, const char *state)
{
	static const char *const pass[][2] = {
		{"deploy", " deployed unchanged "}, {"status", " ok "}, {"rollback", " rolled-back "},
		{"validate", " validated "},
	};
	char w[64];

	snprintf(w, sizeof w, " %s ", state);
	for (size_t i = 0; i < sizeof pass / sizeof pass[0]; i++)
		if (strcmp(cmd, pass[i][0]) == 0 && strstr(pass[i][1], w) != NULL)
			return T_PASS;
	/* a deployed VM that --rollback-on-fail returned: not its failure, and not deployed */
	if (strcmp(state, "skipped") == 0 || (strcmp(cmd, "deploy") == 0 && strcmp(state, "rolled-back") == 0))
		return T_SKIP;
	return strstr(" unreachable auth-failed hostkey-mismatch timeout abandoned ", w) ? T_ERROR : T_FAIL;
}

/* A golden step's outcome: done passed, failed failed, the rest (skipped, planned) skipped. */
static int
step_outcome(const cJSON *step)
{
	const char *st = field(step, "state", "failed");

	return strcmp(st, "done") == 0 ? T_PASS : strcmp(st, "failed") == 0 ? T_FAIL : T_SKIP;
}

/* A line "label: value" of a failure's text, value clean and on one line (a newline in a
 * guest's words cannot fake another line). */
static void
line(lm_buf *b, const char *label, const char *value)
{
	if (value == NULL || *value == '\0')
		return;
	lm_buf_addf(b, "%s: ", label);
	render_clean(b, value, MSG_MAX, 0);
	RENDER_LIT(b, "\n");
}

/* The strings of the array arr joined by sep, as one line. */
static void
list_line(lm_buf *b, const char *label, const cJSON *arr, const char *sep)
{
	lm_buf l = {0};
	const cJSON *it, *a = cJSON_IsArray(arr) ? arr : NULL;

	cJSON_ArrayForEach(it, a)
		if (cJSON_IsString(it))
			lm_buf_addf(&l, "%s%s", l.len ? sep : "", it->valuestring);
	line(b, label, l.data);
	lm_buf_free(&l);
}

/* Why a VM did not pass, in lines: who, its state, message, cause and verdict, the shimmed
 * probe's differences, drift, validation's reasons, then the whole result as its JSON line has
 * it. */
static void
why(lm_buf *b, const cJSON *r)
{
	static const char *const fields[] = {"vm", "host", "state", "message", "cause", "verdict"};
	const cJSON *sh = cJSON_GetObjectItemCaseSensitive(r, "shimmed");
	char *json = cJSON_PrintUnformatted(r);

	if (!cJSON_IsObject(sh))
		sh = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(r, "install"), "shimmed");
	for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
		line(b, fields[i], lm_jstr(r, fields[i]));
	list_line(b, "differences", cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(sh, "expect"),
	    "differences"), "; ");
	list_line(b, "drift", cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(r, "status"), "drift"),
	    ", ");
	list_line(b, "reasons", cJSON_GetObjectItemCaseSensitive(r, "reasons"), "; ");
	if (json) {
		RENDER_LIT(b, "result: ");
		render_clean(b, json, RESULT_MAX, 0);
		RENDER_LIT(b, "\n");
	}
	cJSON_free(json);
}

/* One <testcase>; k its outcome. One that did not pass holds a <failure>, <error> or
 * <skipped>: type the state, message the result's message (else the state), and (not for
 * skipped) the text why() makes of r. */
static void
testcase(lm_buf *out, const char *name, const char *classname, double seconds, int k, const cJSON *r,
    const char *type, const char *message)
{
	static const char *const tag[] = {"", "failure", "error", "skipped"};
	lm_buf b = {0};

	RENDER_LIT(out, "    <testcase");
	attr(out, "name", name);
	attr(out, "classname", classname);
	lm_buf_addf(out, " time=\"%.3f\"", seconds);
	if (k == T_PASS) {
		RENDER_LIT(out, "/>\n");
		return;
	}
	lm_buf_addf(out, ">\n      <%s", tag[k]);
	attr(out, "type", type);
	attr(out, "message", message ? message : type);
	if (k == T_SKIP) {
		RENDER_LIT(out, "/>\n    </testcase>\n");
		return;
	}
	why(&b, r);
	RENDER_LIT(out, ">");
	xml(out, b.data ? b.data : "", BODY_MAX, 0);
	lm_buf_addf(out, "</%s>\n    </testcase>\n", tag[k]);
	lm_buf_free(&b);
}

/* A suite's counts by outcome and its time (the sum of its testcases'). */
typedef struct {
	int tests, n[4];
	double secs;
} tally;

/* <testsuite ...> and the start of its <properties>: the first two, command and version. */
static void
suite_open(lm_buf *out, const char *cmd, const char *name, int id, const tally *t, time_t started)
{
	char host[256] = "localhost", when[32];

	if (gethostname(host, sizeof host - 1) != 0 || host[0] == '\0')
		snprintf(host, sizeof host, "localhost");
	render_utc(when, started, 0);
	RENDER_LIT(out, "  <testsuite");
	attr(out, "name", name);
	attr(out, "package", "lume-metal");
	lm_buf_addf(out, " id=\"%d\" tests=\"%d\" failures=\"%d\" errors=\"%d\" skipped=\"%d\" time=\"%.3f\" "
	    "timestamp=\"%s\"", id, t->tests, t->n[T_FAIL], t->n[T_ERROR], t->n[T_SKIP], t->secs, when);
	attr(out, "hostname", host);
	RENDER_LIT(out, ">\n    <properties>\n");
	property(out, "command", cmd);
	property(out, "lumeMetal", LM_VERSION);
}

/* The end of a suite: its <system-out> (text, clean), an empty <system-err>. */
static void
suite_close(lm_buf *out, const char *text)
{
	RENDER_LIT(out, "    <system-out>");
	xml(out, text ? text : "", BODY_MAX, 0);
	RENDER_LIT(out, "</system-out>\n    <system-err/>\n  </testsuite>\n");
}

/* The distinct values of a field over a suite's results, space-separated ("" when none): SHA-256
 * digests, where a value inside another of the same length is the same. */
static void
distinct(lm_buf *b, cJSON *const *res, const int *in, size_t n, int g, const char *outer, const char *k)
{
	for (size_t i = 0; i < n; i++) {
		const cJSON *o = outer ? cJSON_GetObjectItemCaseSensitive(res[i], outer) : res[i];
		const char *v = in[i] == g ? lm_jstr(o, k) : NULL;

		if (v && *v && (b->data == NULL || strstr(b->data, v) == NULL))
			lm_buf_addf(b, "%s%s", b->len ? " " : "", v);
	}
}

/* The property name of the distinct values of a field (distinct()), when there are any. */
static void
distinct_property(lm_buf *out, const char *name, cJSON *const *res, const int *in, size_t n, int g,
    const char *outer, const char *k)
{
	lm_buf v = {0};

	distinct(&v, res, in, n, g, outer, k);
	property(out, name, v.data);
	lm_buf_free(&v);
}

/* One image version's suite (the results i with in[i] == g): its properties (the version's key,
 * the payload, the release), its VMs, and a line per VM in <system-out>. */
static void
vms_suite(lm_buf *out, const char *cmd, cJSON *const *res, const int *in, size_t n, int g, const char *label,
    time_t started)
{
	static const char *const keys[] = {"imageDigest", "image", "guestOS", "guestBuild", "guestModel", "hostChip",
		"hostModel", "hostOS", "hostBuild"};
	tally t = {0};
	const cJSON *key = NULL;
	lm_buf name = {0}, cls = {0}, so = {0};

	for (size_t i = 0; i < n; i++)
		if (in[i] == g) {
			t.tests++;
			t.n[outcome(cmd, field(res[i], "state", "failed"))]++;
			t.secs += secs(res[i], "seconds", 1);
			if (key == NULL && cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(res[i], "key")))
				key = cJSON_GetObjectItemCaseSensitive(res[i], "key");
		}
	lm_buf_addf(&name, "lume-metal %s: %s", cmd, label);
	lm_buf_addf(&cls, "lume-metal.%s", cmd);
	suite_open(out, cmd, name.data, g, &t, started);
	property(out, "imageVersion", label);
	for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
		property(out, keys[k], lm_jstr(key, keys[k]));
	distinct_property(out, "payload", res, in, n, g, NULL, "sha256");
	distinct_property(out, "release", res, in, n, g, "status", "current");
	RENDER_LIT(out, "    </properties>\n");
	for (size_t i = 0; i < n; i++) {
		const char *st = field(res[i], "state", "failed"), *vm = field(res[i], "vm", "?");
		const char *msg = lm_jstr(res[i], "message");

		if (in[i] != g)
			continue;
		testcase(out, vm, cls.data, secs(res[i], "seconds", 1), outcome(cmd, st), res[i], st, msg);
		lm_buf_addf(&so, "%s %s%s", vm, st, msg ? ": " : "");
		render_clean(&so, msg, MSG_MAX, 0);
		RENDER_LIT(&so, "\n");
	}
	suite_close(out, so.data);
	lm_buf_free(&name);
	lm_buf_free(&cls);
	lm_buf_free(&so);
}

#define HEAD "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n"
#define TAIL "</testsuites>\n"

int
render_junit_vms(lm_buf *out, const char *cmd, cJSON *const *res, size_t n, time_t started)
{
	char (*labels)[600] = calloc(n ? n : 1, sizeof *labels);
	int *in = calloc(n ? n : 1, sizeof *in), groups = 0;

	if (labels == NULL || in == NULL) {
		free(labels);
		free(in);
		return -1;
	}
	/* A suite per image version, in the order their first VM comes. */
	for (size_t i = 0; i < n; i++) {
		render_image_label(labels[i], sizeof labels[i], res[i]);
		in[i] = groups;
		for (size_t j = 0; j < i; j++)
			if (strcmp(labels[j], labels[i]) == 0) {
				in[i] = in[j];
				break;
			}
		if (in[i] == groups)
			groups++;
	}
	RENDER_LIT(out, HEAD);
	for (int g = 0; g < groups; g++)
		for (size_t i = 0; i < n; i++)
			if (in[i] == g) {
				vms_suite(out, cmd, res, in, n, g, labels[i], started);
				break;
			}
	free(labels);
	free(in);
	return RENDER_LIT(out, TAIL);
}

int
render_junit_golden(lm_buf *out, const cJSON *g, time_t started)
{
	static const char *const props[][2] = {{"state", "state"}, {"reference", "reference"}, {"digest", "digest"},
		{"baseDigest", "baseDigest"}, {"source", "source"}, {"buildVm", "build"}};
	const cJSON *steps = cJSON_GetObjectItemCaseSensitive(g, "steps"), *s;
	const cJSON *dep = cJSON_GetObjectItemCaseSensitive(g, "deploy");
	tally t = {0};
	lm_buf name = {0};
	char label[600];

	cJSON_ArrayForEach(s, steps) {
		t.tests++;
		t.n[step_outcome(s)]++;
		t.secs += secs(s, "ms", 1000);
	}
	lm_buf_addf(&name, "lume-metal golden: %s", field(g, "reference", "?"));
	RENDER_LIT(out, HEAD);
	suite_open(out, "golden", name.data, 0, &t, started);
	for (size_t k = 0; k < sizeof props / sizeof props[0]; k++)
		property(out, props[k][0], lm_jstr(g, props[k][1]));
	property(out, "payload", lm_jstr(dep, "sha256"));
	if (cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(dep, "key")))
		property(out, "imageVersion", (render_image_label(label, sizeof label, dep), label));
	RENDER_LIT(out, "    </properties>\n");
	cJSON_ArrayForEach(s, steps) {
		const char *step = field(s, "step", "?");
		/* the deploy and workload steps fail with a VM's result: its cause and figures */
		const cJSON *r = strcmp(step, "deploy") == 0 ? dep : strcmp(step, "workload") == 0 ?
		    cJSON_GetObjectItemCaseSensitive(g, "validate") : NULL;

		testcase(out, step, "lume-metal.golden", secs(s, "ms", 1000), step_outcome(s), r ? r : s,
		    field(s, "state", "failed"), field(s, "message", lm_jstr(s, "command")));
	}
	suite_close(out, field(g, "message", lm_jstr(g, "state")));
	lm_buf_free(&name);
	return RENDER_LIT(out, TAIL);
}
