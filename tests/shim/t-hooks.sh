#!/bin/sh
# How the hooks go in: a missing class, public selector or method type leaves the process stock;
# a missing (or mistyped) private initGPUFamilySupport leaves the interposers as the route; the
# device class's hooks go in before the original initGPUFamilySupport runs; only the device's
# concrete class changes, whether it inherits or defines each method; devices made before and
# after the constructor, through either interposed function, and from 8 threads.
# shellcheck disable=SC1091 # sourced files are checked on their own
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/shim/common.sh"

F=LUME_METAL_APPLE_FAMILY_MAX W=LUME_METAL_RECOMMENDED_WORKING_SET_SIZE

# Missing pieces: the simulated device is built without them.
sprobe nobase $F=1009 LUME_METAL_SIM_BASE_NAME=_MTLDeviceRenamed
stock_ok "no _MTLDevice class" nobase "class _MTLDevice not found$"
sprobe notg $F=1009 LUME_METAL_SIM_OMIT=maxThreadgroupMemoryLength
rc_is "no maxThreadgroupMemoryLength: exit 0" notg 0
has "no maxThreadgroupMemoryLength: stock families, inactive" "$T/notg.out" \
    '"Apple5":true,"Apple6":false' '"maxThreadgroupMemoryLength":null' '"shim":{"active":false'
lines_are "no maxThreadgroupMemoryLength: one line says why" "$T/notg.err" \
    '^\[lume-metal\] lume-metal-probe stays stock: AppleParavirtDevice has no method maxThreadgroupMemoryLength$' 1
probe nows0 LUME_METAL_SIM_OMIT=recommendedMaxWorkingSetSize
device_part nows0 >"$T/nows.want"
sprobe nows $F=1009 $W=16000000000 LUME_METAL_SIM_OMIT=recommendedMaxWorkingSetSize
same_device "no recommendedMaxWorkingSetSize, override set: stock" nows "$T/nows.want"
lines_are "no recommendedMaxWorkingSetSize, override set: says why" "$T/nows.err" \
    'stays stock: AppleParavirtDevice has no method recommendedMaxWorkingSetSize$' 1
sprobe nowsok $F=1009 LUME_METAL_SIM_OMIT=recommendedMaxWorkingSetSize
has "no recommendedMaxWorkingSetSize, override unset: not needed, active" "$T/nowsok.out" \
    '"Apple9":true' '"recommendedMaxWorkingSetSize":null' '"shim":{"active":true'
sprobe types $F=1009 LUME_METAL_SIM_WRONG_TYPES=1
stock_ok "maxThreadgroupMemoryLength of an unexpected type" types \
    'AppleParavirtDevice maxThreadgroupMemoryLength has unexpected type "d16@0:8"$'
sprobe nofam $F=1009 LUME_METAL_SIM_OMIT=supportsFamily:
rc_is "no supportsFamily:: exit 0" nofam 0
has "no supportsFamily:: families unanswered, inactive" "$T/nofam.out" '"Apple1":null' '"shim":{"active":false'
lines_are "no supportsFamily:: one line says why" "$T/nofam.err" \
    '^\[lume-metal\] lume-metal-probe stays stock: AppleParavirtDevice has no method supportsFamily:$' 1
sprobe famtype $F=1009 LUME_METAL_SIM_WRONG_TYPES=supportsFamily:
stock_ok "supportsFamily: taking a double" famtype \
    'AppleParavirtDevice supportsFamily: has unexpected type "C24@0:8d16"$'

# Without the private initGPUFamilySupport (or with one of another type), the interposers alone
# still serve a process that gets its device from MTLCreateSystemDefaultDevice/MTLCopyAllDevices.
for how in OMIT WRONG_TYPES; do
	sprobe "noinit$how" $F=1009 "LUME_METAL_SIM_$how=initGPUFamilySupport"
	rc_is "initGPUFamilySupport ${how}: exit 0" "noinit$how" 0
	same_device "initGPUFamilySupport ${how}: changed through MTLCreateSystemDefaultDevice" "noinit$how" "$T/shim1009.want"
	has "initGPUFamilySupport ${how}: the shim is active" "$T/noinit$how.out" '"shim":{"active":true,"appleFamilyMax":1009'
	lines_are "initGPUFamilySupport ${how}: the activation line names the route" "$T/noinit$how.err" \
	    '^\[lume-metal\] active in lume-metal-probe \(AppleParavirtDevice\): .* \(through MTLCreateSystemDefaultDevice/MTLCopyAllDevices only: _MTLDevice has no initGPUFamilySupport of the expected type\)$' 1
	lines_are "initGPUFamilySupport ${how}: nothing else on stderr" "$T/noinit$how.err" '.' 1
done
run noinitall env $F=1009 LUME_METAL_SIM_OMIT=initGPUFamilySupport "$HARNESS" late "$SHIM" all
has "no initGPUFamilySupport, device made before the shim, then MTLCopyAllDevices: changed" "$T/noinitall.out" \
    'after-load class=AppleParavirtDevice apple5=1 apple6=0 apple9=0 apple10=0 common3=1 metal3=0 tg=32768' \
    'after-call class=AppleParavirtDevice apple5=1 apple6=1 apple9=1 apple10=0 common3=1 metal3=0 tg=65536'
