/*
 * SIMULATED libMetal, for tests on Linux only. THIS IS NOT APPLE'S METAL and talks to no GPU.
 *
 * It registers, with GCC's libobjc, the classes the shim and the probe deal with on macOS:
 *   _MTLDevice                 base class: initGPUFamilySupport and every property below;
 *                              initGPUFamilySupport fills the family table, then derives a flag
 *                              by sending the device supportsFamily: Apple7 (answered by the
 *                              test-only selector lmsimApple7AtInit), so a test sees whether a
 *                              hook was in place before the original initialiser ran
 *   AppleParavirtDevice        the concrete paravirtual device; defines some methods itself
 *                              (LUME_METAL_SIM_OWN), inherits the rest from _MTLDevice
 *   MTLSimSiblingDevice        a second _MTLDevice subclass, to prove the shim leaves it alone
 *   MTLSimString, MTLSimArray  stand-ins for NSString (UTF8String) and NSArray (count,
 *                              objectAtIndex:)
 * and exports MTLCreateSystemDefaultDevice (one shared device, as Metal does) and
 * MTLCopyAllDevices (an array holding that device).
 *
 * Stock answers come from the environment; the defaults are a macOS Tahoe 26.5.2 guest on an
 * M1 Ultra host (docs/metal-facts.md). maxBufferLength has no recorded value and is a plausible
 * 8 GiB.
 *   LUME_METAL_SIM_NAME                       "Apple Paravirtual device"
 *   LUME_METAL_SIM_FAMILIES                   1001,1002,1003,1004,1005,3001,3002,3003
 *   LUME_METAL_SIM_MAX_THREADGROUP_MEMORY     32768
 *   LUME_METAL_SIM_MAX_BUFFER_LENGTH          8589934592
 *   LUME_METAL_SIM_RECOMMENDED_WORKING_SET_SIZE 12009342976
 *   LUME_METAL_SIM_UNIFIED_MEMORY             1 (or 0)
 * Fault and timing knobs for the tests:
 *   LUME_METAL_SIM_OWN          selectors AppleParavirtDevice defines itself (comma list;
 *                               default maxThreadgroupMemoryLength,recommendedMaxWorkingSetSize)
 *   LUME_METAL_SIM_OMIT         selectors no class defines (comma list)
 *   LUME_METAL_SIM_BASE_NAME    the base class's name (default _MTLDevice)
 *   LUME_METAL_SIM_WRONG_TYPES  selectors registered with another type (comma list; "1" means
 *                               maxThreadgroupMemoryLength): a getter claims to return a
 *                               double, supportsFamily: to take one, initGPUFamilySupport to
 *                               return an object; an entry SELECTOR=TYPES sets TYPES itself
 *   LUME_METAL_SIM_EARLY_DEVICE 1: this library's constructor creates the default device
 *   LUME_METAL_SIM_NO_DEVICE    1: MTLCreateSystemDefaultDevice returns nil
 * A malformed value makes the process exit 70 with a "[metal-sim]" line.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <objc/thr.h>

#include "metal-sim.h"

#define SIM_EXPORT __attribute__((visibility("default")))
#define SIM_MAX_FAMILIES 64
#define SIM_MAX_DEVICES 8

SIM_EXPORT const char lmsim_label[] = "SIMULATED libMetal for lume-metal tests; not Apple Metal";

struct sim_device {
	int families[SIM_MAX_FAMILIES];
	int nfamilies;                  /* filled in by initGPUFamilySupport */
	int families_ready;
	int apple7_at_init;             /* what supportsFamily: 1007 answered inside the initialiser */
	unsigned long max_threadgroup;
	unsigned long max_buffer;
	uint64_t working_set;
	unsigned char unified;
	id name;
};

struct sim_array {
	unsigned long count;
	id items[SIM_MAX_DEVICES];
};

static struct {
	const char *name;
	int families[SIM_MAX_FAMILIES];
	int nfamilies;
	unsigned long max_threadgroup;
	unsigned long max_buffer;
	uint64_t working_set;
	int unified;
	const char *own;
	const char *omit;
	const char *wrong_types;
	int no_device;
} sim;

static Class sim_string_cls, sim_array_cls, sim_base_cls, sim_paravirt_cls, sim_sibling_cls;
static pthread_once_t sim_default_once = PTHREAD_ONCE_INIT, sim_all_once = PTHREAD_ONCE_INIT;
static id sim_default_device, sim_all_devices;

static void sim_die(const char *what, const char *value)
{
	fprintf(stderr, "[metal-sim] %s=\"%s\" is not valid\n", what, value);
	exit(70);
}

