# shellcheck shell=sh disable=SC2034 # sourced: the variables are its callers'
# SIMULATION helper for lume-metal tests on Linux, sourced by the simulated llama.cpp tools in
# bin/ (llama-bench, llama-perplexity): which Metal device a process of theirs gets, and the
# ggml_metal_device_init lines llama.cpp prints on stderr for it. Not part of any real tool.
#
# The device is the one the shim really produced: the real lume-metal probe
# (build/linux/lume-metal-probe, on the SIMULATED libMetal, `make shim`) runs with this process's
# environment (so LD_PRELOAD brings the shim in, or not, and the shim reads its variables and
# LUME_METAL_SIM_* shapes the stock device) under this process's own name (a link named as it,
# since the shim matches LUME_METAL_PROCESSES against the process name). The shim decides as it
# does in the real process: a missing, malformed or out-of-range variable or a name it is not
# scoped to leaves the device stock, and its "[lume-metal] ..." line, when it says one, is
# passed on. From the device's answers come llama.cpp's choices (docs/metal-facts.md):
# simdgroup reduction = Apple7 or Metal3, simdgroup matrix mul. = Apple7, bfloat = Metal3 or
# Apple6, the highest Apple, Common and Metal family. The shim's LUME_METAL_STATE_DIR is not
# passed on: the probe's pid is not this process's. LUME_METAL_SIM_PROBE names the probe for a
# copy of these tools outside this tree (default: the tree's, from the tool's own path).
#
# The build, LUME_METAL_SIM_LLAMA_BUILD, decides the lines' format, as llama.cpp's own Metal
# backend does (ggml/src/ggml-metal/):
#   10167 (default; commit ee3d1b54c, the evidence's build, ../shared/fixtures/llama-bench/)
#       ggml-metal-device.m, after the backend's split into a device part (PR 15995, mid-September
#       2025, about b6500): "ggml_metal_device_init: GPU name:   MTL0 (Apple Paravirtual
#       device)", "ggml_metal_device_init: simdgroup matrix mul. = true", ... (the fixtures'
#       lines, docs/metal-facts.md);
#   5970 (commit 07a19e27, Homebrew's of July 2025: llama.cpp issue 14966) ggml-metal.m before it:
#       "ggml_metal_init: allocating", "found device", "picking default device",
#       "ggml_metal_load_library: using embedded metal library", "ggml_metal_init: GPU name:
#       Apple Paravirtual device" (the device's name alone), the families, "ggml_metal_init:
#       simdgroup reduction   = ...", "simdgroup matrix mul. = ...", "has residency sets    =
#       true", "has bfloat", "use bfloat", "hasUnifiedMemory      = true" (as its GGML_LOG_INFO
#       calls print them; the working-set line is left out in both formats).
# sim_build sets sim_build_number and sim_build_commit for it (llama-bench's build_number and
# build_commit, the "build: N (COMMIT)" line); another value is not simulated (exit 1).
sim_build() {
	case ${LUME_METAL_SIM_LLAMA_BUILD:-10167} in
	10167) sim_build_number=10167 sim_build_commit=ee3d1b54c ;;
	5970) sim_build_number=5970 sim_build_commit=07a19e27 ;;
	*)
		printf '%s (SIMULATION): LUME_METAL_SIM_LLAMA_BUILD=%s is not simulated (10167 or 5970)\n' "${0##*/}" "$LUME_METAL_SIM_LLAMA_BUILD" >&2
		exit 1
		;;
	esac
}

