#!/bin/sh
# The probe against the SIMULATED libMetal: stock, with the shim for the 1009/65536 profile, the
# shipped (unsanitized) build laid out as a release, the OS fields, and its usage errors.
# shellcheck disable=SC1091 # sourced files are checked on their own
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/shim/common.sh"

rc_is "stock: exit 0" stock 0
has "stock: the Tahoe 26.5.2 paravirtual device" "$T/stock.out" \
    '{"probe":"lume-metal-probe","version":"' \
    '"os":{"productVersion":"26.5.2","build":"25F84"}' \
    '"device":{"name":"Apple Paravirtual device","class":"AppleParavirtDevice"}' \
    '"Apple1":true,"Apple2":true,"Apple3":true,"Apple4":true,"Apple5":true,"Apple6":false,"Apple7":false,"Apple8":false,"Apple9":false,"Apple10":false' \
    '"Mac1":false,"Mac2":false,"Common1":true,"Common2":true,"Common3":true,"Metal3":false,"Metal4":false' \
    '"maxThreadgroupMemoryLength":32768,' '"maxBufferLength":8589934592,' \
    '"recommendedMaxWorkingSetSize":12009342976,' '"hasUnifiedMemory":true,' \
    '"shim":{"active":false,"reason":"shim not loaded"}}'
HP='"hookPoints":{"_MTLDevice":{"present":true},"initGPUFamilySupport":{"present":true,"types":"v16@0:8"},"supportsFamily:":{"present":true,"types":"C24@0:8q16"},"maxThreadgroupMemoryLength":{"present":true,"types":"Q16@0:8"}}'
has "stock: the hook points on the device's class chain, with their types" "$T/stock.out" \
    "\"hasUnifiedMemory\":true,$HP,\"shim\":" 
lines_are "stock: one line of output" "$T/stock.out" '.' 1
lines_are "stock: nothing on stderr" "$T/stock.err" '.' 0

: >"$SW_LOG"
sprobe shim LUME_METAL_APPLE_FAMILY_MAX=1009 LUME_METAL_MAX_THREADGROUP_MEMORY=65536
rc_is "1009/65536: exit 0" shim 0
has "1009/65536: the hook points read as in the stock run" "$T/shim.out" "$HP,\"shim\":" 
same_device "1009/65536: Apple6..9 and 65536 bytes, nothing else changed" shim "$T/shim1009.want"
has "1009/65536: Apple5 becomes Apple9, Common3 and Metal3 unchanged" "$T/shim.out" \
    '"Apple9":true,"Apple10":false' '"Common3":true,"Metal3":false,"Metal4":false'
has "1009/65536: the shim reports its settings" "$T/shim.out" \
    '"shim":{"active":true,"appleFamilyMax":1009,"maxThreadgroupMemory":65536,"recommendedWorkingSetSize":null,"processes":null}}'
lines_are "1009/65536: one activation line naming process, ceiling and memory" "$T/shim.err" \
    '^\[lume-metal\] active in lume-metal-probe \(AppleParavirtDevice\): appleFamilyMax=1009 maxThreadgroupMemory=65536 ' 1
lines_are "1009/65536: nothing else on stderr" "$T/shim.err" '.' 1
lines_are "sw_vers runs once, without the preload variable" "$SW_LOG" "^LD_PRELOAD=$" 1
lines_are "sw_vers never sees the preload variable" "$SW_LOG" "^LD_PRELOAD=." 0

sprobe dflt LUME_METAL_APPLE_FAMILY_MAX=1009
same_device "threadgroup memory defaults to 65536" dflt "$T/shim1009.want"

# The shipped build, installed the way a linux-sim release lays it out.
mkdir -p "$T/rel/bin" "$T/rel/lib"
cp "$LIN/lume-metal-probe" "$T/rel/bin/" && cp "$LIN/liblumemetal.so" "$LIN/libMetal.so" "$T/rel/lib/"
run relstock "$T/rel/bin/lume-metal-probe"
rc_is "release layout: the plain probe finds lib/libMetal.so" relstock 0
same_device "release layout: stock answers" relstock "$T/stock.want"
run relshim env LD_PRELOAD="$T/rel/lib/liblumemetal.so" LUME_METAL_APPLE_FAMILY_MAX=1009 \
    "$T/rel/bin/lume-metal-probe"