static unsigned long long sim_number(const char *var, unsigned long long dflt)
{
	const char *s = getenv(var);
	unsigned long long v = 0;

	if (!s)
		return dflt;
	if (*s == '\0')
		sim_die(var, s);
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9' || v > (~0ULL - 9) / 10)
			sim_die(var, s);
		v = v * 10 + (unsigned long long)(*p - '0');
	}
	return v;
}

/* sim_in_list: whether WORD is an entry of the comma-separated LIST. */
static int sim_in_list(const char *list, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = list; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
		if (strncmp(p, word, n) == 0 && (p[n] == ',' || p[n] == '\0'))
			return 1;
	return 0;
}

static void sim_read_config(void)
{
	const char *fam = getenv("LUME_METAL_SIM_FAMILIES");
	const char *own = getenv("LUME_METAL_SIM_OWN");

	sim.name = getenv("LUME_METAL_SIM_NAME");
	if (!sim.name)
		sim.name = "Apple Paravirtual device";
	if (!fam)
		fam = "1001,1002,1003,1004,1005,3001,3002,3003";
	for (const char *p = fam; *p;) {
		char *end;
		long v = strtol(p, &end, 10);

		if (end == p || v <= 0 || v > 99999 || sim.nfamilies == SIM_MAX_FAMILIES ||
		    (*end != ',' && *end != '\0'))
			sim_die("LUME_METAL_SIM_FAMILIES", fam);
		sim.families[sim.nfamilies++] = (int)v;
		p = *end == ',' ? end + 1 : end;
	}
	sim.max_threadgroup = (unsigned long)sim_number("LUME_METAL_SIM_MAX_THREADGROUP_MEMORY", 32768);
	sim.max_buffer = (unsigned long)sim_number("LUME_METAL_SIM_MAX_BUFFER_LENGTH", 8589934592ULL);
	sim.working_set = sim_number("LUME_METAL_SIM_RECOMMENDED_WORKING_SET_SIZE", 12009342976ULL);
	sim.unified = (int)sim_number("LUME_METAL_SIM_UNIFIED_MEMORY", 1);
	if (sim.unified > 1)
		sim_die("LUME_METAL_SIM_UNIFIED_MEMORY", getenv("LUME_METAL_SIM_UNIFIED_MEMORY"));
	sim.own = own ? own : "maxThreadgroupMemoryLength,recommendedMaxWorkingSetSize";
	sim.omit = getenv("LUME_METAL_SIM_OMIT");
	sim.wrong_types = getenv("LUME_METAL_SIM_WRONG_TYPES");
	if (sim.wrong_types && strcmp(sim.wrong_types, "1") == 0)
		sim.wrong_types = "maxThreadgroupMemoryLength";
	sim.no_device = sim_number("LUME_METAL_SIM_NO_DEVICE", 0) != 0;
}

/* ---- the methods ---- */

static struct sim_device *sim_dev(id self)
{
	return object_getIndexedIvars(self);
}

static const char *sim_utf8(id self, SEL cmd)
{
	(void)cmd;
	return object_getIndexedIvars(self);
}

static unsigned long sim_count(id self, SEL cmd)
{
	(void)cmd;
	return ((struct sim_array *)object_getIndexedIvars(self))->count;
}

static id sim_object_at(id self, SEL cmd, unsigned long i)
{
	struct sim_array *a = object_getIndexedIvars(self);

	(void)cmd;
	return i < a->count ? a->items[i] : nil;
}

static IMP sim_lookup(id obj, SEL sel);

/* The family table, then state derived from it through the device's own supportsFamily:. */
static void sim_init_families(id self, SEL cmd)
{
	struct sim_device *d = sim_dev(self);
	SEL fam = sel_registerName("supportsFamily:");
	IMP imp;

	(void)cmd;
	memcpy(d->families, sim.families, sizeof d->families);
	d->nfamilies = sim.nfamilies;
	d->families_ready = 1;
	imp = sim_lookup(self, fam);
	d->apple7_at_init = imp && LM_FN(BOOL (*)(id, SEL, long), imp)(self, fam, 1007L);
}

static BOOL sim_apple7_at_init(id self, SEL cmd)
{
	(void)cmd;
	return (BOOL)sim_dev(self)->apple7_at_init;
}

static BOOL sim_supports_family(id self, SEL cmd, long family)
{
	struct sim_device *d = sim_dev(self);

	(void)cmd;
	for (int i = 0; d->families_ready && i < d->nfamilies; i++)
		if (d->families[i] == family)
			return (BOOL)1;
	return (BOOL)0;
}

