/*
 * liblumemetal: a process-scoped Metal capability shim, in C on the Objective-C runtime.
 *
 * Loaded into one process (DYLD_INSERT_LIBRARIES on macOS, LD_PRELOAD on Linux against the
 * simulated libMetal), it makes the first Metal device's concrete class answer
 *   supportsFamily:              true for Apple families 1001..LUME_METAL_APPLE_FAMILY_MAX,
 *   maxThreadgroupMemoryLength   at least LUME_METAL_MAX_THREADGROUP_MEMORY (default 65536),
 *   recommendedMaxWorkingSetSize at least LUME_METAL_RECOMMENDED_WORKING_SET_SIZE, when set,
 * and the device's own answer for everything else. LUME_METAL_PROCESSES limits it to the named
 * processes. The settings follow the published shim's rules: a number is what strtoull(s, &end,
 * 0) reads from the whole string (so 0x3f1 is 1009), an empty optional variable is unset. A
 * missing (or empty), malformed or out-of-range value, a missing _MTLDevice class, and a missing
 * supportsFamily: or maxThreadgroupMemoryLength (or one of another type) leave the whole process
 * stock and say why in one stderr line. With LUME_METAL_STATE_DIR set (the LaunchAgent sets it),
 * the process also leaves what it decided in DIR/<pid> (lm_record), which install.sh and
 * status.sh read from the job launchd runs.
 *
 * How the hooks go in: arming (the constructor, or the first interposed call if that comes
 * earlier) reads the settings and, when the private _MTLDevice -initGPUFamilySupport exists
 * with the expected type, replaces it; when a device initialises, that hook first installs the
 * replacements on the device's concrete class and then calls the original, so a family table
 * the original derives through supportsFamily: sees the shimmed answers (the published shim's
 * order). The replacements go on the concrete class only: class_addMethod when the class
 * inherits the method, method_setImplementation when the class defines it itself.
 * MTLCreateSystemDefaultDevice and MTLCopyAllDevices are interposed too: they cover a device
 * initialised before the hook went in, and they are the whole route when initGPUFamilySupport
 * is missing (the activation line then says so). Only one class is ever changed; other device
 * classes keep stock answers.
 *
 * The replacements read settings and original IMPs that are written once, before the
 * replacement is published through the runtime, and never again: one test and one indirect
 * call per message, no locks, no allocation.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lm_objc.h"
#include "lume_metal_shim.h"

#define LM_EXPORT __attribute__((visibility("default")))

#define LM_BASE_CLASS "_MTLDevice"

typedef id (*lm_create_fn)(void);
typedef BOOL (*lm_supports_fn)(id, SEL, long);
typedef unsigned long (*lm_ulong_fn)(id, SEL);
typedef uint64_t (*lm_u64_fn)(id, SEL);
typedef void (*lm_void_fn)(id, SEL);
typedef unsigned long (*lm_count_fn)(id, SEL);
typedef id (*lm_at_fn)(id, SEL, unsigned long);

enum { LM_UNARMED, LM_OFF, LM_ARMED, LM_ACTIVE };

/* Settings and original IMPs: written before the hooks are published, then read-only. */
static long lm_apple_max;
static unsigned long lm_tg_min;
static uint64_t lm_ws_min;
static IMP lm_orig_supports;
static IMP lm_orig_tg;
static IMP lm_orig_ws;
static IMP lm_orig_init;

/* Everything below is guarded by lm_lock (lm_done is the lock-free "nothing left to do"). */
static pthread_mutex_t lm_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t lm_arm_once = PTHREAD_ONCE_INIT;
static atomic_int lm_done;
static int lm_phase = LM_UNARMED;
static Class lm_base;
static int lm_init_hooked;   /* -initGPUFamilySupport is replaced (else: the interposers only) */
static struct lume_metal_shim_state lm_st;