same_device "release layout: the plain shim changes exactly the profile's fields" relshim "$T/shim1009.want"
has "release layout: shim active" "$T/relshim.out" '"shim":{"active":true,"appleFamilyMax":1009'

# Hook points as a macOS release may have them: missing, renamed, of another type.
probe hpnoinit LUME_METAL_SIM_OMIT=initGPUFamilySupport
has "hook points: initGPUFamilySupport missing" "$T/hpnoinit.out" \
    '"initGPUFamilySupport":{"present":false,"types":null},"supportsFamily:":{"present":true,'
probe hpbase LUME_METAL_SIM_BASE_NAME=_MTLDeviceRenamed
has "hook points: no _MTLDevice on the chain, the methods still found" "$T/hpbase.out" \
    '"hookPoints":{"_MTLDevice":{"present":false},"initGPUFamilySupport":{"present":true,"types":"v16@0:8"}'
probe hptypes LUME_METAL_SIM_WRONG_TYPES=supportsFamily:,maxThreadgroupMemoryLength,initGPUFamilySupport
has "hook points: other type encodings reported as they are" "$T/hptypes.out" \
    '"initGPUFamilySupport":{"present":true,"types":"@16@0:8"},"supportsFamily:":{"present":true,"types":"C24@0:8d16"},"maxThreadgroupMemoryLength":{"present":true,"types":"d16@0:8"}}'
# A long type encoding with a quote and a control character: printable, cut at 96 characters.
long=$(printf 'v16@0:8"\001%0200d' 0)
probe hplong "LUME_METAL_SIM_WRONG_TYPES=initGPUFamilySupport=$long"
want=$(printf 'v16@0:8\\"?%087d...' 0)
has "hook points: a long type encoding is cut, escaped and printable" "$T/hplong.out" \
    "\"initGPUFamilySupport\":{\"present\":true,\"types\":\"$want\"},"
lines_are "hook points: the probe's output is still one line" "$T/hplong.out" '.' 1
probe hpnotg LUME_METAL_SIM_OMIT=maxThreadgroupMemoryLength,supportsFamily:
has "hook points: public selectors missing" "$T/hpnotg.out" \
    '"supportsFamily:":{"present":false,"types":null},"maxThreadgroupMemoryLength":{"present":false,"types":null}}'

# OS fields: from sw_vers on PATH, null without one.
run nosw env PATH=/usr/bin:/bin "$PROBE"
has "no sw_vers: OS fields are null" "$T/nosw.out" '"os":{"productVersion":null,"build":null}'
printf '#!/bin/sh\nprintf "ProductVersion:\\t26.5.2 (evil)\\nBuildVersion:\\t25F84;x\\n"\n' >"$T/bin2-sw_vers"
mkdir "$T/bin2" && mv "$T/bin2-sw_vers" "$T/bin2/sw_vers" && chmod +x "$T/bin2/sw_vers"
run oddsw env PATH="$T/bin2:/usr/bin:/bin" "$PROBE"
has "odd sw_vers output: reported as null" "$T/oddsw.out" '"os":{"productVersion":null,"build":null}'

# No device at all.
probe nodev LUME_METAL_SIM_NO_DEVICE=1
rc_is "no device: exit 1" nodev 1
has "no device: device and hook points null" "$T/nodev.out" '"device":null,"hookPoints":null,"shim":{"active":false'

# Usage.
probe u1 -- --bogus
rc_is "unknown option: exit 2" u1 2
probe u2 -- --expect "$PROFILE"
rc_is "--expect without --stock: exit 2" u2 2
probe u3 -- --stock "$T/stock.out"
rc_is "--stock without --expect: exit 2" u3 2
probe u4 -- --version
rc_is "--version: exit 0" u4 0
has "--version: prints the version" "$T/u4.out" "lume-metal-probe 0.1"
t_done
