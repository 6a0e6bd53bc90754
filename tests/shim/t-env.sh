#!/bin/sh
# The shim's variables: every malformed or out-of-range value leaves the process stock and says
# why in one line; the ceiling, threadgroup memory, working set and process list do what the
# design says. Numbers are read as the published shim reads them (strtoull base 0 over the whole
# string: hexadecimal and octal too), and an empty optional variable is unset.
# shellcheck disable=SC1091 # sourced files are checked on their own
. "$(dirname "$0")/../lib.sh"
# Dozens of runs of the same probe and shim paths: ASan and UBSan stay on, the leak check
# (done by the other shim tests) is left out for speed.
LM_SHIM_LEAKS=0
. "$TOP/tests/shim/common.sh"

F=LUME_METAL_APPLE_FAMILY_MAX G=LUME_METAL_MAX_THREADGROUP_MEMORY
W=LUME_METAL_RECOMMENDED_WORKING_SET_SIZE P=LUME_METAL_PROCESSES

# Fail closed: one case per line, "name|VAR=VALUE ...|reason (extended regex)".
i=0
while IFS='|' read -r name vars reason; do
	[ -n "$name" ] || continue
	i=$((i + 1))
	# shellcheck disable=SC2086 # vars is a list of VAR=VALUE words without spaces
	sprobe "bad$i" $vars
	stock_ok "$name" "bad$i" "$reason"
	has "$name: the reason is in the JSON" "$T/bad$i.out" '"shim":{"active":false,"reason":"'
done <<EOF2
family max missing||$F is not set
family max missing, others set|$G=65536 $W=99999999999|$F is not set
family max empty (the required variable: empty is unset)|$F=|$F is not set
family max not a number|$F=abc|$F="abc" is not a number
family max with a trailing character|$F=1009_|$F="1009_" is not a number
family max hexadecimal with a stray digit|$F=0x3f1g|$F="0x3f1g" is not a number
family max octal with a 9 in it|$F=01009|$F="01009" is not a number
family max below Apple1|$F=1000|$F="1000" is out of range 1001..1999
family max 2000, hexadecimal (the range is 1001 up to 2000, not included)|$F=0x7d0|$F="0x7d0" is out of range 1001..1999
family max a Mac family|$F=2001|$F="2001" is out of range 1001..1999
family max huge|$F=99999999999999999999999|$F="99999999999999999999999" is out of range
family max negative (strtoull wraps it)|$F=-1009|$F="-1009" is out of range
threadgroup memory with a unit|$F=1009 $G=64K|$G="64K" is not a number
threadgroup memory zero|$F=1009 $G=0|$G="0" is out of range 1..1048576
threadgroup memory too large|$F=1009 $G=1048577|$G="1048577" is out of range 1..1048576
threadgroup memory negative|$F=1009 $G=-1|$G="-1" is out of range 1..1048576
working set with a unit|$F=1009 $W=16G|$W="16G" is not a number
working set zero|$F=1009 $W=0|$W="0" is out of range
working set too large|$F=1009 $W=1125899906842625|$W="1125899906842625" is out of range
working set too large, hexadecimal|$F=1009 $W=0x4000000000001|$W="0x4000000000001" is out of range
process list with an empty entry|$F=1009 $P=llama-server,,lume-metal-probe|$P=".*" is not a comma-separated list
process list with a leading comma|$F=1009 $P=,lume-metal-probe|$P=".*" is not a comma-separated list
process list with a trailing comma|$F=1009 $P=lume-metal-probe,|$P=".*" is not a comma-separated list
EOF2
[ "$i" -eq 23 ] || not_ok "all fail-closed cases ran ($i)"

# A value with a space (the table above cannot hold one) and a control character.
sprobe sp "$F=1009 " ; stock_ok "family max with a trailing space" sp "$F=\"1009 \" is not a number"
sprobe ctl "$F=1009" "$P=$(printf 'a\tb')"; stock_ok "process list with a tab" ctl "$P=\"a\?b\" is not"

# What the published shim accepts: one case per line, "name|VAR=VALUE ...|what the shim reports".
i=0
while IFS='|' read -r name vars says; do
	[ -n "$name" ] || continue
	i=$((i + 1))
	# shellcheck disable=SC2086 # vars is a list of VAR=VALUE words without spaces
	sprobe "good$i" $vars
	rc_is "$name: exit 0" "good$i" 0
	same_device "$name: Apple6..9 and 65536 bytes" "good$i" "$T/shim1009.want"
	has "$name: the shim is active as $says" "$T/good$i.out" "\"shim\":{\"active\":true,$says"
	lines_are "$name: one activation line" "$T/good$i.err" '^\[lume-metal\] active in ' 1
	lines_are "$name: nothing else on stderr" "$T/good$i.err" '.' 1
done <<EOF2
family max hexadecimal|$F=0x3f1|"appleFamilyMax":1009,"maxThreadgroupMemory":65536,"recommendedWorkingSetSize":null
family max octal|$F=01761|"appleFamilyMax":1009,
family max with a plus sign|$F=+1009|"appleFamilyMax":1009,
threadgroup memory empty: unset, the default|$F=1009 $G=|"appleFamilyMax":1009,"maxThreadgroupMemory":65536,
threadgroup memory hexadecimal|$F=1009 $G=0x10000|"appleFamilyMax":1009,"maxThreadgroupMemory":65536,
working set empty: unset, unchanged|$F=1009 $W=|"appleFamilyMax":1009,"maxThreadgroupMemory":65536,"recommendedWorkingSetSize":null,
process list empty: unset, every process|$F=1009 $P=|"appleFamilyMax":1009,"maxThreadgroupMemory":65536,"recommendedWorkingSetSize":null,"processes":null}
EOF2
[ "$i" -eq 7 ] || not_ok "all accepted cases ran ($i)"
sprobe lsp "$F= 1009"
same_device "family max with a leading space (strtoull skips it): changed" lsp "$T/shim1009.want"

