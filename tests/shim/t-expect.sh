#!/bin/sh
# lume-metal-probe --expect PROFILE --stock STOCK: passes only when exactly the profile's changes
# are visible, prints every difference, and refuses unreadable input with exit 2.
# shellcheck disable=SC1091 # sourced files are checked on their own
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/shim/common.sh"

F=LUME_METAL_APPLE_FAMILY_MAX G=LUME_METAL_MAX_THREADGROUP_MEMORY
W=LUME_METAL_RECOMMENDED_WORKING_SET_SIZE
S=$T/stock.out
E="-- --expect $PROFILE --stock $S"

# shellcheck disable=SC2086 # E holds the probe's arguments; the paths have no spaces (mktemp)
set -f
# shellcheck disable=SC2086
sprobe pass $F=1009 $G=65536 $E
rc_is "profile 1009/65536 on the shim: pass, exit 0" pass 0
has "pass: verdict in the JSON" "$T/pass.out" '"expect":{"profile":"m1-ultra-tahoe-26.5","pass":true,"differences":[]}}'
same_device "pass: the report itself is the shimmed one" pass "$T/shim1009.want"

# shellcheck disable=SC2086
probe noshim $E
rc_is "profile without the shim: exit 1" noshim 1
has "without the shim: every difference listed" "$T/noshim.out" '"pass":false' \
    '"families.Apple6: expected true, got false (stock false)"' \
    '"families.Apple7: expected true, got false (stock false)"' \
    '"families.Apple8: expected true, got false (stock false)"' \
    '"families.Apple9: expected true, got false (stock false)"' \
    '"maxThreadgroupMemoryLength: expected 65536, got 32768 (stock 32768)"' \
    '"shim: not active (shim not loaded)"'
lines_are "without the shim: six differences on stderr" "$T/noshim.err" '^lume-metal-probe: difference: ' 6

# shellcheck disable=SC2086
sprobe high $F=1010 $E
rc_is "shim at 1010 against a 1009 profile: exit 1" high 1
has "1010 against 1009: Apple10 and the setting named" "$T/high.out" \
    '"families.Apple10: expected false, got true (stock false)"' \
    '"shim.appleFamilyMax differs from the profile'"'"'s appleFamilyMax"'

# shellcheck disable=SC2086
sprobe tg $F=1009 $G=131072 $E
rc_is "threadgroup memory beyond the profile: exit 1" tg 1
has "threadgroup memory beyond the profile: named" "$T/tg.out" \
    '"maxThreadgroupMemoryLength: expected 65536, got 131072 (stock 32768)"'

# A field the profile does not change moves anyway.
# shellcheck disable=SC2086
sprobe metal3 $F=1009 LUME_METAL_SIM_FAMILIES=1001,1002,1003,1004,1005,3001,3002,3003,5001 $E
rc_is "Metal3 appears: exit 1" metal3 1
has "Metal3 appears: named" "$T/metal3.out" '"families.Metal3: expected false, got true (stock false)"'
lacks "Metal3 appears: nothing else" "$T/metal3.out" '"families.Apple' '"maxThreadgroupMemoryLength:'
# shellcheck disable=SC2086
sprobe unified $F=1009 LUME_METAL_SIM_UNIFIED_MEMORY=0 LUME_METAL_SIM_NAME=Other $E
has "unified memory and name change: both named" "$T/unified.out" \
    '"hasUnifiedMemory: expected true, got false (stock true)"' \
    '"device.name: expected \"Apple Paravirtual device\", got \"Other\" (stock \"Apple Paravirtual device\")"'
rc_is "unified memory and name change: exit 1" unified 1
# shellcheck disable=SC2086
sprobe ws $F=1009 $W=16000000000 $E
has "working set changed though the profile has none: named" "$T/ws.out" \
    '"recommendedMaxWorkingSetSize: expected 12009342976, got 16000000000 (stock 12009342976)"' \
    'shim.recommendedWorkingSetSize differs'

# A profile with a working set.
sed 's/"maxThreadgroupMemory": 65536,/"maxThreadgroupMemory": 65536, "recommendedWorkingSetSize": 16000000000,/' \
    "$PROFILE" >"$T/ws-profile.json"
has "working-set profile made" "$T/ws-profile.json" '"recommendedWorkingSetSize": 16000000000'
sprobe wsp $F=1009 $W=16000000000 -- --expect "$T/ws-profile.json" --stock "$S"
rc_is "working-set profile with the override: exit 0" wsp 0
sprobe wsp2 $F=1009 -- --expect "$T/ws-profile.json" --stock "$S"
rc_is "working-set profile without the override: exit 1" wsp2 1
has "working-set profile without the override: named" "$T/wsp2.out" \
    '"recommendedMaxWorkingSetSize: expected 16000000000, got 12009342976 (stock 12009342976)"'

# The stock file must be a stock run.
sprobe shimstock $F=1009
sprobe notstock $F=1009 -- --expect "$PROFILE" --stock "$T/shimstock.out"
rc_is "a shimmed run passed as stock: exit 1" notstock 1
has "a shimmed run passed as stock: said" "$T/notstock.out" '"stock run: the shim was active"'

# Unreadable input: exit 2, the file named, nothing on stdout.
printf '{"id":"x","appleFamilyMax":1009,}' >"$T/p-comma.json"
printf '{"id":"x"}' >"$T/p-nomax.json"
printf '{"id":"x","appleFamilyMax":2001}' >"$T/p-mac.json"
printf '{"id":"x","appleFamilyMax":"1009"}' >"$T/p-str.json"
printf '{"appleFamilyMax":1009}' >"$T/p-noid.json"
printf '{"id":"x","appleFamilyMax":1009,"maxThreadgroupMemory":0}' >"$T/p-tg0.json"
printf '{"id":"x","appleFamilyMax":1009,"id":"y"}' >"$T/p-dup.json"
printf '[1009]' >"$T/p-array.json"
head -c 200 "$S" >"$T/s-cut.json"
sed 's/,"Metal4":false//' "$S" >"$T/s-nofam.json"
sed 's/"maxThreadgroupMemoryLength":32768/"maxThreadgroupMemoryLength":"32768"/' "$S" >"$T/s-str.json"
sed 's/"probe":"lume-metal-probe"/"probe":"other"/' "$S" >"$T/s-other.json"
i=0
for pair in "p-comma.json:$S" "p-nomax.json:$S" "p-mac.json:$S" "p-str.json:$S" "p-noid.json:$S" \
    "p-tg0.json:$S" "p-dup.json:$S" "p-array.json:$S" "missing.json:$S" \
    "$PROFILE:s-cut.json" "$PROFILE:s-nofam.json" "$PROFILE:s-str.json" "$PROFILE:s-other.json" \
    "$PROFILE:$PROFILE" "$PROFILE:missing-stock.json" "$PROFILE:$T"; do
	i=$((i + 1))
	p=${pair%%:*} s=${pair#*:}
	case $p in /*) ;; *) p=$T/$p ;; esac
	case $s in /*) ;; *) s=$T/$s ;; esac
	if [ "$s" = "$T/$S" ]; then s=$S; fi
	bad=$p
	[ "$p" = "$PROFILE" ] && bad=$s
	sprobe "in$i" $F=1009 -- --expect "$p" --stock "$s"
	rc_is "bad input $(basename "$bad"): exit 2" "in$i" 2
	lines_are "bad input $(basename "$bad"): stderr names the file" "$T/in$i.err" "^lume-metal-probe: $bad: " 1
	lines_are "bad input $(basename "$bad"): nothing on stdout" "$T/in$i.out" '.' 0
done
t_done