#if !defined(__APPLE__)
static pthread_once_t lm_real_once = PTHREAD_ONCE_INIT;
static lm_create_fn lm_real_create;
static lm_create_fn lm_real_copy_all;
#endif

/* ---- messages ---- */

/* lm_say: one line on stderr, written by one write(2) so lines from threads never mix. */
static void lm_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void lm_say(const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n, off;

	off = snprintf(line, sizeof line, "[lume-metal] ");
	va_start(ap, fmt);
	n = vsnprintf(line + off, sizeof line - (size_t)off - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	n += off;
	if ((size_t)n > sizeof line - 2)
		n = (int)sizeof line - 2;
	line[n++] = '\n';
	(void)!write(STDERR_FILENO, line, (size_t)n);
}

/* lm_show: VALUE made printable and short enough to quote in a message. */
static const char *lm_show(char *buf, size_t size, const char *value)
{
	size_t i;

	for (i = 0; value[i] != '\0' && i + 1 < size; i++)
		buf[i] = (value[i] >= 0x20 && value[i] < 0x7f && value[i] != '"') ? value[i] : '?';
	buf[i] = '\0';
	if (value[i] != '\0' && size > 4)
		memcpy(buf + size - 4, "...", 4);
	return buf;
}

static const char *lm_env(const char *name);

/* lm_jcopy: SRC for a JSON string, with '"', '\\' and control characters as '?'. */
static const char *lm_jcopy(char *buf, size_t size, const char *src)
{
	size_t i;

	for (i = 0; src[i] != '\0' && i + 1 < size; i++)
		buf[i] = ((unsigned char)src[i] < 0x20 || src[i] == 0x7f || src[i] == '"' ||
		    src[i] == '\\') ? '?' : src[i];
	buf[i] = '\0';
	return buf;
}

/*
 * lm_record: the proof a process leaves of what the shim did in it (caller holds lm_lock), for
 * install.sh and status.sh to read from the job launchd runs: one small JSON object in
 * $LUME_METAL_STATE_DIR/<pid>, written to .<pid>.tmp there by one write(2) and renamed over it,
 * so a reader sees the whole file or none. Nothing when the variable is unset or empty, or the
 * path is too long; no allocation.
 */
static void lm_record(void)
{
	const char *dir = lm_env("LUME_METAL_STATE_DIR");
	char path[1024], tmp[1024], body[1024], proc[sizeof lm_st.process];
	char cls[sizeof lm_st.device_class], why[sizeof lm_st.reason], ws[32];
	long pid = (long)getpid();
	int n, fd;

	if (!dir || (size_t)snprintf(path, sizeof path, "%s/%ld", dir, pid) >= sizeof path ||
	    (size_t)snprintf(tmp, sizeof tmp, "%s/.%ld.tmp", dir, pid) >= sizeof tmp)
		return;
	lm_jcopy(proc, sizeof proc, lm_st.process);
	if (lm_st.active) {
		if (lm_st.has_working_set)
			snprintf(ws, sizeof ws, "%llu", lm_st.working_set);
		else
			snprintf(ws, sizeof ws, "null");
		n = snprintf(body, sizeof body, "{\"pid\":%ld,\"process\":\"%s\",\"active\":true,"
		    "\"appleFamilyMax\":%ld,\"maxThreadgroupMemory\":%lu,"
		    "\"recommendedWorkingSetSize\":%s,\"deviceClass\":\"%s\",\"reason\":null}\n",
		    pid, proc, lm_st.apple_family_max, lm_st.max_threadgroup_memory, ws,
		    lm_jcopy(cls, sizeof cls, lm_st.device_class));
	} else {
		n = snprintf(body, sizeof body, "{\"pid\":%ld,\"process\":\"%s\",\"active\":false,"
		    "\"reason\":\"%s\"}\n", pid, proc, lm_jcopy(why, sizeof why, lm_st.reason));
	}
	if (n < 0 || (size_t)n >= sizeof body)
		return;
	(void)mkdir(dir, 0755);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	if (write(fd, body, (size_t)n) != n) {
		close(fd);
		unlink(tmp);
		return;
	}
	close(fd);
	if (rename(tmp, path) != 0)
		unlink(tmp);
}

/* lm_fail: switch off for good (caller holds lm_lock) and say why. */
static void lm_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void lm_fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(lm_st.reason, sizeof lm_st.reason, fmt, ap);
	va_end(ap);
	lm_phase = LM_OFF;
	lm_st.active = 0;
	atomic_store_explicit(&lm_done, 1, memory_order_release);
	lm_say("%s stays stock: %s", lm_st.process, lm_st.reason);
	lm_record();
}

