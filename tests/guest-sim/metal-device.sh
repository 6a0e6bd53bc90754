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
sim_nl='
'
# sim_chomp TEXT: sets sim_v to TEXT without the newlines at its end, as a $(...) gives it.
sim_chomp() {
	sim_v=$1
	while [ "${sim_v%"$sim_nl"}" != "$sim_v" ]; do sim_v=${sim_v%"$sim_nl"}; done
}
# sim_del C TEXT: sets sim_v to TEXT without any character C, as tr -d C gives it.
sim_del() {
	sim_v=$2
	while [ "${sim_v#*"$1"}" != "$sim_v" ]; do sim_v=${sim_v%%"$1"*}${sim_v#*"$1"}; done
}
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
# It starts two processes once the link below exists, the probe and the subshell that captures
# its output, and no file in TMPDIR: the tools run hundreds of times a test suite
# (docs/performance.md: about 5 ms a process here).
sim_metal_arm() {
	sim_build
	sim_say=""
	if [ "${LUME_METAL_SIM_BENCH:-}" = host ]; then
		sim_arm=host sim_gpu="Apple M1 Ultra" sim_fam="Apple7  (1007)" sim_common="Common3 (3003)" sim_metal=""
		sim_red=true sim_mm=true sim_bf=true sim_kernels=simdgroup
		return 0
	fi
	# The tree's probe is in build/linux/ three folders above bin/, as `cd` names it (".." taken
	# off by name); a plain absolute path is cut here, any other goes through cd.
	sim_probe=${LUME_METAL_SIM_PROBE:-}
	if [ -z "$sim_probe" ]; then
		case $0 in
		*//* | */./* | */../*) sim_probe=$(cd "${0%/*}/../../.." && pwd)/build/linux/lume-metal-probe ;;
		/?*/*/*/*/*) sim_probe=${0%/*/*/*/*}/build/linux/lume-metal-probe ;;
		*) sim_probe=$(cd "${0%/*}/../../.." && pwd)/build/linux/lume-metal-probe ;;
		esac
	fi
	# The probe runs under NAME through a link of that name: one kept beside the probe, in
	# .PROBE.names/ (made once; a concurrent run's ln fails harmlessly, the link is the same),
	# else, where that folder cannot be, one in a folder of its own in TMPDIR, removed after.
	sim_l=""
	case $sim_probe in /*) sim_l=${sim_probe%/*}/.${sim_probe##*/}.names/$1 ;; esac
	if [ -n "$sim_l" ] && [ ! -L "$sim_l" ] && [ -f "$sim_probe" ] && [ -w "${sim_probe%/*}" ]; then
		[ -d "${sim_l%/*}" ] || mkdir "${sim_l%/*}" 2>/dev/null
		ln -s "../${sim_probe##*/}" "$sim_l" 2>/dev/null
	fi
	# One capture, no file: its stderr, then (after it ended) a mark and its stdout. The shell's
	# own lines about it ("not found", "Segmentation fault") come with its stderr, as they did
	# when that was a file.
	sim_mark="$sim_nl(lume-metal-probe stdout)"
	sim_d=""
	if [ -z "$sim_l" ] || [ ! -L "$sim_l" ] || [ ! -f "$sim_l" ] || [ ! -x "$sim_l" ]; then
		sim_d=$(mktemp -d "${TMPDIR:-/tmp}/sim-metal.XXXXXX") || exit 1
		sim_l=$sim_d/$1
		ln -s "$sim_probe" "$sim_l"
	fi
	sim_out=$( { sim_json=$(LUME_METAL_STATE_DIR='' "$sim_l"); printf '%s%s' "$sim_mark" "$sim_json"; } 2>&1)
	[ -z "$sim_d" ] || rm -rf "$sim_d"
	sim_json=${sim_out##*"$sim_mark"} sim_stderr=${sim_out%"$sim_mark"*}
	# sim_say: its stderr lines that start "[lume-metal] " (as grep picked them).
	sim_r=$sim_stderr
	while [ -n "$sim_r" ]; do
		sim_line=${sim_r%%"$sim_nl"*}
		case $sim_r in *"$sim_nl"*) sim_r=${sim_r#*"$sim_nl"} ;; *) sim_r="" ;; esac
		case $sim_line in '[lume-metal] '*) sim_say=${sim_say:+$sim_say$sim_nl}$sim_line ;; esac
	done
	case $sim_json in
	*'"families":{'*) ;;
	*)
		# its first 3 stderr lines, without the newlines that end them
		sim_err="" sim_r=$sim_stderr sim_i=0
		while [ "$sim_i" -lt 3 ]; do
			case $sim_r in
			*"$sim_nl"*) sim_err=$sim_err${sim_r%%"$sim_nl"*}$sim_nl sim_r=${sim_r#*"$sim_nl"} ;;
			*) sim_err=$sim_err$sim_r; break ;;
			esac
			sim_i=$((sim_i + 1))
		done
		sim_chomp "$sim_err"
		sim_err=$sim_v
		printf '%s (SIMULATION): no Metal device from %s: %s (not simulated; make shim)\n' "$1" "$sim_probe" "$sim_err" >&2
		exit 1
		;;
	esac
	# The facts, from the probe's JSON: the families object (after its last "families":{, up to
	# the first }) key by key, the highest Apple, Common and Metal family that is true; the
	# device's name; whether the shim is active.
	sim_r=${sim_json##*'"families":{'}
	sim_r=${sim_r%%'}'*},
	sim_apple=0 sim_c=0 sim_m=0 sim_a6=false sim_a7=false sim_m3=false
	while [ -n "$sim_r" ]; do
		sim_kv=${sim_r%%,*}
		sim_r=${sim_r#*,}
		[ "${sim_kv##*:}" = true ] || continue
		sim_del '"' "${sim_kv%%:*}"
		sim_k=$sim_v
		case $sim_k in
		Apple6) sim_a6=true ;;
		Apple7) sim_a7=true ;;
		Metal3) sim_m3=true ;;
		esac
		case $sim_k in
		Apple*) sim_n=${sim_k#Apple} ;;
		Common*) sim_n=${sim_k#Common} ;;
		Metal*) sim_n=${sim_k#Metal} ;;
		*) continue ;;
		esac
		case $sim_n in '' | *[!0-9]*) continue ;; esac
		while [ "${sim_n#0}" != "$sim_n" ] && [ -n "${sim_n#0}" ]; do sim_n=${sim_n#0}; done
		case $sim_k in
		Apple*) [ "$sim_n" -le "$sim_apple" ] || sim_apple=$sim_n ;;
		Common*) [ "$sim_n" -le "$sim_c" ] || sim_c=$sim_n ;;
		*) [ "$sim_n" -le "$sim_m" ] || sim_m=$sim_n ;;
		esac
	done
	sim_arm=stock
	case $sim_json in *'"shim":{"active":true'*) sim_arm=shim ;; esac
	sim_gpu=${sim_json##*'"device":{"name":"'}
	sim_gpu=${sim_gpu%%\"*}
	sim_fam="" sim_common="" sim_metal=""
	[ "$sim_apple" -eq 0 ] || sim_fam="Apple$sim_apple  ($((1000 + sim_apple)))"
	[ "$sim_c" -eq 0 ] || sim_common="Common$sim_c ($((3000 + sim_c)))"
	[ "$sim_m" -eq 0 ] || sim_metal="Metal$sim_m  ($((5000 + sim_m)))"
	sim_red=false sim_mm=$sim_a7 sim_bf=false
	[ "$sim_a7" = false ] && [ "$sim_m3" = false ] || sim_red=true
	[ "$sim_m3" = false ] && [ "$sim_a6" = false ] || sim_bf=true
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
