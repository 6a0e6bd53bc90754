/*
 * lume_metal_shim.h: what liblumemetal exports besides its hooks.
 *
 * A process finds the shim with dlsym(RTLD_DEFAULT, LUME_METAL_SHIM_STATE_SYMBOL); when the
 * symbol is absent the shim is not loaded. The probe uses this to report the shim's state.
 */
#ifndef LUME_METAL_SHIM_H
#define LUME_METAL_SHIM_H

#include <stddef.h>

#define LUME_METAL_SHIM_STATE_SYMBOL "lume_metal_shim_state"
#define LUME_METAL_SHIM_STATE_VERSION 1

/* Bounds of the shim's settings (see design.md, "Shim contract"). */
#define LUME_METAL_APPLE_FIRST 1001L
#define LUME_METAL_APPLE_LIMIT 1999L
#define LUME_METAL_TG_DEFAULT 65536UL
#define LUME_METAL_TG_LIMIT 1048576UL
#define LUME_METAL_WS_LIMIT (1ULL << 50)
#define LUME_METAL_PROCESSES_MAX 512

struct lume_metal_shim_state {
	int version;                       /* LUME_METAL_SHIM_STATE_VERSION */
	int active;                        /* 1 once the device class answers shimmed values */
	char reason[192];                  /* why not active; "" when active */
	char process[64];                  /* this process's name as the shim matched it */
	long apple_family_max;             /* the settings, valid when active */
	unsigned long max_threadgroup_memory;
	int has_working_set;               /* LUME_METAL_RECOMMENDED_WORKING_SET_SIZE was set */
	unsigned long long working_set;
	int has_processes;                 /* LUME_METAL_PROCESSES was set */
	char processes[LUME_METAL_PROCESSES_MAX]; /* its value, comma-separated */
	char device_class[128];            /* the class the hooks went into, when active */
};

/*
 * lume_metal_shim_state: copies the shim's current state into *out (the caller's storage;
 * `size` is sizeof *out as the caller knows it). Returns 0, or -1 when size does not match this
 * version of the struct. Safe from any thread.
 */
typedef int (*lume_metal_shim_state_fn)(struct lume_metal_shim_state *out, size_t size);
int lume_metal_shim_state(struct lume_metal_shim_state *out, size_t size);

#endif