/* ---- settings ---- */

static const char *lm_progname(void)
{
#if defined(__APPLE__)
	return getprogname();
#else
	return program_invocation_short_name;
#endif
}

/*
 * lm_parse_num: S read as the published shim reads it, strtoull(S, &end, 0) over the whole
 * string (decimal, 0x hexadecimal, 0 octal; leading spaces and a sign as strtoull takes them),
 * in [lo, hi]. Returns 0, -1 when malformed, -2 when out of range (a negative value wraps to a
 * huge one and lands here).
 */
static int lm_parse_num(const char *s, unsigned long long lo, unsigned long long hi,
    unsigned long long *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (end == s || *end != '\0')
		return -1;
	if (errno == ERANGE || v < lo || v > hi)
		return -2;
	*out = v;
	return 0;
}

/* lm_setting: reads one numeric variable; on a bad value switches off and returns -1. */
static int lm_setting(const char *name, const char *value, unsigned long long lo,
    unsigned long long hi, unsigned long long *out)
{
	char shown[48];
	int rc = lm_parse_num(value, lo, hi, out);

	if (rc == -1)
		lm_fail("%s=\"%s\" is not a number", name, lm_show(shown, sizeof shown, value));
	else if (rc == -2)
		lm_fail("%s=\"%s\" is out of range %llu..%llu", name,
		    lm_show(shown, sizeof shown, value), lo, hi);
	return rc == 0 ? 0 : -1;
}

/*
 * lm_listed: whether NAME is one of the comma-separated LIST. Returns 1, 0, or -1 when LIST is
 * malformed (empty, an empty entry, a control character, or too long).
 */
static int lm_listed(const char *list, const char *name)
{
	size_t len = strlen(name), n;
	const char *p = list, *end;
	int found = 0;

	if (*list == '\0' || strlen(list) >= LUME_METAL_PROCESSES_MAX)
		return -1;
	for (;;) {
		end = strchr(p, ',');
		n = end ? (size_t)(end - p) : strlen(p);
		if (n == 0)
			return -1;
		for (size_t i = 0; i < n; i++)
			if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f)
				return -1;
		if (n == len && memcmp(p, name, n) == 0)
			found = 1;
		if (!end)
			return found;
		p = end + 1;
	}
}

