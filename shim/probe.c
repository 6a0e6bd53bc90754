/*
 * lume-metal-probe: prints, as one JSON object on one line, what this process's default Metal
 * device reports (docs/interfaces.md, "Probe output"), whether the lume-metal shim is active in
 * it, and the OS version. With --expect PROFILE.json --stock STOCK.json it also checks that
 * exactly the profile's changes are visible relative to the stock run, and lists every
 * difference it finds.
 *
 * Exit: 0 printed (and passed, with --expect); 1 the expectation failed or there is no device;
 * 2 usage, or an input file that cannot be read or is not what it should be (nothing printed on
 * stdout then).
 *
 * Messages go to the device through the Objective-C runtime (class_getMethodImplementation);
 * on macOS the device comes from Metal's MTLCreateSystemDefaultDevice, on Linux from the
 * simulated libMetal the tests provide.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>
#if defined(__APPLE__)
#include <sys/sysctl.h>
#else
#include <spawn.h>
#include <sys/wait.h>
#endif

#include "lm_objc.h"
#include "lume_metal_shim.h"
#include "probe_json.h"

#ifndef LM_VERSION
#define LM_VERSION "0.1.0"
#endif

#define PROBE "lume-metal-probe"

id MTLCreateSystemDefaultDevice(void);

static const struct family {
	const char *name;
	long value;
} families[] = {
	{ "Apple1", 1001 }, { "Apple2", 1002 }, { "Apple3", 1003 }, { "Apple4", 1004 },
	{ "Apple5", 1005 }, { "Apple6", 1006 }, { "Apple7", 1007 }, { "Apple8", 1008 },
	{ "Apple9", 1009 }, { "Apple10", 1010 },
	{ "Mac1", 2001 }, { "Mac2", 2002 },
	{ "Common1", 3001 }, { "Common2", 3002 }, { "Common3", 3003 },
	{ "Metal3", 5001 }, { "Metal4", 5002 },
};
#define NFAMILIES (sizeof families / sizeof families[0])

/* ---- asking the device ---- */

typedef BOOL (*supports_fn)(id, SEL, long);
typedef BOOL (*bool_fn)(id, SEL);
typedef unsigned long (*ulong_fn)(id, SEL);
typedef uint64_t (*u64_fn)(id, SEL);
typedef id (*id_fn)(id, SEL);
typedef const char *(*cstr_fn)(id, SEL);

/* Each returns -1 when the device does not answer the selector, else 0 with the answer. */
static int ask_family(id dev, long family, int *out)
{
	SEL sel = sel_registerName("supportsFamily:");
	IMP imp = lm_objc_imp(dev, sel);

	if (!imp)
		return -1;
	*out = LM_FN(supports_fn, imp)(dev, sel, family) ? 1 : 0;
	return 0;
}

static int ask_bool(id dev, const char *name, int *out)
{
	SEL sel = sel_registerName(name);
	IMP imp = lm_objc_imp(dev, sel);

	if (!imp)
		return -1;
	*out = LM_FN(bool_fn, imp)(dev, sel) ? 1 : 0;
	return 0;
}

static int ask_ulong(id dev, const char *name, unsigned long long *out)
{
	SEL sel = sel_registerName(name);
	IMP imp = lm_objc_imp(dev, sel);

	if (!imp)
		return -1;
	*out = LM_FN(ulong_fn, imp)(dev, sel);
	return 0;
}

static int ask_u64(id dev, const char *name, unsigned long long *out)
{
	SEL sel = sel_registerName(name);
	IMP imp = lm_objc_imp(dev, sel);

	if (!imp)
		return -1;
	*out = LM_FN(u64_fn, imp)(dev, sel);
	return 0;
}

/* ask_name: the device's name (an NSString) as UTF-8 into buf, or -1. */
static int ask_name(id dev, char *buf, size_t size)
{
	SEL name_sel = sel_registerName("name"), utf8_sel = sel_registerName("UTF8String");
	IMP imp = lm_objc_imp(dev, name_sel);
	const char *s;
	id str;

	if (!imp)
		return -1;
	str = LM_FN(id_fn, imp)(dev, name_sel);
	imp = lm_objc_imp(str, utf8_sel);
	if (!imp)
		return -1;
	s = LM_FN(cstr_fn, imp)(str, utf8_sel);
	if (!s)
		return -1;
	snprintf(buf, size, "%s", s);
	return 0;
}