# sim_metal_arm NAME: runs the probe as NAME and sets sim_arm ("shim" when the shim is active in
# the process, "stock" otherwise; LUME_METAL_SIM_BENCH=host makes it "host", bare metal),
# sim_gpu, sim_fam (the Apple family line), sim_common, sim_metal ("" or the Metal family
# line), sim_red, sim_mm, sim_bf (true/false), sim_kernels (the kernels llama.cpp takes:
# "simdgroup" with simdgroup matrix mul., else "plain") and sim_say (the shim's stderr lines);
# and the build's (sim_build).
# A probe that cannot run, or finds no device, ends the simulation (exit 1): not simulated.
sim_metal_arm() {
	sim_build
	sim_say=""
	if [ "${LUME_METAL_SIM_BENCH:-}" = host ]; then
		sim_arm=host sim_gpu="Apple M1 Ultra" sim_fam="Apple7  (1007)" sim_common="Common3 (3003)" sim_metal=""
		sim_red=true sim_mm=true sim_bf=true sim_kernels=simdgroup
		return 0
	fi
	sim_probe=${LUME_METAL_SIM_PROBE:-$(cd "${0%/*}/../../.." && pwd)/build/linux/lume-metal-probe}
	sim_d=$(mktemp -d "${TMPDIR:-/tmp}/sim-metal.XXXXXX") || exit 1
	ln -s "$sim_probe" "$sim_d/$1"
	LUME_METAL_STATE_DIR='' "$sim_d/$1" >"$sim_d/out" 2>"$sim_d/err"
	sim_json=$(cat "$sim_d/out")
	sim_say=$(grep '^\[lume-metal\] ' "$sim_d/err")
	sim_err=$(head -n 3 "$sim_d/err")
	rm -rf "$sim_d"
	case $sim_json in
	*'"families":{'*) ;;
	*)
		printf '%s (SIMULATION): no Metal device from %s: %s (not simulated; make shim)\n' "$1" "$sim_probe" "$sim_err" >&2
		exit 1
		;;
	esac
	# One line a fact, from the probe's JSON (the families object, the device's name, the shim).
	sim_facts=$(printf '%s\n' "$sim_json" | awk '{
		f = $0; sub(/.*"families":\{/, "", f); sub(/\}.*/, "", f)
		n = split(f, kv, ",")
		for (i = 1; i <= n; i++) {
			k = kv[i]; v = k; gsub(/"/, "", k); sub(/:.*/, "", k); sub(/.*:/, "", v)
			if (v != "true") continue
			has[k] = 1
			if (k ~ /^Apple[0-9]+$/ && substr(k, 6) + 0 > apple) apple = substr(k, 6) + 0
			if (k ~ /^Common[0-9]+$/ && substr(k, 7) + 0 > common) common = substr(k, 7) + 0
			if (k ~ /^Metal[0-9]+$/ && substr(k, 6) + 0 > metal) metal = substr(k, 6) + 0
		}
		name = $0; sub(/.*"device":\{"name":"/, "", name); sub(/".*/, "", name)
		print (index($0, "\"shim\":{\"active\":true") ? "shim" : "stock")
		print name
		print (apple ? sprintf("Apple%d  (%d)", apple, 1000 + apple) : "")
		print (common ? sprintf("Common%d (%d)", common, 3000 + common) : "")
		print (metal ? sprintf("Metal%d  (%d)", metal, 5000 + metal) : "")
		print ((has["Apple7"] || has["Metal3"]) ? "true" : "false")
		print (has["Apple7"] ? "true" : "false")
		print ((has["Metal3"] || has["Apple6"]) ? "true" : "false")
	}')
	{
		IFS= read -r sim_arm; IFS= read -r sim_gpu; IFS= read -r sim_fam; IFS= read -r sim_common
		IFS= read -r sim_metal; IFS= read -r sim_red; IFS= read -r sim_mm; IFS= read -r sim_bf
	} <<FACTS
$sim_facts
FACTS
	sim_kernels=plain
	[ "$sim_mm" != true ] || sim_kernels=simdgroup
}

# sim_metal_lines: the shim's own lines, when it said any, and the device lines of the build
# (sim_build), on stderr.
sim_metal_lines() {
	[ -z "$sim_say" ] || printf '%s\n' "$sim_say" >&2
	sim_f=ggml_metal_device_init sim_name="MTL0 ($sim_gpu)"
	[ "$sim_build_number" -ge 6500 ] || sim_f=ggml_metal_init sim_name=$sim_gpu
	{
		if [ "$sim_f" = ggml_metal_init ]; then
			echo "ggml_metal_init: allocating"
			echo "ggml_metal_init: found device: $sim_gpu"
			echo "ggml_metal_init: picking default device: $sim_gpu"
			echo "ggml_metal_load_library: using embedded metal library"
		else
			echo "ggml_metal_device_init: tensor API disabled for pre-M5 and pre-A19 devices"
			echo "ggml_metal_library_init: using embedded metal library"
		fi
		echo "$sim_f: GPU name:   $sim_name"
		[ -z "$sim_fam" ] || echo "$sim_f: GPU family: MTLGPUFamily$sim_fam"
		[ -z "$sim_common" ] || echo "$sim_f: GPU family: MTLGPUFamily$sim_common"
		[ -z "$sim_metal" ] || echo "$sim_f: GPU family: MTLGPUFamily$sim_metal"
		echo "$sim_f: simdgroup reduction   = $sim_red"
		echo "$sim_f: simdgroup matrix mul. = $sim_mm"
		if [ "$sim_f" = ggml_metal_init ]; then
			echo "ggml_metal_init: has residency sets    = true"
			echo "ggml_metal_init: has bfloat            = $sim_bf"
			echo "ggml_metal_init: use bfloat            = $sim_bf"
			echo "ggml_metal_init: hasUnifiedMemory      = true"
		else
			echo "ggml_metal_device_init: has unified memory    = true"
			echo "ggml_metal_device_init: has bfloat            = $sim_bf"
			echo "ggml_metal_device_init: has tensor            = false"
			echo "ggml_metal_device_init: use residency sets    = true"
			echo "ggml_metal_device_init: use shared buffers    = true"
		fi
	} >&2
}