# The ceiling.
sprobe c1010 $F=1010
sed 's/"Apple10":false/"Apple10":true/' "$T/shim1009.want" >"$T/c1010.want"
same_device "ceiling 1010: Apple6..10 true, nothing else changed" c1010 "$T/c1010.want"
has "ceiling 1010: the shim says 1010" "$T/c1010.out" '"appleFamilyMax":1010,'
sprobe c1999 $F=1999
sed 's/"Apple10":false/"Apple10":true/' "$T/shim1009.want" >"$T/c1999.want"
same_device "ceiling 1999: Mac, Common and Metal families still the device's own" c1999 "$T/c1999.want"
sprobe c1003 $F=1003
sed 's/"maxThreadgroupMemoryLength":32768/"maxThreadgroupMemoryLength":65536/' "$T/stock.want" >"$T/c1003.want"
same_device "ceiling below stock (1003): Apple4 and Apple5 keep the device's true" c1003 "$T/c1003.want"

# Threadgroup memory is raised, never lowered.
sprobe tglow $F=1009 $G=16384
sed 's/"maxThreadgroupMemoryLength":65536/"maxThreadgroupMemoryLength":32768/' "$T/shim1009.want" >"$T/tglow.want"
same_device "threadgroup memory 16384: stays at the stock 32768" tglow "$T/tglow.want"
has "threadgroup memory 16384: the shim is active with 16384" "$T/tglow.out" '"active":true' '"maxThreadgroupMemory":16384,'
sprobe tgeq $F=1009 $G=32768
same_device "threadgroup memory equal to stock: stock 32768" tgeq "$T/tglow.want"
sprobe tghigh $F=1009 $G=1048576
sed 's/"maxThreadgroupMemoryLength":65536/"maxThreadgroupMemoryLength":1048576/' "$T/shim1009.want" >"$T/tghigh.want"
same_device "threadgroup memory 1048576: raised" tghigh "$T/tghigh.want"

# The working set: changed only when set, and only upwards.
sprobe wsunset $F=1009
has "working set unset: stock value" "$T/wsunset.out" '"recommendedMaxWorkingSetSize":12009342976,' '"recommendedWorkingSetSize":null'
sprobe wshigh $F=1009 $W=16000000000
sed 's/"recommendedMaxWorkingSetSize":12009342976/"recommendedMaxWorkingSetSize":16000000000/' "$T/shim1009.want" >"$T/wshigh.want"
same_device "working set 16000000000: raised, nothing else changed" wshigh "$T/wshigh.want"
has "working set 16000000000: the shim says so" "$T/wshigh.out" '"recommendedWorkingSetSize":16000000000,'
lines_are "working set: named in the activation line" "$T/wshigh.err" 'recommendedWorkingSetSize=16000000000$' 1
sprobe wslow $F=1009 $W=1048576
same_device "working set below stock: stays stock" wslow "$T/shim1009.want"

# LUME_METAL_PROCESSES.
sprobe plisted $F=1009 $P=llama-server,lume-metal-probe
same_device "listed process: changed" plisted "$T/shim1009.want"
has "listed process: the shim names the list" "$T/plisted.out" '"processes":["llama-server","lume-metal-probe"]}'
sprobe pnot $F=1009 $P=llama-server
same_device "process not listed: stock" pnot "$T/stock.want"
has "process not listed: says why in the JSON" "$T/pnot.out" \
    '"shim":{"active":false,"reason":"process lume-metal-probe is not in LUME_METAL_PROCESSES"}'
lines_are "process not listed: silent on stderr" "$T/pnot.err" '.' 0
sprobe pbadnot $F=abc $P=llama-server
same_device "process not listed, bad ceiling: still stock" pbadnot "$T/stock.want"
lines_are "process not listed, bad ceiling: silent (a workload's children stay quiet)" "$T/pbadnot.err" '.' 0
sprobe pprefix $F=1009 $P=lume-metal-prob,lume-metal-probe2
same_device "names match whole entries only" pprefix "$T/stock.want"
# The same binary under another name: a workload's name is listed, a child shell's is not.
ln -s "$PROBE" "$T/bin/llama-server"
ln -s "$PROBE" "$T/bin/sh"
run wl env LD_PRELOAD="$SHIM" $F=1009 $P=llama-server,lume-metal-probe "$T/bin/llama-server"
same_device "workload llama-server: changed" wl "$T/shim1009.want"
lines_are "workload llama-server: activation line names it" "$T/wl.err" '^\[lume-metal\] active in llama-server ' 1
run child env LD_PRELOAD="$SHIM" $F=1009 $P=llama-server,lume-metal-probe "$T/bin/sh"
same_device "child process sh: stock" child "$T/stock.want"
has "child process sh: reason" "$T/child.out" '"reason":"process sh is not in LUME_METAL_PROCESSES"'
t_done
