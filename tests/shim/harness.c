/*
 * lm-shim-harness: drives the shim against the SIMULATED libMetal in ways the probe does not,
 * and prints what the devices answer, one line per device, for tests/shim/t-*.sh to check.
 *
 *   lm-shim-harness threads N      N threads create devices at once (default device, the
 *                                  MTLCopyAllDevices array, and fresh devices in turn)
 *   lm-shim-harness sibling        the default device, then a device of a sibling class, and
 *                                  whether _MTLDevice's own methods are unchanged
 *   lm-shim-harness late SHIM [all]  a device created before the shim is loaded (dlopen), then
 *                                  asked for again through the shim's interposer
 *                                  (MTLCreateSystemDefaultDevice, or MTLCopyAllDevices)
 *   lm-shim-harness init-order     the default device's supportsFamily: Apple7 as its own
 *                                  initialiser saw it (lmsimApple7AtInit) and as asked now
 * Exit 0, or 2 on usage or an internal failure.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <objc/thr.h>

#include "../metal-sim/metal-sim.h"

typedef BOOL (*supports_fn)(id, SEL, long);
typedef unsigned long (*ulong_fn)(id, SEL);
typedef uint64_t (*u64_fn)(id, SEL);
typedef unsigned long (*count_fn)(id, SEL);
typedef id (*at_fn)(id, SEL, unsigned long);
typedef id (*create_fn)(void);

struct answers {
	char cls[64];
	int fam[6];
	unsigned long tg;
	unsigned long long ws;
};

static const long probe_families[6] = { 1005, 1006, 1009, 1010, 3003, 5001 };
static const char *const probe_names[6] = { "apple5", "apple6", "apple9", "apple10", "common3",
	"metal3" };

static void ask(id dev, struct answers *a)
{
	SEL fam = sel_registerName("supportsFamily:");
	SEL tg = sel_registerName("maxThreadgroupMemoryLength");
	SEL ws = sel_registerName("recommendedMaxWorkingSetSize");
	IMP imp;

	memset(a, 0, sizeof *a);
	if (dev == nil) {
		snprintf(a->cls, sizeof a->cls, "nil");
		return;
	}
	snprintf(a->cls, sizeof a->cls, "%s", class_getName(object_getClass(dev)));
	imp = lm_objc_imp(dev, fam);
	for (int i = 0; i < 6; i++)
		a->fam[i] = imp ? LM_FN(supports_fn, imp)(dev, fam, probe_families[i]) != 0 : -1;
	imp = lm_objc_imp(dev, tg);
	a->tg = imp ? LM_FN(ulong_fn, imp)(dev, tg) : 0;
	imp = lm_objc_imp(dev, ws);
	a->ws = imp ? LM_FN(u64_fn, imp)(dev, ws) : 0;
}

static void show(const char *label, const struct answers *a)
{
	printf("%s class=%s", label, a->cls);
	for (int i = 0; i < 6; i++)
		printf(" %s=%d", probe_names[i], a->fam[i]);
	printf(" tg=%lu ws=%llu\n", a->tg, a->ws);
}

static id first_of(id array)
{
	SEL count = sel_registerName("count"), at = sel_registerName("objectAtIndex:");
	IMP c = lm_objc_imp(array, count), o = lm_objc_imp(array, at);

	if (!c || !o || LM_FN(count_fn, c)(array, count) == 0)
		return nil;
	return LM_FN(at_fn, o)(array, at, 0);
}

/* ---- threads ---- */

/*
 * The workers are started with the runtime's own objc_thread_detach, not pthread_create: GCC's
 * libobjc frees a class's old dispatch table at once (so a concurrent message send reads freed
 * memory) unless it knows of more than one thread, and it counts only the threads it started.
 * Apple's runtime always defers such frees. The shim's own locking is what is tested here.
 */
struct worker {
	pthread_barrier_t *start;
	int how;              /* 0 default device, 1 MTLCopyAllDevices, 2 a fresh device */
	id fresh;
	struct answers a;
};

static pthread_mutex_t workers_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t workers_cond = PTHREAD_COND_INITIALIZER;
static int workers_left;

static void work(id self, SEL cmd, id arg)
{
	struct worker *w = (struct worker *)(void *)arg;
	id dev;

	(void)self;
	(void)cmd;
	pthread_barrier_wait(w->start);
	if (w->how == 0)
		dev = MTLCreateSystemDefaultDevice();
	else if (w->how == 1)
		dev = first_of(MTLCopyAllDevices());
	else
		dev = w->fresh = lmsim_new_device("AppleParavirtDevice");
	ask(dev, &w->a);
	pthread_mutex_lock(&workers_lock);
	if (--workers_left == 0)
		pthread_cond_signal(&workers_cond);
	pthread_mutex_unlock(&workers_lock);
}