/* ---- the hook points ---- */

#define HOOK_BASE_CLASS "_MTLDevice"
#define HOOK_TYPES_MAX 96

/*
 * add_hook_points: the "hookPoints" member: whether the class the shim hooks is on the device's
 * class chain, and for each method the shim hooks or needs, whether the chain has it and with
 * which type encoding (printable ASCII, at most HOOK_TYPES_MAX characters, "..." when cut).
 */
static void add_hook_points(struct pj_buf *b, id dev)
{
	static const char *const methods[] = { "initGPUFamilySupport", "supportsFamily:",
		"maxThreadgroupMemoryLength" };
	Class cls = object_getClass(dev), base = objc_getClass(HOOK_BASE_CLASS), c;
	char types[HOOK_TYPES_MAX + 4];
	const char *t;
	int on_chain = 0;
	size_t i, n;

	for (c = cls; base != Nil && c != Nil && !on_chain; c = class_getSuperclass(c))
		on_chain = c == base;
	pj_buf_addf(b, ",\"hookPoints\":{\"" HOOK_BASE_CLASS "\":{\"present\":%s}",
	    on_chain ? "true" : "false");
	for (i = 0; i < sizeof methods / sizeof methods[0]; i++) {
		Method m = cls != Nil ? class_getInstanceMethod(cls, sel_registerName(methods[i])) : NULL;

		t = m ? method_getTypeEncoding(m) : NULL;
		pj_buf_addf(b, ",\"%s\":{\"present\":%s,\"types\":", methods[i], m ? "true" : "false");
		if (t) {
			for (n = 0; t[n] != '\0' && n < HOOK_TYPES_MAX; n++)
				types[n] = t[n] >= 0x20 && t[n] < 0x7f ? t[n] : '?';
			memcpy(types + n, t[n] != '\0' ? "..." : "", t[n] != '\0' ? 4 : 1);
		}
		pj_buf_str(b, t ? types : NULL);
		pj_buf_add(b, "}");
	}
	pj_buf_add(b, "}");
}

/* ---- the OS ---- */

static int os_word_ok(const char *s)
{
	if (*s == '\0')
		return 0;
	for (; *s; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'z') ||
		    (*s >= 'A' && *s <= 'Z') || *s == '.' || *s == '-' || *s == '_'))
			return 0;
	return 1;
}

#if defined(__APPLE__)
static int os_value(const char *key, char *buf, size_t size)
{
	size_t len = size;

	if (sysctlbyname(key, buf, &len, NULL, 0) != 0 || len == 0 || len >= size)
		return -1;
	buf[len] = '\0';
	return os_word_ok(buf) ? 0 : -1;
}
#define OS_VERSION(buf, size) os_value("kern.osproductversion", buf, size)
#define OS_BUILD(buf, size) os_value("kern.osversion", buf, size)
#else
extern char **environ;

/*
 * sw_vers_run: the output of `sw_vers` found on PATH into buf, run without the shim's preload
 * variable so the child stays out of it. -1 when sw_vers is absent, fails or says too much.
 */