/* lm_env: NAME's value, or NULL when it is unset or empty (the published shim's "unset"). */
static const char *lm_env(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

/*
 * lm_configure: reads the environment (caller holds lm_lock). Returns 0 when this process is
 * to be changed; otherwise the phase is LM_OFF with a reason (said aloud unless the process is
 * merely not listed, which is the normal case for a workload's children).
 */
static int lm_configure(void)
{
	const char *procs = lm_env("LUME_METAL_PROCESSES");
	const char *fam = lm_env("LUME_METAL_APPLE_FAMILY_MAX");
	const char *tg = lm_env("LUME_METAL_MAX_THREADGROUP_MEMORY");
	const char *ws = lm_env("LUME_METAL_RECOMMENDED_WORKING_SET_SIZE");
	unsigned long long v;
	char shown[48];
	int rc;

	if (procs) {
		rc = lm_listed(procs, lm_st.process);
		if (rc < 0) {
			lm_fail("LUME_METAL_PROCESSES=\"%s\" is not a comma-separated list of names",
			    lm_show(shown, sizeof shown, procs));
			return -1;
		}
		if (rc == 0) {
			snprintf(lm_st.reason, sizeof lm_st.reason,
			    "process %s is not in LUME_METAL_PROCESSES", lm_st.process);
			lm_phase = LM_OFF;
			atomic_store_explicit(&lm_done, 1, memory_order_release);
			lm_record();
			return -1;
		}
		lm_st.has_processes = 1;
		snprintf(lm_st.processes, sizeof lm_st.processes, "%s", procs);
	}
	if (!fam) {
		lm_fail("LUME_METAL_APPLE_FAMILY_MAX is not set");
		return -1;
	}
	if (lm_setting("LUME_METAL_APPLE_FAMILY_MAX", fam, LUME_METAL_APPLE_FIRST,
	    LUME_METAL_APPLE_LIMIT, &v) < 0)
		return -1;
	lm_st.apple_family_max = (long)v;
	v = LUME_METAL_TG_DEFAULT;
	if (tg && lm_setting("LUME_METAL_MAX_THREADGROUP_MEMORY", tg, 1, LUME_METAL_TG_LIMIT, &v) < 0)
		return -1;
	lm_st.max_threadgroup_memory = (unsigned long)v;
	if (ws) {
		if (lm_setting("LUME_METAL_RECOMMENDED_WORKING_SET_SIZE", ws, 1, LUME_METAL_WS_LIMIT,
		    &v) < 0)
			return -1;
		lm_st.has_working_set = 1;
		lm_st.working_set = v;
	}
	lm_apple_max = lm_st.apple_family_max;
	lm_tg_min = lm_st.max_threadgroup_memory;
	lm_ws_min = lm_st.working_set;
	return 0;
}

/* ---- method types ---- */

/* lm_enc_skip: past one type (and its offset digits) in an ObjC type encoding, or NULL. */
static const char *lm_enc_skip(const char *t)
{
	int depth = 0;

	while (*t && strchr("rnNoORVA", *t))
		t++;
	if (*t == '\0')
		return NULL;
	if (*t == '^')
		return lm_enc_skip(t + 1);
	if (*t == '@' && t[1] == '"') {
		t = strchr(t + 2, '"');
		if (!t)
			return NULL;
		t++;
	} else if (strchr("{([", *t)) {
		do {
			if (*t == '\0')
				return NULL;
			if (strchr("{([", *t))
				depth++;
			else if (strchr("})]", *t))
				depth--;
			t++;
		} while (depth > 0);
	} else {
		t++;
	}
	while (*t == '-' || *t == '+' || (*t >= '0' && *t <= '9'))
		t++;
	return t;
}

/* lm_enc_is: whether type number IDX of TYPES (0 = return type) starts with one of WANT. */
static int lm_enc_is(const char *types, int idx, const char *want)
{
	const char *t = types;

	for (int i = 0; t && i < idx; i++)
		t = lm_enc_skip(t);
	if (!t)
		return 0;
	while (*t && strchr("rnNoORVA", *t))
		t++;
	return *t != '\0' && strchr(want, *t) != NULL;
}

/* ---- installing ---- */

struct lm_hook {
	const char *name;
	IMP repl;
	IMP *orig;           /* where the original IMP goes, before the replacement is published */
	const char *ret;     /* acceptable return types */
	const char *arg;     /* acceptable type of the one argument, or NULL */
	SEL sel;
	const char *types;
	int applied;
};

/* lm_own_method: CLS's own method for SEL (not an inherited one), or NULL. */
static Method lm_own_method(Class cls, SEL sel)
{
	unsigned int n = 0;
	Method *list = class_copyMethodList(cls, &n), found = NULL;

	for (unsigned int i = 0; list && i < n; i++)
		if (sel_isEqual(method_getName(list[i]), sel)) {
			found = list[i];
			break;
		}
	free(list);
	return found;
}

/* lm_check: fills h->sel and h->types; returns NULL or a reason why CLS cannot take H. */
static const char *lm_check(Class cls, struct lm_hook *h, char *why, size_t size)
{
	Method m;

	h->sel = sel_registerName(h->name);
	m = class_getInstanceMethod(cls, h->sel);
	if (!m) {
		snprintf(why, size, "%s has no method %s", class_getName(cls), h->name);
		return why;
	}
	h->types = method_getTypeEncoding(m);
	if (!h->types || !lm_enc_is(h->types, 0, h->ret) ||
	    (h->arg && !lm_enc_is(h->types, 3, h->arg))) {
		snprintf(why, size, "%s %s has unexpected type \"%s\"", class_getName(cls), h->name,
		    h->types ? h->types : "(none)");
		return why;
	}
	return NULL;
}

/*
 * lm_apply: puts H's replacement on CLS alone. The original IMP is stored before the
 * replacement becomes visible. Returns 0 or -1.
 */
static int lm_apply(Class cls, struct lm_hook *h)
{
	Method own;

	*h->orig = class_getMethodImplementation(cls, h->sel);
	if (!*h->orig)
		return -1;
	if (!class_addMethod(cls, h->sel, h->repl, h->types)) {
		/* CLS defines the method itself: changing its own method touches no other class. */
		own = lm_own_method(cls, h->sel);
		if (!own)
			return -1;
		*h->orig = method_getImplementation(own);
		method_setImplementation(own, h->repl);
	}
	h->applied = 1;
	return 0;
}

/* lm_unapply: puts back what lm_apply changed; the method is CLS's own by now. */
static void lm_unapply(Class cls, struct lm_hook *h)
{
	Method own;

	if (!h->applied)
		return;
	own = lm_own_method(cls, h->sel);
	if (own)
		method_setImplementation(own, *h->orig);
	h->applied = 0;
}

static BOOL lm_supports_family(id self, SEL cmd, long family)
{
	if (family >= LUME_METAL_APPLE_FIRST && family <= lm_apple_max)
		return (BOOL)1;
	return LM_FN(lm_supports_fn, lm_orig_supports)(self, cmd, family);
}

static unsigned long lm_max_threadgroup_memory(id self, SEL cmd)
{
	unsigned long v = LM_FN(lm_ulong_fn, lm_orig_tg)(self, cmd);

	return v < lm_tg_min ? lm_tg_min : v;
}

static uint64_t lm_recommended_working_set(id self, SEL cmd)
{
	uint64_t v = LM_FN(lm_u64_fn, lm_orig_ws)(self, cmd);

	return v < lm_ws_min ? lm_ws_min : v;
}

static int lm_is_kind(Class cls, Class base)
{
	for (; cls != Nil; cls = class_getSuperclass(cls))
		if (cls == base)
			return 1;
	return 0;
}

/*
 * lm_install: the hooks on DEVICE's concrete class, once per process. Devices of another class
 * than the first, and objects that are not _MTLDevice subclasses, are left alone.
 */
static void lm_install(id device)
{
	struct lm_hook hooks[] = {
		{ "supportsFamily:", LM_IMP(lm_supports_family), &lm_orig_supports,
		  "BcC", "ql", NULL, NULL, 0 },
		{ "maxThreadgroupMemoryLength", LM_IMP(lm_max_threadgroup_memory),
		  &lm_orig_tg, "QL", NULL, NULL, NULL, 0 },
		{ "recommendedMaxWorkingSetSize", LM_IMP(lm_recommended_working_set),
		  &lm_orig_ws, "QL", NULL, NULL, NULL, 0 },
	};
	size_t nhooks = lm_st.has_working_set ? 3 : 2, i;
	char why[160], line[160];
	const char *err = NULL;
	Class cls;

	if (device == nil || atomic_load_explicit(&lm_done, memory_order_acquire))
		return;
	pthread_mutex_lock(&lm_lock);
	if (lm_phase != LM_ARMED)
		goto done;
	cls = object_getClass(device);
	if (cls == Nil || !lm_is_kind(cls, lm_base))
		goto done;
	for (i = 0; i < nhooks && !err; i++)
		err = lm_check(cls, &hooks[i], why, sizeof why);
	if (err) {
		lm_fail("%s", err);
		goto done;
	}
	for (i = 0; i < nhooks; i++)
		if (lm_apply(cls, &hooks[i]) < 0)
			break;
	if (i < nhooks) {
		const char *failed = hooks[i].name;

		while (i-- > 0)
			lm_unapply(cls, &hooks[i]);
		lm_fail("%s: could not replace %s", class_getName(cls), failed);
		goto done;
	}
	snprintf(lm_st.device_class, sizeof lm_st.device_class, "%s", class_getName(cls));
	lm_st.active = 1;
	lm_st.reason[0] = '\0';
	lm_phase = LM_ACTIVE;
	atomic_store_explicit(&lm_done, 1, memory_order_release);
	if (lm_st.has_working_set)
		snprintf(line, sizeof line, "%llu", lm_st.working_set);
	else
		snprintf(line, sizeof line, "unchanged");
	lm_say("active in %s (%s): appleFamilyMax=%ld maxThreadgroupMemory=%lu "
	    "recommendedWorkingSetSize=%s%s", lm_st.process, lm_st.device_class,
	    lm_st.apple_family_max, lm_st.max_threadgroup_memory, line,
	    lm_init_hooked ? "" : " (through MTLCreateSystemDefaultDevice/MTLCopyAllDevices only: "
	    LM_BASE_CLASS " has no initGPUFamilySupport of the expected type)");
	lm_record();
done:
	pthread_mutex_unlock(&lm_lock);
}

/* The published shim's order: the device class's hooks first, then the original initialiser. */
static void lm_init_gpu_family_support(id self, SEL cmd)
{
	lm_install(self);
	LM_FN(lm_void_fn, lm_orig_init)(self, cmd);
}

/*
 * lm_arm_run: settings, then the hook on _MTLDevice -initGPUFamilySupport when that private
 * method is there with the expected type; without it the interposers are the route. Runs once.
 */
static void lm_arm_run(void)
{
	struct lm_hook init = { "initGPUFamilySupport", LM_IMP(lm_init_gpu_family_support),
	    &lm_orig_init, "v", NULL, NULL, NULL, 0 };
	char why[160];
	const char *err;

	pthread_mutex_lock(&lm_lock);
	lm_st.version = LUME_METAL_SHIM_STATE_VERSION;
	snprintf(lm_st.process, sizeof lm_st.process, "%s", lm_progname());
	if (lm_configure() < 0)
		goto done;
	lm_base = objc_getClass(LM_BASE_CLASS);
	if (lm_base == Nil) {
		lm_fail("class %s not found", LM_BASE_CLASS);
		goto done;
	}
	err = lm_check(lm_base, &init, why, sizeof why);
	lm_init_hooked = !err && lm_apply(lm_base, &init) == 0;
	lm_phase = LM_ARMED;
	snprintf(lm_st.reason, sizeof lm_st.reason, "no Metal device has initialised yet");
done:
	pthread_mutex_unlock(&lm_lock);
}

static void lm_arm(void)
{
	pthread_once(&lm_arm_once, lm_arm_run);
}

__attribute__((constructor)) static void lm_constructor(void)
{
	lm_arm();
}

LM_EXPORT int lume_metal_shim_state(struct lume_metal_shim_state *out, size_t size)
{
	if (!out || size != sizeof *out)
		return -1;
	lm_arm();
	pthread_mutex_lock(&lm_lock);
	*out = lm_st;
	pthread_mutex_unlock(&lm_lock);
	return 0;
}

/* lm_install_all: the hooks for the devices in an NSArray (count, objectAtIndex:). */
static void lm_install_all(id array)
{
	SEL count_sel = sel_registerName("count"), at_sel = sel_registerName("objectAtIndex:");
	IMP count = lm_objc_imp(array, count_sel), at = lm_objc_imp(array, at_sel);
	unsigned long n;

	if (!count || !at)
		return;
	n = LM_FN(lm_count_fn, count)(array, count_sel);
	for (unsigned long i = 0; i < n && !atomic_load_explicit(&lm_done, memory_order_acquire); i++)
		lm_install(LM_FN(lm_at_fn, at)(array, at_sel, i));
}

/* ---- interposing MTLCreateSystemDefaultDevice and MTLCopyAllDevices ---- */

#if defined(__APPLE__)

id MTLCreateSystemDefaultDevice(void);
id MTLCopyAllDevices(void);

/* dyld does not interpose calls made from the interposing image, so these reach Metal. */
static id lm_create_default_device(void)
{
	id device;

	lm_arm();
	device = MTLCreateSystemDefaultDevice();
	lm_install(device);
	return device;
}

static id lm_copy_all_devices(void)
{
	id devices;

	lm_arm();
	devices = MTLCopyAllDevices();
	lm_install_all(devices);
	return devices;
}

/*
 * dyld reads (replacement, original) pairs from __DATA,__interpose. The table is global only
 * so that the linker keeps it.
 */
LM_EXPORT __attribute__((used)) const struct { const void *repl, *orig; }
lume_metal_interpose[] __attribute__((section("__DATA,__interpose"))) = {
	{ (const void *)lm_create_default_device, (const void *)MTLCreateSystemDefaultDevice },
	{ (const void *)lm_copy_all_devices, (const void *)MTLCopyAllDevices },
};

#else

LM_EXPORT id MTLCreateSystemDefaultDevice(void);
LM_EXPORT id MTLCopyAllDevices(void);

/* A function that is certainly this library's, for lm_ours. */
static id lm_ours_marker(void)
{
	return nil;
}

/* lm_ours: whether FN lives in this library (its address, seen from here, may be libMetal's). */
static int lm_ours(lm_create_fn fn)
{
	Dl_info fn_info, self_info;
	union {
		lm_create_fn fn;
		void *p;
	} u = { fn }, self = { (lm_create_fn)lm_ours_marker };

	if (!dladdr(u.p, &fn_info) || !dladdr(self.p, &self_info))
		return 0;
	return fn_info.dli_fbase == self_info.dli_fbase;
}

/*
 * lm_real: NAME in the next object after this one (the preloaded shim comes before libMetal),
 * or failing that (this library was dlopened late) in the libMetal it was linked with.
 */
static lm_create_fn lm_real(const char *name)
{
	union {
		void *p;
		lm_create_fn fn;
	} u;
	void *lib;

	u.p = dlsym(RTLD_NEXT, name);
	if (u.p && !lm_ours(u.fn))
		return u.fn;
	lib = dlopen("libMetal.so", RTLD_LAZY | RTLD_NOLOAD);
	u.p = lib ? dlsym(lib, name) : NULL;
	if (lib)
		dlclose(lib);
	return u.p && !lm_ours(u.fn) ? u.fn : NULL;
}

static void lm_real_run(void)
{
	lm_real_create = lm_real("MTLCreateSystemDefaultDevice");
	lm_real_copy_all = lm_real("MTLCopyAllDevices");
}

LM_EXPORT id MTLCreateSystemDefaultDevice(void)
{
	id device;

	pthread_once(&lm_real_once, lm_real_run);
	lm_arm();
	if (!lm_real_create)
		return nil;
	device = lm_real_create();
	lm_install(device);
	return device;
}

LM_EXPORT id MTLCopyAllDevices(void)
{
	id devices;

	pthread_once(&lm_real_once, lm_real_run);
	lm_arm();
	if (!lm_real_copy_all)
		return nil;
	devices = lm_real_copy_all();
	lm_install_all(devices);
	return devices;
}

#endif
