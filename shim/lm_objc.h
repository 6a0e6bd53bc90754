/*
 * lm_objc.h: the slice of the Objective-C runtime API that the shim, the probe and the tests use,
 * the same on Apple's runtime and on GCC's libobjc.
 *
 * On GCC's libobjc, and with a full macOS SDK, this is <objc/runtime.h>. The zig macOS headers
 * ship only <objc/objc.h> (id, SEL, Class, BOOL, IMP), so there the few functions used are
 * declared here; they are plain C functions exported by /usr/lib/libobjc.A.dylib.
 *
 * Messages are sent by looking up the IMP with class_getMethodImplementation and calling it
 * through a cast to the method's real C type; that works on both runtimes (there is no
 * objc_msgSend on GCC's runtime, and objc_msg_lookup does not exist on Apple's).
 */
#ifndef LM_OBJC_H
#define LM_OBJC_H

#include <stddef.h>

#if defined(__APPLE__) && !(defined(__has_include) && __has_include(<objc/runtime.h>))
#include <objc/objc.h>
typedef struct objc_method *Method;
Class objc_getClass(const char *name);
SEL sel_registerName(const char *name);
const char *sel_getName(SEL sel);
BOOL sel_isEqual(SEL a, SEL b);
Class object_getClass(id obj);
const char *class_getName(Class cls);
Class class_getSuperclass(Class cls);
Method class_getInstanceMethod(Class cls, SEL sel);
IMP class_getMethodImplementation(Class cls, SEL sel);
BOOL class_respondsToSelector(Class cls, SEL sel);
BOOL class_addMethod(Class cls, SEL sel, IMP imp, const char *types);
Method *class_copyMethodList(Class cls, unsigned int *count);
SEL method_getName(Method m);
IMP method_getImplementation(Method m);
IMP method_setImplementation(Method m, IMP imp);
const char *method_getTypeEncoding(Method m);
#else
#include <objc/runtime.h>
#endif

#ifndef nil
#define nil ((id)0)
#endif
#ifndef Nil
#define Nil ((Class)0)
#endif

/* Function pointers pass through void (*)(void), which GCC exempts from -Wcast-function-type. */
#define LM_FN(type, f) ((type)(void (*)(void))(f))
#define LM_IMP(f) LM_FN(IMP, f)

/*
 * lm_objc_imp: the IMP that answers SEL for OBJ, or NULL when OBJ is nil or its class does not
 * respond to SEL (so a caller never calls a forwarding trampoline by accident).
 */
static inline IMP lm_objc_imp(id obj, SEL sel)
{
	Class cls;

	if (obj == nil || sel == NULL)
		return NULL;
	cls = object_getClass(obj);
	if (cls == Nil || !class_respondsToSelector(cls, sel))
		return NULL;
	return class_getMethodImplementation(cls, sel);
}

#endif