sprobe noinitearly $F=1009 LUME_METAL_SIM_OMIT=initGPUFamilySupport LUME_METAL_SIM_EARLY_DEVICE=1
same_device "no initGPUFamilySupport, device made in libMetal's constructor: changed" noinitearly "$T/shim1009.want"

# The order: the device class's hooks, then the original initGPUFamilySupport, which here asks
# supportsFamily: Apple7 to derive its state (as the published shim does it).
run order env LD_PRELOAD="$SHIM" $F=1009 "$HARNESS" init-order
has "hooks before the original initialiser: it saw the shimmed Apple7" "$T/order.out" 'apple7-at-init=1 apple7-now=1'
run order0 env "$HARNESS" init-order
has "without the shim: the initialiser saw the stock Apple7" "$T/order0.out" 'apple7-at-init=0 apple7-now=0'
run order1 env LD_PRELOAD="$SHIM" $F=1009 LUME_METAL_SIM_OMIT=initGPUFamilySupport "$HARNESS" init-order
has "interposers only: the device initialised stock, answers shimmed after" "$T/order1.out" 'apple7-at-init=0 apple7-now=1'

# Inherited or own methods: the shim changes the concrete class either way, the sibling never.
for own in "" "supportsFamily:,maxThreadgroupMemoryLength,recommendedMaxWorkingSetSize" \
    "maxThreadgroupMemoryLength,recommendedMaxWorkingSetSize"; do
	label=${own:-nothing}
	sprobe "own$label" $F=1009 $W=16000000000 LUME_METAL_SIM_OWN="$own"
	sed 's/"recommendedMaxWorkingSetSize":12009342976/"recommendedMaxWorkingSetSize":16000000000/' \
	    "$T/shim1009.want" >"$T/own.want"
	same_device "concrete class defines $label: changed" "own$label" "$T/own.want"
	run "sib$label" env LD_PRELOAD="$SHIM" $F=1009 $W=16000000000 LUME_METAL_SIM_OWN="$own" \
	    "$HARNESS" sibling
	has "concrete class defines $label: default device changed, sibling class stock, _MTLDevice untouched" \
	    "$T/sib$label.out" \
	    'default class=AppleParavirtDevice apple5=1 apple6=1 apple9=1 apple10=0 common3=1 metal3=0 tg=65536 ws=16000000000' \
	    'sibling class=MTLSimSiblingDevice apple5=1 apple6=0 apple9=0 apple10=0 common3=1 metal3=0 tg=32768 ws=12009342976' \
	    'base-unchanged=1'
	rc_is "concrete class defines $label: harness exit 0" "sib$label" 0
done

# A device made in libMetal's constructor, before the shim's constructor has run.
sprobe early $F=1009 LUME_METAL_SIM_EARLY_DEVICE=1
same_device "device created before the constructor: changed" early "$T/shim1009.want"
lines_are "device created before the constructor: it was" "$T/early.err" \
    '^\[metal-sim\] creating the default device in the library constructor$' 1
lines_are "device created before the constructor: one activation line" "$T/early.err" '^\[lume-metal\] active' 1

# A device initialised before the shim is loaded at all; the interposers must still cover it.
for how in create all; do
	if [ $how = all ]; then set -- all; else set --; fi
	run "late$how" env $F=1009 "$HARNESS" late "$SHIM" "$@"
	has "device initialised before the shim, then MTL$how: stock until asked again" "$T/late$how.out" \
	    'before-load class=AppleParavirtDevice apple5=1 apple6=0 apple9=0 apple10=0 common3=1 metal3=0 tg=32768' \
	    'after-load class=AppleParavirtDevice apple5=1 apple6=0 apple9=0 apple10=0 common3=1 metal3=0 tg=32768'
	has "device initialised before the shim, then MTL$how: changed" "$T/late$how.out" \
	    'after-call class=AppleParavirtDevice apple5=1 apple6=1 apple9=1 apple10=0 common3=1 metal3=0 tg=65536'
done

# Eight threads at once, through MTLCreateSystemDefaultDevice, MTLCopyAllDevices and fresh devices.
n=0
while [ $n -lt 5 ]; do
	n=$((n + 1))
	run "thr$n" env LD_PRELOAD="$SHIM" $F=1009 "$HARNESS" threads 8
	lines_are "8 threads (round $n): every device changed" "$T/thr$n.out" \
	    '^thread[0-7]-(default|all|fresh) class=AppleParavirtDevice apple5=1 apple6=1 apple9=1 apple10=0 common3=1 metal3=0 tg=65536 ws=12009342976$' 8
	lines_are "8 threads (round $n): installed once" "$T/thr$n.err" '^\[lume-metal\] active' 1
	lines_are "8 threads (round $n): no sanitizer reports" "$T/thr$n.err" '.' 1
done
run thrstock env "$HARNESS" threads 8
lines_are "8 threads without the shim: every device stock" "$T/thrstock.out" \
    'class=AppleParavirtDevice apple5=1 apple6=0 apple9=0 apple10=0 common3=1 metal3=0 tg=32768' 8
t_done