static int sw_vers_run(char *buf, size_t size)
{
	char *argv[] = { "sw_vers", NULL };
	posix_spawn_file_actions_t fa;
	size_t n = 0, envc = 0, k = 0;
	char **env, tmp[128];
	int fd[2], status, rc = -1;
	ssize_t got;
	pid_t pid;

	while (environ[envc])
		envc++;
	env = calloc(envc + 1, sizeof *env);
	if (!env)
		return -1;
	for (size_t i = 0; i < envc; i++)
		if (strncmp(environ[i], "LD_PRELOAD=", 11) != 0 &&
		    strncmp(environ[i], "DYLD_INSERT_LIBRARIES=", 22) != 0)
			env[k++] = environ[i];
	if (pipe(fd) != 0) {
		free(env);
		return -1;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fd[1], STDOUT_FILENO);
	posix_spawn_file_actions_addclose(&fa, fd[0]);
	posix_spawn_file_actions_addclose(&fa, fd[1]);
	posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	if (posix_spawnp(&pid, "sw_vers", &fa, NULL, argv, env) != 0)
		pid = -1;
	posix_spawn_file_actions_destroy(&fa);
	free(env);
	close(fd[1]);
	while (pid > 0 && (got = read(fd[0], tmp, sizeof tmp)) != 0) {
		if (got < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (ssize_t i = 0; i < got; i++)
			if (n + 1 < size)
				buf[n++] = tmp[i];
			else
				n = size; /* too long: refused below */
	}
	close(fd[0]);
	if (pid <= 0)
		return -1;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	if (n < size && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		buf[n] = '\0';
		rc = 0;
	}
	return rc;
}

/*
 * sw_vers: the value of the "KEY:" line of sw_vers's output (run once per probe), or -1 when
 * it is missing or odd.
 */
static int sw_vers(const char *key, char *buf, size_t size)
{
	static char out[1024];
	static int ran = 0, ok = -1;
	size_t klen = strlen(key), n;
	const char *p;

	if (!ran) {
		ran = 1;
		ok = sw_vers_run(out, sizeof out);
	}
	for (p = ok == 0 ? out : NULL; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		if (strncmp(p, key, klen) != 0 || p[klen] != ':')
			continue;
		p += klen + 1;
		p += strspn(p, " \t");
		n = strcspn(p, "\r\n");
		while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
			n--;
		if (n >= size)
			return -1;
		memcpy(buf, p, n);
		buf[n] = '\0';
		return os_word_ok(buf) ? 0 : -1;
	}
	return -1;
}
#define OS_VERSION(buf, size) sw_vers("ProductVersion", buf, size)
#define OS_BUILD(buf, size) sw_vers("BuildVersion", buf, size)
#endif

/* ---- the report ---- */

static void add_opt_num(struct pj_buf *b, const char *key, int rc, unsigned long long v)
{
	if (rc == 0)
		pj_buf_addf(b, ",\"%s\":%llu", key, v);
	else
		pj_buf_addf(b, ",\"%s\":null", key);
}

static void add_opt_bool(struct pj_buf *b, const char *key, int rc, int v)
{
	pj_buf_addf(b, ",\"%s\":%s", key, rc != 0 ? "null" : v ? "true" : "false");
}

static void add_shim(struct pj_buf *b)
{
	union {
		void *p;
		lume_metal_shim_state_fn fn;
	} sym;
	struct lume_metal_shim_state st;

	/* POSIX dlsym returns functions as void *; the union says so without a cast warning. */
	sym.p = dlsym(RTLD_DEFAULT, LUME_METAL_SHIM_STATE_SYMBOL);
	memset(&st, 0, sizeof st);
	pj_buf_add(b, ",\"shim\":{\"active\":");
	if (!sym.p) {
		pj_buf_add(b, "false,\"reason\":\"shim not loaded\"}");
		return;
	}
	if (sym.fn(&st, sizeof st) != 0 || st.version != LUME_METAL_SHIM_STATE_VERSION) {
		pj_buf_add(b, "false,\"reason\":\"shim of another version\"}");
		return;
	}
	if (!st.active) {
		pj_buf_add(b, "false,\"reason\":");
		st.reason[sizeof st.reason - 1] = '\0';
		pj_buf_str(b, st.reason);
		pj_buf_add(b, "}");
		return;
	}
	pj_buf_addf(b, "true,\"appleFamilyMax\":%ld,\"maxThreadgroupMemory\":%lu",
	    st.apple_family_max, st.max_threadgroup_memory);
	if (st.has_working_set)
		pj_buf_addf(b, ",\"recommendedWorkingSetSize\":%llu", st.working_set);
	else
		pj_buf_add(b, ",\"recommendedWorkingSetSize\":null");
	pj_buf_add(b, ",\"processes\":");
	if (!st.has_processes) {
		pj_buf_add(b, "null");
	} else {
		char *save = NULL, *name;
		int first = 1;

		st.processes[sizeof st.processes - 1] = '\0';
		pj_buf_add(b, "[");
		for (name = strtok_r(st.processes, ",", &save); name;
		    name = strtok_r(NULL, ",", &save)) {
			pj_buf_add(b, first ? "" : ",");
			pj_buf_str(b, name);
			first = 0;
		}
		pj_buf_add(b, "]");
	}
	pj_buf_add(b, "}");
}

/*
 * report: the probe's JSON object without its closing brace, into b. Returns 0, or 1 when
 * there is no device.
 */
static int report(struct pj_buf *b)
{
	char version[64], build[64], name[256];
	unsigned long long v;
	int rc, flag;
	id dev;

	pj_buf_add(b, "{\"probe\":\"" PROBE "\",\"version\":\"" LM_VERSION "\",\"os\":{\"productVersion\":");
	pj_buf_str(b, OS_VERSION(version, sizeof version) == 0 ? version : NULL);
	pj_buf_add(b, ",\"build\":");
	pj_buf_str(b, OS_BUILD(build, sizeof build) == 0 ? build : NULL);
	pj_buf_add(b, "}");

	dev = MTLCreateSystemDefaultDevice();
	if (dev == nil) {
		pj_buf_add(b, ",\"device\":null,\"hookPoints\":null");
		add_shim(b);
		return 1;
	}
	pj_buf_add(b, ",\"device\":{\"name\":");
	pj_buf_str(b, ask_name(dev, name, sizeof name) == 0 ? name : NULL);
	pj_buf_add(b, ",\"class\":");
	pj_buf_str(b, class_getName(object_getClass(dev)));
	pj_buf_add(b, "},\"families\":{");
	for (size_t i = 0; i < NFAMILIES; i++) {
		rc = ask_family(dev, families[i].value, &flag);
		pj_buf_addf(b, "%s\"%s\":%s", i ? "," : "", families[i].name,
		    rc != 0 ? "null" : flag ? "true" : "false");
	}
	pj_buf_add(b, "}");
	rc = ask_ulong(dev, "maxThreadgroupMemoryLength", &v);
	add_opt_num(b, "maxThreadgroupMemoryLength", rc, v);
	rc = ask_ulong(dev, "maxBufferLength", &v);
	add_opt_num(b, "maxBufferLength", rc, v);
	rc = ask_u64(dev, "recommendedMaxWorkingSetSize", &v);
	add_opt_num(b, "recommendedMaxWorkingSetSize", rc, v);
	rc = ask_bool(dev, "hasUnifiedMemory", &flag);
	add_opt_bool(b, "hasUnifiedMemory", rc, flag);
	add_hook_points(b, dev);
	add_shim(b);
	return 0;
}

/* ---- --expect ---- */

struct profile {
	char *id;
	long long apple_max, tg;
	int has_ws;
	long long ws;
};

static int input_error(const char *file, const char *what)
{
	fprintf(stderr, PROBE ": %s: %s\n", file, what);
	return -1;
}

/* load_json: FILE parsed into *out, or -1 after a message naming FILE. */
static int load_json(const char *file, struct pj_value **out)
{
	char err[128], *text;
	size_t len = 0, got;
	FILE *f = fopen(file, "rb");

	if (!f)
		return input_error(file, strerror(errno));
	text = malloc(PJ_MAX_INPUT + 1);
	if (!text) {
		fclose(f);
		return input_error(file, "out of memory");
	}
	while ((got = fread(text + len, 1, PJ_MAX_INPUT + 1 - len, f)) > 0 && len < PJ_MAX_INPUT + 1)
		len += got;
	if (ferror(f)) {
		fclose(f);
		free(text);
		return input_error(file, "read error");
	}
	fclose(f);
	if (pj_parse(out, text, len, err, sizeof err) < 0) {
		free(text);
		return input_error(file, err);
	}
	free(text);
	return 0;
}

static int load_profile(const char *file, struct profile *p)
{
	const struct pj_value *v;
	struct pj_value *doc;
	int rc = -1;

	if (load_json(file, &doc) < 0)
		return -1;
	memset(p, 0, sizeof *p);
	p->tg = (long long)LUME_METAL_TG_DEFAULT;
	if (pj_type(doc) != PJ_OBJECT) {
		input_error(file, "not a JSON object");
		goto done;
	}
	if (!pj_str(pj_get(doc, "id")) || !*pj_str(pj_get(doc, "id"))) {
		input_error(file, "\"id\" missing or not a non-empty string");
		goto done;
	}
	if (pj_int(pj_get(doc, "appleFamilyMax"), &p->apple_max) < 0 ||
	    p->apple_max < LUME_METAL_APPLE_FIRST || p->apple_max > LUME_METAL_APPLE_LIMIT) {
		input_error(file, "\"appleFamilyMax\" missing or not an integer in 1001..1999");
		goto done;
	}
	v = pj_get(doc, "maxThreadgroupMemory");
	if (v && (pj_int(v, &p->tg) < 0 || p->tg < 1 || p->tg > (long long)LUME_METAL_TG_LIMIT)) {
		input_error(file, "\"maxThreadgroupMemory\" not an integer in 1..1048576");
		goto done;
	}
	v = pj_get(doc, "recommendedWorkingSetSize");
	if (v && pj_type(v) != PJ_NULL) {
		if (pj_int(v, &p->ws) < 0 || p->ws < 1 || (unsigned long long)p->ws > LUME_METAL_WS_LIMIT) {
			input_error(file, "\"recommendedWorkingSetSize\" not null or a positive integer");
			goto done;
		}
		p->has_ws = 1;
	}
	p->id = strdup(pj_str(pj_get(doc, "id")));
	if (!p->id) {
		input_error(file, "out of memory");
		goto done;
	}
	rc = 0;
done:
	pj_free(doc);
	return rc;
}

/* A scalar to compare: null, false, true, an integer or a string. */
struct scalar {
	enum pj_type type;
	long long i;
	const char *s;
};

static int scalar_of(const struct pj_value *v, struct scalar *out)
{
	out->type = pj_type(v);
	out->s = NULL;
	out->i = 0;
	if (!v)
		return -1;
	switch (out->type) {
	case PJ_NULL: case PJ_FALSE: case PJ_TRUE:
		return 0;
	case PJ_INT:
		return pj_int(v, &out->i);
	case PJ_STRING:
		out->s = pj_str(v);
		return 0;
	default:
		return -1;
	}
}

static int scalar_eq(const struct scalar *a, const struct scalar *b)
{
	if (a->type != b->type)
		return 0;
	if (a->type == PJ_INT)
		return a->i == b->i;
	if (a->type == PJ_STRING)
		return strcmp(a->s, b->s) == 0;
	return 1;
}

static void scalar_put(struct pj_buf *b, const struct scalar *v)
{
	switch (v->type) {
	case PJ_NULL: pj_buf_add(b, "null"); break;
	case PJ_FALSE: pj_buf_add(b, "false"); break;
	case PJ_TRUE: pj_buf_add(b, "true"); break;
	case PJ_INT: pj_buf_addf(b, "%lld", v->i); break;
	default: pj_buf_str(b, v->s); break;
	}
}

/* The fields --expect compares; WANT says which JSON types a stock run may hold there. */
enum want { W_STR, W_STR_OR_NULL, W_BOOL_OR_NULL, W_INT_OR_NULL };

static const struct pj_value *path_get(const struct pj_value *doc, const char *a, const char *b)
{
	const struct pj_value *v = pj_get(doc, a);

	return b ? pj_get(v, b) : v;
}

static int type_ok(enum pj_type t, enum want w)
{
	switch (w) {
	case W_STR: return t == PJ_STRING;
	case W_STR_OR_NULL: return t == PJ_STRING || t == PJ_NULL;
	case W_BOOL_OR_NULL: return t == PJ_TRUE || t == PJ_FALSE || t == PJ_NULL;
	default: return t == PJ_INT || t == PJ_NULL;
	}
}

struct diffs {
	struct pj_buf list;     /* the JSON array's elements so far */
	int n;
};

static void diff_add(struct diffs *d, const char *text)
{
	pj_buf_add(&d->list, d->n ? "," : "");
	pj_buf_str(&d->list, text);
	fprintf(stderr, PROBE ": difference: %s\n", text);
	d->n++;
}

/* compare_field: one field of the current run against the value expected. */
static void compare_field(struct diffs *d, const char *label, const struct scalar *want,
    const struct pj_value *cur_v, const struct scalar *stock)
{
	struct pj_buf line = { 0 };
	struct scalar cur;

	if (scalar_of(cur_v, &cur) == 0 && scalar_eq(&cur, want))
		return;
	pj_buf_addf(&line, "%s: expected ", label);
	scalar_put(&line, want);
	pj_buf_add(&line, ", got ");
	if (cur_v)
		scalar_put(&line, &cur);
	else
		pj_buf_add(&line, "nothing");
	pj_buf_add(&line, " (stock ");
	scalar_put(&line, stock);
	pj_buf_add(&line, ")");
	diff_add(d, pj_buf_ok(&line) ? line.data : label);
	pj_buf_free(&line);
}

/*
 * expect: compares the current run (cur) with the stock run and the profile. Appends the
 * "expect" member to out. Returns 0 pass, 1 fail, -1 when STOCK is not a stock probe run.
 */
static int expect(struct pj_buf *out, const struct pj_value *cur, const struct pj_value *stock,
    const char *stock_file, const struct profile *prof)
{
	static const struct field {
		const char *a, *b;
		enum want want;
	} plain[] = {
		{ "os", "productVersion", W_STR_OR_NULL }, { "os", "build", W_STR_OR_NULL },
		{ "device", "name", W_STR_OR_NULL }, { "device", "class", W_STR },
		{ "maxBufferLength", NULL, W_INT_OR_NULL },
		{ "hasUnifiedMemory", NULL, W_BOOL_OR_NULL },
	};
	struct diffs d = { { 0 }, 0 };
	struct scalar sv, want;
	const struct pj_value *v, *shim;
	char label[64];
	long long n;
	int rc;

	if (!pj_str(pj_get(stock, "probe")) || strcmp(pj_str(pj_get(stock, "probe")), PROBE) != 0) {
		input_error(stock_file, "not the output of " PROBE);
		return -1;
	}
	if (pj_type(pj_get(stock, "device")) != PJ_OBJECT) {
		input_error(stock_file, "the stock run found no device");
		return -1;
	}
	/* Check the whole stock document before comparing anything. */
	for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++)
		if (!path_get(stock, plain[i].a, plain[i].b) ||
		    !type_ok(pj_type(path_get(stock, plain[i].a, plain[i].b)), plain[i].want))
			goto bad_stock;
	for (size_t i = 0; i < NFAMILIES; i++)
		if (!path_get(stock, "families", families[i].name) ||
		    !type_ok(pj_type(path_get(stock, "families", families[i].name)), W_BOOL_OR_NULL))
			goto bad_stock;
	if (!pj_get(stock, "maxThreadgroupMemoryLength") ||
	    !type_ok(pj_type(pj_get(stock, "maxThreadgroupMemoryLength")), W_INT_OR_NULL) ||
	    !pj_get(stock, "recommendedMaxWorkingSetSize") ||
	    !type_ok(pj_type(pj_get(stock, "recommendedMaxWorkingSetSize")), W_INT_OR_NULL))
		goto bad_stock;
	v = path_get(stock, "shim", "active");
	if (pj_type(v) != PJ_TRUE && pj_type(v) != PJ_FALSE)
		goto bad_stock;

	if (pj_type(v) == PJ_TRUE)
		diff_add(&d, "stock run: the shim was active");
	for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++) {
		scalar_of(path_get(stock, plain[i].a, plain[i].b), &sv);
		snprintf(label, sizeof label, "%s%s%s", plain[i].a, plain[i].b ? "." : "",
		    plain[i].b ? plain[i].b : "");
		compare_field(&d, label, &sv, path_get(cur, plain[i].a, plain[i].b), &sv);
	}
	for (size_t i = 0; i < NFAMILIES; i++) {
		scalar_of(path_get(stock, "families", families[i].name), &sv);
		want = sv;
		if (families[i].value >= LUME_METAL_APPLE_FIRST && families[i].value <= prof->apple_max)
			want.type = PJ_TRUE;
		snprintf(label, sizeof label, "families.%s", families[i].name);
		compare_field(&d, label, &want, path_get(cur, "families", families[i].name), &sv);
	}
	scalar_of(pj_get(stock, "maxThreadgroupMemoryLength"), &sv);
	want = sv;
	if (want.type == PJ_INT && want.i < prof->tg)
		want.i = prof->tg;
	compare_field(&d, "maxThreadgroupMemoryLength", &want,
	    pj_get(cur, "maxThreadgroupMemoryLength"), &sv);
	scalar_of(pj_get(stock, "recommendedMaxWorkingSetSize"), &sv);
	want = sv;
	if (prof->has_ws && want.type == PJ_INT && want.i < prof->ws)
		want.i = prof->ws;
	compare_field(&d, "recommendedMaxWorkingSetSize", &want,
	    pj_get(cur, "recommendedMaxWorkingSetSize"), &sv);

	shim = pj_get(cur, "shim");
	if (pj_type(pj_get(shim, "active")) != PJ_TRUE) {
		struct pj_buf line = { 0 };
		const char *why = pj_str(pj_get(shim, "reason"));

		pj_buf_addf(&line, "shim: not active (%s)", why ? why : "no reason given");
		diff_add(&d, pj_buf_ok(&line) ? line.data : "shim: not active");
		pj_buf_free(&line);
	} else {
		if (pj_int(pj_get(shim, "appleFamilyMax"), &n) < 0 || n != prof->apple_max)
			diff_add(&d, "shim.appleFamilyMax differs from the profile's appleFamilyMax");
		if (pj_int(pj_get(shim, "maxThreadgroupMemory"), &n) < 0 || n != prof->tg)
			diff_add(&d, "shim.maxThreadgroupMemory differs from the profile's maxThreadgroupMemory");
		v = pj_get(shim, "recommendedWorkingSetSize");
		if (prof->has_ws ? (pj_int(v, &n) < 0 || n != prof->ws) : pj_type(v) != PJ_NULL)
			diff_add(&d, "shim.recommendedWorkingSetSize differs from the profile's recommendedWorkingSetSize");
	}

	pj_buf_add(out, ",\"expect\":{\"profile\":");
	pj_buf_str(out, prof->id);
	pj_buf_addf(out, ",\"pass\":%s,\"differences\":[", d.n ? "false" : "true");
	if (d.n)
		pj_buf_add(out, pj_buf_ok(&d.list) ? d.list.data : "\"(out of memory)\"");
	pj_buf_add(out, "]}");
	rc = d.n ? 1 : 0;
	pj_buf_free(&d.list);
	return rc;