static id sim_name(id self, SEL cmd)
{
	(void)cmd;
	return sim_dev(self)->name;
}

static unsigned long sim_max_threadgroup(id self, SEL cmd)
{
	(void)cmd;
	return sim_dev(self)->max_threadgroup;
}

static unsigned long sim_max_buffer(id self, SEL cmd)
{
	(void)cmd;
	return sim_dev(self)->max_buffer;
}

static uint64_t sim_working_set(id self, SEL cmd)
{
	(void)cmd;
	return sim_dev(self)->working_set;
}

static BOOL sim_unified(id self, SEL cmd)
{
	(void)cmd;
	return (BOOL)sim_dev(self)->unified;
}

static const struct sim_method {
	const char *name;
	IMP imp;
	const char *types;
} sim_device_methods[] = {
	{ "initGPUFamilySupport", LM_IMP(sim_init_families), "v16@0:8" },
	{ "supportsFamily:", LM_IMP(sim_supports_family), "C24@0:8q16" },
	{ "name", LM_IMP(sim_name), "@16@0:8" },
	{ "maxThreadgroupMemoryLength", LM_IMP(sim_max_threadgroup), "Q16@0:8" },
	{ "maxBufferLength", LM_IMP(sim_max_buffer), "Q16@0:8" },
	{ "recommendedMaxWorkingSetSize", LM_IMP(sim_working_set), "Q16@0:8" },
	{ "hasUnifiedMemory", LM_IMP(sim_unified), "C16@0:8" },
	{ "lmsimApple7AtInit", LM_IMP(sim_apple7_at_init), "C16@0:8" },
};

/* sim_types_of: the TYPES of a NAME=TYPES entry of LIST, copied into buf, or NULL. */
static const char *sim_types_of(const char *list, const char *name, char *buf, size_t size)
{
	size_t n = strlen(name), len;

	for (const char *p = list; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
		if (strncmp(p, name, n) != 0 || p[n] != '=')
			continue;
		len = strcspn(p + n + 1, ",");
		if (len >= size)
			sim_die("LUME_METAL_SIM_WRONG_TYPES", list);
		memcpy(buf, p + n + 1, len);
		buf[len] = '\0';
		return buf;
	}
	return NULL;
}

static void sim_add(Class cls, const char *name, IMP imp, const char *types)
{
	char own_types[512];

	if (sim.omit && sim_in_list(sim.omit, name))
		return;
	if (sim.wrong_types && sim_types_of(sim.wrong_types, name, own_types, sizeof own_types)) {
		types = own_types;
	} else if (sim.wrong_types && sim_in_list(sim.wrong_types, name)) {
		if (strcmp(name, "supportsFamily:") == 0)
			types = "C24@0:8d16";
		else if (strcmp(name, "initGPUFamilySupport") == 0)
			types = "@16@0:8";
		else
			types = "d16@0:8";
	}
	class_addMethod(cls, sel_registerName(name), imp, types);
}

static Class sim_class(Class super, const char *name)
{
	Class cls = objc_allocateClassPair(super, name, 0);

	if (cls == Nil) {
		fprintf(stderr, "[metal-sim] cannot create class %s\n", name);
		exit(70);
	}
	return cls;
}

static void sim_register_classes(void)
{
	const char *base = getenv("LUME_METAL_SIM_BASE_NAME");
	Class root = sim_class(Nil, "MTLSimObject");
	size_t i, n = sizeof sim_device_methods / sizeof sim_device_methods[0];

	/* A root class declares its isa itself (GCC's runtime starts instance_size at 0). */
	if (!class_addIvar(root, "isa", sizeof(Class), 3, "#")) {
		fprintf(stderr, "[metal-sim] cannot add isa to MTLSimObject\n");
		exit(70);
	}
	objc_registerClassPair(root);
	sim_string_cls = sim_class(root, "MTLSimString");
	class_addMethod(sim_string_cls, sel_registerName("UTF8String"), LM_IMP(sim_utf8), "r*16@0:8");
	objc_registerClassPair(sim_string_cls);
	sim_array_cls = sim_class(root, "MTLSimArray");
	class_addMethod(sim_array_cls, sel_registerName("count"), LM_IMP(sim_count), "Q16@0:8");
	class_addMethod(sim_array_cls, sel_registerName("objectAtIndex:"), LM_IMP(sim_object_at),
	    "@24@0:8Q16");
	objc_registerClassPair(sim_array_cls);

	sim_base_cls = sim_class(root, base ? base : "_MTLDevice");
	for (i = 0; i < n; i++)
		sim_add(sim_base_cls, sim_device_methods[i].name, sim_device_methods[i].imp,
		    sim_device_methods[i].types);
	objc_registerClassPair(sim_base_cls);

	sim_paravirt_cls = sim_class(sim_base_cls, "AppleParavirtDevice");
	for (i = 0; i < n; i++)
		if (sim_in_list(sim.own, sim_device_methods[i].name))
			sim_add(sim_paravirt_cls, sim_device_methods[i].name,
			    sim_device_methods[i].imp, sim_device_methods[i].types);
	objc_registerClassPair(sim_paravirt_cls);

	sim_sibling_cls = sim_class(sim_base_cls, "MTLSimSiblingDevice");
	objc_registerClassPair(sim_sibling_cls);
}

