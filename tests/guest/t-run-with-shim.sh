#!/bin/sh
# shellcheck disable=SC1091,SC2016,SC2034 # sourced libs; literal $ on purpose; RC is read by rc_is
# run-with-shim: the preload variable and the profile's LUME_METAL_* variables from its own
# release's shim.env, read (never sourced) and set for the one exec'd process; bad shim.env
# refused before anything runs.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/guest/guest-lib.sh"
guest shim

payload "$T/a.tar.gz" || not_ok "build payload a"
A=$SHA
install "$T/i.json" "$T/a.tar.gz" "$A"
rc_is "install a" 0
REL=$ROOT/releases/$A

# Through `current`: the release it resolves to, not the link, is what gets preloaded.
LUME_METAL_RECOMMENDED_WORKING_SET_SIZE=1 LUME_METAL_PROCESSES=sh \
	"$ROOT/current/bin/run-with-shim" env >"$T/env" 2>/dev/null
RC=$?
rc_is "run-with-shim env exits 0" 0
check "the profile's family ceiling is exported" grep -qx 'LUME_METAL_APPLE_FAMILY_MAX=1009' "$T/env"
check "the profile's threadgroup memory is exported" grep -qx 'LUME_METAL_MAX_THREADGROUP_MEMORY=65536' "$T/env"
check "the library comes from releases/<sha>, not current" grep -qxF "LD_LIBRARY_PATH=$REL/lib" "$T/env"
if grep -q '^LUME_METAL_RECOMMENDED_WORKING_SET_SIZE=' "$T/env"; then
	not_ok "a shim variable the profile does not set is not inherited"
else
	ok "a shim variable the profile does not set is not inherited"
fi
if grep -q '^LUME_METAL_PRELOAD_' "$T/env"; then not_ok "the bookkeeping keys are not exported"; else ok "the bookkeeping keys are not exported"; fi
check "nothing went to the session (no launchctl setenv)" test ! -e "$LUME_METAL_SIM_DIR/launchd/setenv.log"
check "LUME_METAL_PROCESSES is the command's own name, whatever the caller had" grep -qx 'LUME_METAL_PROCESSES=env' "$T/env"
if grep -q '^DYLD_PRINT_INTERPOSING=' "$T/env"; then not_ok "no DYLD_PRINT_INTERPOSING unless asked"; else ok "no DYLD_PRINT_INTERPOSING unless asked"; fi
LUME_METAL_DYLD_PRINT_INTERPOSING=1 "$ROOT/current/bin/run-with-shim" env >"$T/env-pi" 2>/dev/null
check "LUME_METAL_DYLD_PRINT_INTERPOSING=1 gives the command DYLD_PRINT_INTERPOSING=1 (SIP purges DYLD_* into /bin/sh)" \
	grep -qx 'DYLD_PRINT_INTERPOSING=1' "$T/env-pi"
if grep -q '^LUME_METAL_DYLD_PRINT_INTERPOSING=' "$T/env-pi"; then not_ok "... and not its own name"; else ok "... and not its own name"; fi
"$REL/bin/run-with-shim" "$REL/bin/lume-metal-probe" >"$T/probe-self.json" 2>/dev/null
check "the command itself is shimmed" grep -q '"active":true.*"processes":\["lume-metal-probe"\]' "$T/probe-self.json"
"$REL/bin/run-with-shim" sh -c '"$1"' sh "$REL/bin/lume-metal-probe" >"$T/probe-child.json" 2>/dev/null
check "a process it starts stays stock" grep -q '"Apple6":false.*"maxThreadgroupMemoryLength":32768.*"active":false' "$T/probe-child.json"
"$REL/bin/run-with-shim" sh -c 'exit 7' 2>/dev/null
is_eq "the command's exit status passes through" $? 7
"$REL/bin/run-with-shim" sh -c 'printf "%s|%s\n" "$1" "$2"' sh 'a b' '$(x)' >"$T/args" 2>/dev/null
is_eq "arguments pass through unchanged" "$(cat "$T/args")" 'a b|$(x)'

# A copy without spaces in its path gets the absolute path in LD_PRELOAD.
mkdir -p "$T/plain"
cp -R "$REL" "$T/plain/rel"
chmod -R u+w "$T/plain/rel"
"$T/plain/rel/bin/run-with-shim" env >"$T/env2" 2>/dev/null
check "a path without spaces: LD_PRELOAD is the absolute path" grep -qxF "LD_PRELOAD=$T/plain/rel/lib/liblumemetal.so" "$T/env2"

# macOS: DYLD_INSERT_LIBRARIES takes the absolute path, spaces and all.
sed -i 's/^LUME_METAL_PRELOAD_VAR=.*/LUME_METAL_PRELOAD_VAR=DYLD_INSERT_LIBRARIES/' "$T/plain/rel/shim.env"
mkdir -p "$T/with space"
cp -R "$T/plain/rel" "$T/with space/rel"
"$T/with space/rel/bin/run-with-shim" env >"$T/env3" 2>/dev/null
check "DYLD_INSERT_LIBRARIES is the absolute path" grep -qxF "DYLD_INSERT_LIBRARIES=$T/with space/rel/lib/liblumemetal.so" "$T/env3"

# Bad shim.env: refused with exit 2 and one JSON object, the command never runs.
bad() {
	printf '%s\n' "$2" >"$T/plain/rel/shim.env"
	run "$T/o.json" "$T/plain/rel/bin/run-with-shim" touch "$T/ran"
	rc_is "$1: exits 2" 2
	is_json "$1: prints one JSON object" "$T/o.json"
	jis "$1: failed" "$T/o.json" .result failed
	check "$1: the command did not run" test ! -e "$T/ran"
}
good='LUME_METAL_PRELOAD_VAR=LD_PRELOAD
LUME_METAL_PRELOAD_LIB=lib/liblumemetal.so
LUME_METAL_APPLE_FAMILY_MAX=1009'
bad "a command substitution in a value" "$good
LUME_METAL_MAX_THREADGROUP_MEMORY=\$(touch $T/pwned)"
check "a command substitution in a value: not executed" test ! -e "$T/pwned"
bad "a space in a value" "$good
LUME_METAL_PROCESSES=a b"
bad "a key outside LUME_METAL_" "$good
PATH=/tmp"
bad "a preload variable other than the two" "LUME_METAL_PRELOAD_VAR=LD_AUDIT
LUME_METAL_PRELOAD_LIB=lib/liblumemetal.so
LUME_METAL_APPLE_FAMILY_MAX=1009"
bad "a library outside the release" "LUME_METAL_PRELOAD_VAR=LD_PRELOAD
LUME_METAL_PRELOAD_LIB=../../x.so
LUME_METAL_APPLE_FAMILY_MAX=1009"
bad "no shim variables" "LUME_METAL_PRELOAD_VAR=LD_PRELOAD
LUME_METAL_PRELOAD_LIB=lib/liblumemetal.so"
rm -f "$T/plain/rel/shim.env"
run "$T/o.json" "$T/plain/rel/bin/run-with-shim" touch "$T/ran"
rc_is "no shim.env: exits 2" 2
check "no shim.env: the command did not run" test ! -e "$T/ran"
run "$T/o.json" "$REL/bin/run-with-shim"
rc_is "no command: exits 2" 2
is_json "no command: prints one JSON object" "$T/o.json"
t_done