bad_stock:
	pj_buf_free(&d.list);
	input_error(stock_file, "not a complete " PROBE " run (a field is missing or mistyped)");
	return -1;
}

static int usage(FILE *f, int rc)
{
	fprintf(f, "usage: " PROBE " [--expect PROFILE.json --stock STOCK.json]\n"
	    "       " PROBE " --version\n");
	return rc;
}

int main(int argc, char **argv)
{
	const char *profile_file = NULL, *stock_file = NULL;
	struct pj_value *stock = NULL, *cur = NULL;
	struct profile prof = { 0 };
	struct pj_buf out = { 0 };
	char err[128];
	int rc, i;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--expect") == 0 && i + 1 < argc && !profile_file)
			profile_file = argv[++i];
		else if (strcmp(argv[i], "--stock") == 0 && i + 1 < argc && !stock_file)
			stock_file = argv[++i];
		else if (strcmp(argv[i], "--version") == 0 && argc == 2)
			return printf(PROBE " " LM_VERSION "\n") < 0 ? 1 : 0;
		else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
			return usage(stdout, 0);
		else
			return usage(stderr, 2);
	}
	if (!profile_file != !stock_file)
		return usage(stderr, 2);
	if (profile_file && (load_profile(profile_file, &prof) < 0 || load_json(stock_file, &stock) < 0)) {
		free(prof.id);
		return 2;
	}

	rc = report(&out);
	if (profile_file) {
		struct pj_buf body = { 0 };
		int erc;

		err[0] = '\0';
		pj_buf_add(&body, out.data ? out.data : "");
		pj_buf_add(&body, "}");
		if (!pj_buf_ok(&body) || pj_parse(&cur, body.data, body.len, err, sizeof err) < 0) {
			fprintf(stderr, PROBE ": cannot read back its own output: %s\n", err);
			erc = 1;
		} else {
			erc = expect(&out, cur, stock, stock_file, &prof);
		}
		pj_buf_free(&body);
		rc = erc < 0 ? -1 : (rc || erc);
	}
	if (rc >= 0) {
		pj_buf_add(&out, "}\n");
		if (!pj_buf_ok(&out) || fputs(out.data, stdout) == EOF || fflush(stdout) != 0) {
			fprintf(stderr, PROBE ": cannot write the report\n");
			rc = 1;
		}
	} else {
		rc = 2;
	}
	pj_free(cur);
	pj_free(stock);
	free(prof.id);
	pj_buf_free(&out);
	return rc;
}
