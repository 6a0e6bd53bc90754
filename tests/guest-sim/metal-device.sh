# shellcheck shell=sh
# SIMULATION helper for lume-metal tests on Linux, sourced by the simulated llama.cpp tools in
# bin/ (llama-bench, llama-perplexity): which Metal path a process of theirs takes, and the
# ggml_metal_device_init lines llama.cpp prints on stderr for it. Not part of any real tool.

# sim_metal_arm NAME: sim_arm becomes "shim" when the shim's variables reach this process as
# run-with-shim sets them (a family ceiling, the shim library preloaded, LUME_METAL_PROCESSES
# naming NAME), else "stock"; LUME_METAL_SIM_BENCH=host makes it "host" (bare metal). Sets
# sim_gpu, sim_fam and sim_on for that path.
sim_metal_arm() {
	sim_arm=stock
	case ${LUME_METAL_APPLE_FAMILY_MAX:-} in 10[0-9][0-9]) sim_arm=shim ;; esac
	case "${DYLD_INSERT_LIBRARIES:-}${LD_PRELOAD:-}" in *liblumemetal*) ;; *) sim_arm=stock ;; esac
	case ",${LUME_METAL_PROCESSES:-$1}," in *,"$1",*) ;; *) sim_arm=stock ;; esac
	[ "${LUME_METAL_SIM_BENCH:-}" = host ] && sim_arm=host
	case $sim_arm in
	stock) sim_gpu="Apple Paravirtual device" sim_fam="Apple5  (1005)" sim_on=false ;;
	shim) sim_gpu="Apple Paravirtual device" sim_fam="Apple9  (1009)" sim_on=true ;;
	host) sim_gpu="Apple M1 Ultra" sim_fam="Apple7  (1007)" sim_on=true ;;
	esac
}

# sim_metal_lines NAME: the shim's activation line (shim arm) and the device lines, on stderr.
sim_metal_lines() {
	[ "$sim_arm" = shim ] && printf '%s %s[%s:%s] [lume-metal] active in %s: appleFamilyMax=%s\n' \
		"$(date '+%Y-%m-%d %H:%M:%S.000')" "$1" "$$" "$$" "$1" "$LUME_METAL_APPLE_FAMILY_MAX" >&2
	cat >&2 <<ERR
ggml_metal_device_init: tensor API disabled for pre-M5 and pre-A19 devices
ggml_metal_library_init: using embedded metal library
ggml_metal_device_init: GPU name:   MTL0 ($sim_gpu)
ggml_metal_device_init: GPU family: MTLGPUFamily$sim_fam
ggml_metal_device_init: GPU family: MTLGPUFamilyCommon3 (3003)
ggml_metal_device_init: simdgroup reduction   = $sim_on
ggml_metal_device_init: simdgroup matrix mul. = $sim_on
ggml_metal_device_init: has unified memory    = true
ggml_metal_device_init: has bfloat            = $sim_on
ggml_metal_device_init: has tensor            = false
ggml_metal_device_init: use residency sets    = true
ggml_metal_device_init: use shared buffers    = true
ERR
}
