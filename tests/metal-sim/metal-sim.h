/*
 * metal-sim.h: the test-only part of the SIMULATED libMetal (tests/metal-sim/metal-sim.c).
 * THIS IS NOT APPLE'S METAL. It exists so the shim and probe run on a real Objective-C runtime
 * (GCC's libobjc) on Linux.
 */
#ifndef METAL_SIM_H
#define METAL_SIM_H

#include "../../shim/lm_objc.h"

/* What Metal itself exports (the simulation defines both). */
id MTLCreateSystemDefaultDevice(void);
id MTLCopyAllDevices(void);

/* "SIMULATED libMetal for lume-metal tests; not Apple Metal". */
extern const char lmsim_label[];

/*
 * lmsim_new_device: a new, initialised device of CLASS_NAME ("AppleParavirtDevice" or the
 * sibling "MTLSimSiblingDevice"), not through MTLCreateSystemDefaultDevice. Nil when the class
 * is unknown. The caller owns it and frees it with lmsim_free_device (which accepts nil).
 */
id lmsim_new_device(const char *class_name);
void lmsim_free_device(id device);

#endif