static int run_threads(int n)
{
	static const char *const how[3] = { "default", "all", "fresh" };
	struct worker w[64];
	pthread_barrier_t start;
	char label[32];
	SEL run = sel_registerName("run:");
	Class cls;
	id runner;

	if (n < 1 || n > 64)
		return 2;
	cls = objc_allocateClassPair(Nil, "LMHarnessThread", 0);
	if (cls == Nil || !class_addIvar(cls, "isa", sizeof(Class), 3, "#") ||
	    !class_addMethod(cls, run, LM_IMP(work), "v24@0:8@16"))
		return 2;
	objc_registerClassPair(cls);
	runner = class_createInstance(cls, 0);
	pthread_barrier_init(&start, NULL, (unsigned)n);
	workers_left = n;
	for (int i = 0; i < n; i++) {
		memset(&w[i], 0, sizeof w[i]);
		w[i].start = &start;
		w[i].how = i % 3;
		if (!objc_thread_detach(run, runner, (id)(void *)&w[i]))
			return 2;
	}
	pthread_mutex_lock(&workers_lock);
	while (workers_left > 0)
		pthread_cond_wait(&workers_cond, &workers_lock);
	pthread_mutex_unlock(&workers_lock);
	pthread_barrier_destroy(&start);
	for (int i = 0; i < n; i++) {
		snprintf(label, sizeof label, "thread%d-%s", i, how[w[i].how]);
		show(label, &w[i].a);
		lmsim_free_device(w[i].fresh);
	}
	object_dispose(runner);
	return 0;
}

/* ---- sibling ---- */

static int run_sibling(void)
{
	static const char *const sels[3] = { "supportsFamily:", "maxThreadgroupMemoryLength",
		"recommendedMaxWorkingSetSize" };
	Class base = objc_getClass("_MTLDevice");
	IMP before[3];
	struct answers a;
	int same = 1;
	id sib;

	if (base == Nil)
		return 2;
	for (int i = 0; i < 3; i++)
		before[i] = class_getMethodImplementation(base, sel_registerName(sels[i]));
	ask(MTLCreateSystemDefaultDevice(), &a);
	show("default", &a);
	sib = lmsim_new_device("MTLSimSiblingDevice");
	ask(sib, &a);
	show("sibling", &a);
	lmsim_free_device(sib);
	for (int i = 0; i < 3; i++)
		if (class_getMethodImplementation(base, sel_registerName(sels[i])) != before[i]) {
			printf("base-changed %s\n", sels[i]);
			same = 0;
		}
	printf("base-unchanged=%d\n", same);
	return 0;
}

/* ---- init-order ---- */

static int run_init_order(void)
{
	SEL at_init = sel_registerName("lmsimApple7AtInit"), fam = sel_registerName("supportsFamily:");
	id dev = MTLCreateSystemDefaultDevice();
	IMP a = lm_objc_imp(dev, at_init), f = lm_objc_imp(dev, fam);

	if (!a || !f)
		return 2;
	printf("apple7-at-init=%d apple7-now=%d\n", LM_FN(BOOL (*)(id, SEL), a)(dev, at_init) != 0,
	    LM_FN(supports_fn, f)(dev, fam, 1007L) != 0);
	return 0;
}

/* ---- late ---- */

static int run_late(const char *shim, int all)
{
	union {
		void *p;
		create_fn fn;
	} sym;
	struct answers a;
	void *h;
	id dev = MTLCreateSystemDefaultDevice();

	ask(dev, &a);
	show("before-load", &a);
	h = dlopen(shim, RTLD_NOW | RTLD_GLOBAL);
	if (!h) {
		fprintf(stderr, "lm-shim-harness: %s\n", dlerror());
		return 2;
	}
	ask(dev, &a);
	show("after-load", &a);
	sym.p = dlsym(h, all ? "MTLCopyAllDevices" : "MTLCreateSystemDefaultDevice");
	if (!sym.p)
		return 2;
	dev = all ? first_of(sym.fn()) : sym.fn();
	ask(dev, &a);
	show("after-call", &a);
	/* The shim stays loaded: its replacements are installed in the device class. */
	return 0;
}

int main(int argc, char **argv)
{
	int rc = 2;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && strcmp(argv[1], "threads") == 0)
		rc = run_threads(atoi(argv[2]));
	else if (argc == 2 && strcmp(argv[1], "sibling") == 0)
		rc = run_sibling();
	else if (argc == 2 && strcmp(argv[1], "init-order") == 0)
		rc = run_init_order();
	else if ((argc == 3 || (argc == 4 && strcmp(argv[3], "all") == 0)) &&
	    strcmp(argv[1], "late") == 0)
		rc = run_late(argv[2], argc == 4);
	else
		fprintf(stderr, "usage: lm-shim-harness threads N | sibling | init-order | late SHIM [all]\n");
	return rc;
}