/* ---- devices ---- */

/*
 * GCC's libobjc looks methods up without a lock, and a class_addMethod on another thread frees
 * the class's old dispatch table under the reader (it defers the free only for threads it
 * started itself). Apple's runtime makes such lookups safe; the simulation gets the same by
 * holding the runtime's own (recursive, exported) lock while it looks up, and never while it
 * calls the method, which may itself change classes.
 */
extern objc_mutex_t __objc_runtime_mutex;

static IMP sim_lookup(id obj, SEL sel)
{
	IMP imp;

	objc_mutex_lock(__objc_runtime_mutex);
	imp = lm_objc_imp(obj, sel);
	objc_mutex_unlock(__objc_runtime_mutex);
	return imp;
}

static id sim_string(const char *s)
{
	size_t n = strlen(s) + 1;
	id str = class_createInstance(sim_string_cls, n);

	if (str != nil)
		memcpy(object_getIndexedIvars(str), s, n);
	return str;
}

/* sim_device_init: what -[AppleParavirtDevice init...] does: limits, then the family table. */
static id sim_device_new(Class cls, const char *name)
{
	SEL init = sel_registerName("initGPUFamilySupport");
	id dev = class_createInstance(cls, sizeof(struct sim_device));
	struct sim_device *d;
	IMP imp;

	if (dev == nil)
		return nil;
	d = sim_dev(dev);
	d->max_threadgroup = sim.max_threadgroup;
	d->max_buffer = sim.max_buffer;
	d->working_set = sim.working_set;
	d->unified = (unsigned char)sim.unified;
	d->name = sim_string(name);
	imp = sim_lookup(dev, init);
	if (imp)
		LM_FN(void (*)(id, SEL), imp)(dev, init);
	else
		sim_init_families(dev, init);
	return dev;
}

static void sim_default_run(void)
{
	if (!sim.no_device)
		sim_default_device = sim_device_new(sim_paravirt_cls, sim.name);
}

static void sim_all_run(void)
{
	struct sim_array *a;

	pthread_once(&sim_default_once, sim_default_run);
	sim_all_devices = class_createInstance(sim_array_cls, sizeof(struct sim_array));
	if (sim_all_devices == nil)
		return;
	a = object_getIndexedIvars(sim_all_devices);
	if (sim_default_device != nil)
		a->items[a->count++] = sim_default_device;
}

SIM_EXPORT id MTLCreateSystemDefaultDevice(void)
{
	pthread_once(&sim_default_once, sim_default_run);
	return sim_default_device;
}

SIM_EXPORT id MTLCopyAllDevices(void)
{
	pthread_once(&sim_all_once, sim_all_run);
	return sim_all_devices;
}

SIM_EXPORT id lmsim_new_device(const char *class_name)
{
	if (strcmp(class_name, "AppleParavirtDevice") == 0)
		return sim_device_new(sim_paravirt_cls, sim.name);
	if (strcmp(class_name, "MTLSimSiblingDevice") == 0)
		return sim_device_new(sim_sibling_cls, "Simulated sibling device");
	return nil;
}

SIM_EXPORT void lmsim_free_device(id device)
{
	if (device == nil)
		return;
	object_dispose(sim_dev(device)->name);
	object_dispose(device);
}

__attribute__((constructor)) static void sim_constructor(void)
{
	sim_read_config();
	sim_register_classes();
	if (sim_number("LUME_METAL_SIM_EARLY_DEVICE", 0) != 0) {
		/* Through the PLT, so a preloaded shim's MTLCreateSystemDefaultDevice is the one called. */
		fprintf(stderr, "[metal-sim] creating the default device in the library constructor\n");
		if (MTLCreateSystemDefaultDevice() == nil && !sim.no_device)
			fprintf(stderr, "[metal-sim] the early device is nil\n");
	}
}
