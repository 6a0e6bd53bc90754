#!/bin/sh
# shellcheck disable=SC1091,SC2016 # lib.sh and guest-lib.sh are sourced by path; single-quoted $ is for the inner sh
# The simulated macOS guest commands (tests/guest-sim/bin): labelled as simulations, and their
# outputs and exit codes as on macOS.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/guest/guest-lib.sh"
guest sim
S=$TOP/tests/guest-sim/bin

for c in sw_vers launchctl plutil sysctl shasum defaults id codesign lipo; do
	head -n 3 "$S/$c" >"$T/.head.$c"
	check_grep "$c is labelled a SIMULATION in its first lines" '^# SIMULATION of the macOS' "$T/.head.$c"
done

# sw_vers
printf 'ProductName:\t\tmacOS\nProductVersion:\t\t26.5.2\nBuildVersion:\t\t25F84\n' >"$T/sw.want"
sw_vers >"$T/sw.got"
check "sw_vers prints the Tahoe 26.5.2 (25F84) layout" diff -u "$T/sw.want" "$T/sw.got"
is_eq "sw_vers -productVersion" "$(sw_vers -productVersion)" 26.5.2
is_eq "sw_vers -buildVersion" "$(sw_vers -buildVersion)" 25F84
is_eq "sw_vers follows LUME_METAL_SIM_OS_VERSION" "$(LUME_METAL_SIM_OS_VERSION=26.6.1 sw_vers -productVersion)" 26.6.1
check_rc "sw_vers rejects an unknown option" 1 sw_vers -bogus

# sysctl
is_eq "sysctl -n hw.model" "$(sysctl -n hw.model)" VirtualMac2,1
is_eq "sysctl -n machdep.cpu.brand_string" "$(sysctl -n machdep.cpu.brand_string)" "Apple M1 Ultra (Virtual)"
is_eq "sysctl -n kern.osproductversion" "$(sysctl -n kern.osproductversion)" 26.5.2
is_eq "sysctl -n kern.osversion" "$(sysctl -n kern.osversion)" 25F84
is_eq "sysctl without -n prints name: value" "$(sysctl hw.model)" "hw.model: VirtualMac2,1"
sysctl -n no.such.oid >"$T/o" 2>"$T/e"
is_eq "sysctl: an unknown oid exits 1" $? 1
check_grep "sysctl: an unknown oid is named" "^sysctl: unknown oid 'no.such.oid'\$" "$T/e"

# id
is_eq "id -u is 501" "$(id -u)" 501
is_eq "id -un is lume" "$(id -un)" lume
check_rc "id rejects an unknown option" 1 id -Z

# shasum
printf 'one\n' >"$T/a file"
printf 'two\n' >"$T/b"
(cd "$T" && shasum -a 256 "a file" b) >"$T/sums"
(cd "$T" && sha256sum "a file" b) >"$T/sums.gnu"
check "shasum -a 256 prints '<hex>  <name>' like the real tool" diff -u "$T/sums.gnu" "$T/sums"
is_eq "shasum -a 256 on stdin names it -" "$(printf 'one\n' | shasum -a 256 | cut -c65-)" "  -"
(cd "$T" && shasum -a 256 -c sums) >"$T/c.out" 2>"$T/c.err"
is_eq "shasum -c exits 0 when all match" $? 0
is_eq "shasum -c prints NAME: OK" "$(cat "$T/c.out")" "a file: OK
b: OK"
printf 'changed\n' >"$T/b"
(cd "$T" && shasum -a 256 -c sums) >"$T/c.out" 2>"$T/c.err"
is_eq "shasum -c exits 1 on a mismatch" $? 1
check_grep "shasum -c prints NAME: FAILED" '^b: FAILED$' "$T/c.out"
check_grep "shasum -c warns on stderr" '^shasum: WARNING: 1 computed checksum did NOT match$' "$T/c.err"
rm "$T/b"
(cd "$T" && shasum -a 256 -c sums) >"$T/c.out" 2>"$T/c.err"
is_eq "shasum -c exits 1 on a missing file" $? 1
check_grep "shasum -c prints FAILED open or read" '^b: FAILED open or read$' "$T/c.out"
check_grep "shasum -c counts unreadable files" '^shasum: WARNING: 1 listed file could not be read$' "$T/c.err"
printf 'junk\n' >"$T/junk"
check_rc "shasum -c with no checksum lines exits 1" 1 shasum -a 256 -c "$T/junk"

# plutil
cat >"$T/good.plist" <<'EOF'
<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
	<key>Label</key>
	<string>com.example.sim</string>
	<key>ProgramArguments</key>
	<array><string>/bin/sleep</string><string>600</string></array>
</dict>
</plist>
EOF
chmod 644 "$T/good.plist"
is_eq "plutil -lint prints FILE: OK" "$(plutil -lint "$T/good.plist")" "$T/good.plist: OK"
sed 's|<array><string>/bin/sleep</string><string>600</string></array>||' "$T/good.plist" >"$T/bad.plist"
plutil -lint "$T/bad.plist" >"$T/o" 2>&1
is_eq "plutil -lint exits 1 on a key without a value" $? 1
check_grep "plutil -lint names the problem" "^$T/bad.plist: Value missing for key inside <dict>" "$T/o"
sed 's/<\/dict>//' "$T/good.plist" >"$T/bad2.plist"
check_rc "plutil -lint exits 1 on malformed XML" 1 plutil -lint "$T/bad2.plist"
plutil -lint "$T/bad2.plist" >"$T/o" 2>&1
check_grep "plutil -lint on malformed XML names the parser's error and line" "^$T/bad2.plist: .* on line [0-9][0-9]*\$" "$T/o"
check_rc "plutil -lint exits 1 on a missing file" 1 plutil -lint "$T/none.plist"

# defaults
D=com.apple.gpusw.ParavirtualizedGraphics K=ForceUnrestrictedDeviceFeatureLevel
defaults read "$D" "$K" >"$T/o" 2>"$T/e"
is_eq "defaults read of a missing key exits 1" $? 1
check_grep "defaults read says the pair does not exist" "^The domain/default pair of \\($D, $K\\) does not exist\$" "$T/e"
check "defaults write -bool true" defaults write "$D" "$K" -bool true
is_eq "defaults read prints 1 for true" "$(defaults read "$D" "$K")" 1
check "defaults delete" defaults delete "$D" "$K"
defaults delete "$D" "$K" >"$T/o" 2>"$T/e"
is_eq "defaults delete of a missing key exits 1" $? 1
check_grep "defaults delete says nothing changed" '^Defaults have not been changed\.$' "$T/e"

# launchctl
uid=$(id -u)
check_rc "launchctl print of an unknown service exits 113" 113 launchctl print "gui/$uid/com.example.sim"
check "launchctl bootstrap" launchctl bootstrap "gui/$uid" "$T/good.plist"
check "launchctl print of the loaded service" launchctl print "gui/$uid/com.example.sim"
launchctl bootstrap "gui/$uid" "$T/good.plist" >"$T/o" 2>"$T/e"
is_eq "bootstrapping a loaded service exits 5" $? 5
check_grep "bootstrapping a loaded service: the real tool's error" '^Bootstrap failed: 5: Input/output error$' "$T/e"
check "launchctl kickstart -k" launchctl kickstart -k "gui/$uid/com.example.sim"
is_eq "kickstart -k restarts (runs = 1)" "$(svc runs com.example.sim)" 1
check "launchctl bootout" launchctl bootout "gui/$uid/com.example.sim"
launchctl bootout "gui/$uid/com.example.sim" >"$T/o" 2>"$T/e"
is_eq "bootout of an unloaded service exits 113, as current macOS" $? 113
check_grep "bootout of an unloaded service: the real tool's error" '^Boot-out failed: 113: Could not find specified service$' "$T/e"
LUME_METAL_SIM_BOOTOUT_ESRCH=1 launchctl bootout "gui/$uid/com.example.sim" >"$T/o" 2>"$T/e"
is_eq "... 3 on a release that answers ESRCH (LUME_METAL_SIM_BOOTOUT_ESRCH=1)" $? 3
check_grep "... its error" '^Boot-out failed: 3: No such process$' "$T/e"
launchctl kickstart "gui/$uid/com.example.sim" >"$T/o" 2>"$T/e"
is_eq "kickstart of an unloaded service exits 113" $? 113
check_grep "kickstart names the service" "^Could not find service \"com.example.sim\" in domain for user gui: $uid\$" "$T/e"
chmod 666 "$T/good.plist"
check_rc "bootstrap refuses a world-writable plist (5)" 5 launchctl bootstrap "gui/$uid" "$T/good.plist"
chmod 644 "$T/good.plist"
check_rc "bootstrap without a GUI session exits 125" 125 env LUME_METAL_SIM_GUI_SESSION=0 launchctl bootstrap "gui/$uid" "$T/good.plist"
check_rc "bootstrap of a missing plist exits 2" 2 launchctl bootstrap "gui/$uid" "$T/none.plist"
check_rc "bootstrap of a plist that is not well-formed XML exits 5" 5 launchctl bootstrap "gui/$uid" "$T/bad2.plist"
check_rc "... and loads nothing" 113 launchctl print "gui/$uid/com.example.sim"

# launchctl: starts and kills are counted in events (kickstart -k of a running job is one of each)
ev() { grep -c "^$1 com.example.sim " "$LUME_METAL_SIM_DIR/launchd/events" 2>/dev/null; }
sed 's|</dict>|	<key>RunAtLoad</key>\n	<true/>\n	<key>ExitTimeOut</key>\n	<integer>3</integer>\n</dict>|' "$T/good.plist" >"$T/run.plist"
chmod 644 "$T/run.plist"
: >"$LUME_METAL_SIM_DIR/launchd/events"
launchctl bootstrap "gui/$uid" "$T/run.plist"
is_eq "RunAtLoad: bootstrap starts the job once" "$(ev start)/$(ev kill)" 1/0
launchctl kickstart "gui/$uid/com.example.sim"
is_eq "kickstart of a running job starts nothing" "$(ev start)/$(ev kill)" 1/0
launchctl kickstart -k "gui/$uid/com.example.sim"
is_eq "kickstart -k of a running job kills it and starts another" "$(ev start)/$(ev kill)" 2/1
k_pid=$(svc pid com.example.sim)
check "the job is a real process, its pid the one print shows" kill -0 "$k_pid"
launchctl bootout "gui/$uid/com.example.sim"
is_eq "bootout kills the running job" "$(ev kill)" 2
check "... the process is gone" sh -c "! kill -0 $k_pid 2>/dev/null || grep -q '^[0-9]* ([^)]*) Z' /proc/$k_pid/stat"
sed 's|</dict>|	<key>KeepAlive</key>\n	<true/>\n</dict>|' "$T/good.plist" >"$T/keep.plist"
chmod 644 "$T/keep.plist"
launchctl bootstrap "gui/$uid" "$T/keep.plist"
is_eq "KeepAlive true: bootstrap starts the job too" "$(svc state com.example.sim)" running
launchctl bootout "gui/$uid/com.example.sim"

# launchctl: a KeepAlive job that exits is spawned again after its ThrottleInterval (the knob
# LUME_METAL_SIM_THROTTLE shortens it), so a crash shows as a growing runs count and its last
# exit code; a program that does not exist fails to spawn with launchd's 78 (EX_CONFIG).
# shellcheck disable=SC2016 # $PWD is the job's, in its plist
sed -e 's|<string>/bin/sleep</string><string>600</string>|<string>/bin/sh</string><string>-c</string><string>echo crashing in $PWD >\&amp;2; exit 3</string>|' \
	-e 's|</dict>|	<key>KeepAlive</key>\n	<true/>\n	<key>WorkingDirectory</key>\n	<string>/tmp</string>\n	<key>StandardErrorPath</key>\n	<string>'"$T"'/crash.err</string>\n</dict>|' \
	"$T/good.plist" >"$T/crash.plist"
chmod 644 "$T/crash.plist"
LUME_METAL_SIM_THROTTLE=0.1 launchctl bootstrap "gui/$uid" "$T/crash.plist"
n=0
while [ "$(svc runs com.example.sim)" -lt 3 ] && [ $n -lt 100 ]; do sleep 0.05; n=$((n + 1)); done
check "a crashing KeepAlive job: its runs count grows" test "$(svc runs com.example.sim)" -ge 3
is_eq "... its last exit code" "$(svc 'last exit code' com.example.sim)" 3
check_grep "... its stderr in StandardErrorPath, run in its WorkingDirectory" '^crashing in /tmp$' "$T/crash.err"
launchctl list >"$T/o"
check_grep "... list shows its last status" '^([0-9]+|-)	3	com.example.sim$' "$T/o"
launchctl bootout "gui/$uid/com.example.sim"
# ... and its supervisor ends once the job's folder is gone (the simulated launchd's state removed
# under it, as a test's cleanup does when an install bootstrapped after the jobs were stopped),
# rather than spawning it every throttle for ever. Its lock, held until it exits, is the event.
G=$T/sim-gone
LUME_METAL_SIM_DIR=$G LUME_METAL_SIM_THROTTLE=0.1 launchctl bootstrap "gui/$uid" "$T/crash.plist"
exec 7<"$G/launchd/gui-$uid/com.example.sim/supervisor.lock"
rm -rf "$G" 2>/dev/null # (it may race with a record the supervisor writes: its files go all the same)
check "a job's supervisor ends when the job's folder is gone" flock -w 10 7
exec 7<&-
# A job that ignores SIGTERM: bootout sends SIGKILL at its ExitTimeOut (1 s here) and waits.
# shellcheck disable=SC2016 # perl's $SIG, in the plist
sed -e 's|<string>/bin/sleep</string><string>600</string>|<string>/usr/bin/perl</string><string>-e</string><string>$SIG{TERM} = "IGNORE"; sleep 600</string>|' \
	-e 's|<integer>3</integer>|<integer>1</integer>|' "$T/run.plist" >"$T/stubborn.plist"
chmod 644 "$T/stubborn.plist"
launchctl bootstrap "gui/$uid" "$T/stubborn.plist"
k_pid=$(svc pid com.example.sim)
check "a job that ignores SIGTERM runs" kill -0 "${k_pid:-0}"
check "... bootout exits 0" launchctl bootout "gui/$uid/com.example.sim"
check "... the process is gone (SIGKILL at ExitTimeOut)" sh -c "! kill -0 ${k_pid:-0} 2>/dev/null || grep -q '^[0-9]* ([^)]*) Z' /proc/${k_pid:-0}/stat"
check_rc "... and the job is unloaded" 113 launchctl print "gui/$uid/com.example.sim"
# Signals the caller ignores are not the job's: launchd starts a job with every signal at its
# default (install.sh ignores INT, TERM and HUP while it activates; a job started with & ignores
# INT and QUIT), and its supervisor can still be stopped.
(trap '' INT TERM HUP QUIT && launchctl bootstrap "gui/$uid" "$T/run.plist")
k_pid=$(svc pid com.example.sim)
# Read once the pid runs the job's program (its exec may still be under way), bounded: HUP, INT,
# QUIT and TERM are bits 0, 1, 2 and 14 of SigIgn (0x4007).
n=0
while [ "$(cat "/proc/${k_pid:-0}/comm" 2>/dev/null)" != sleep ] && [ $n -lt 100 ]; do sleep 0.05; n=$((n + 1)); done
ign=$(sed -n 's/^SigIgn:[[:space:]]*//p' "/proc/${k_pid:-0}/status" 2>/dev/null)
is_eq "a job bootstrapped by a caller that ignores INT, TERM, HUP and QUIT ignores none of them" \
	"$(printf '%s' "${ign:-ffff}" | cut -c9-16 | { read -r w && printf '%x' $((0x$w & 0x4007)); })" 0
check "... and bootout stops it at once" launchctl bootout "gui/$uid/com.example.sim"
check "... the process is gone" sh -c "! kill -0 ${k_pid:-0} 2>/dev/null || grep -q '^[0-9]* ([^)]*) Z' /proc/${k_pid:-0}/stat"
sed 's|<string>/bin/sleep</string>|<string>/no/such/program</string>|' "$T/run.plist" >"$T/missing.plist"
chmod 644 "$T/missing.plist"
launchctl bootstrap "gui/$uid" "$T/missing.plist"
is_eq "a missing program: not running" "$(svc state com.example.sim)" "not running"
is_eq "... last exit code 78: EX_CONFIG" "$(svc 'last exit code' com.example.sim)" "78: EX_CONFIG"
launchctl bootout "gui/$uid/com.example.sim"

# launchctl: the disabled set
launchctl disable "gui/$uid/com.example.sim"
launchctl print-disabled "gui/$uid" >"$T/o"
check_grep "print-disabled lists a disabled label" '^	"com.example.sim" => disabled$' "$T/o"
launchctl bootstrap "gui/$uid" "$T/run.plist" >"$T/o" 2>"$T/e"
is_eq "bootstrap of a disabled label exits 5" $? 5
printf 'Bootstrap failed: 5: Input/output error\nTry re-running the command as root for richer errors.\n' >"$T/e.want"
check "bootstrap of a disabled label: the real tool's error and hint" diff -u "$T/e.want" "$T/e"
check_rc "... and loads nothing" 113 launchctl print "gui/$uid/com.example.sim"
launchctl enable "gui/$uid/com.example.sim"
launchctl print-disabled "gui/$uid" >"$T/o"
if grep -q com.example.sim "$T/o"; then not_ok "enable takes the label out of the set"; else ok "enable takes the label out of the set"; fi
check "bootstrap after enable" launchctl bootstrap "gui/$uid" "$T/run.plist"

# launchctl: an asynchronous boot-out lingers, at most ExitTimeOut (3 s in run.plist)
check "bootout under LINGER=2 exits 0" env LUME_METAL_SIM_BOOTOUT_LINGER=2 launchctl bootout "gui/$uid/com.example.sim"
check "... and the job is still loaded" launchctl print "gui/$uid/com.example.sim"
launchctl bootstrap "gui/$uid" "$T/run.plist" 2>"$T/e"
is_eq "bootstrap while it lingers exits 5" $? 5
launchctl bootout "gui/$uid/com.example.sim" 2>"$T/e"
is_eq "a second bootout while it lingers exits 36" $? 36
check_grep "... Operation now in progress" '^Boot-out failed: 36: Operation now in progress$' "$T/e"
# gone: waits (at most 10 s) until launchctl print no longer finds the job.
gone() { g_i=0; while launchctl print "gui/$uid/com.example.sim" >/dev/null 2>&1 && [ $g_i -lt 100 ]; do sleep 0.1; g_i=$((g_i + 1)); done; }
gone
check_rc "after its 2 s it is gone" 113 launchctl print "gui/$uid/com.example.sim"
launchctl bootstrap "gui/$uid" "$T/run.plist"
LUME_METAL_SIM_BOOTOUT_LINGER=60 LUME_METAL_SIM_BOOTOUT_INPROGRESS=1 launchctl bootout "gui/$uid/com.example.sim" 2>"$T/e"
is_eq "bootout under INPROGRESS exits 36" $? 36
check_grep "... Operation now in progress" '^Boot-out failed: 36: Operation now in progress$' "$T/e"
gone
check_rc "LINGER=60 ends at the job's ExitTimeOut (3 s): it is gone within 10 s" 113 launchctl print "gui/$uid/com.example.sim"
# lipo: a thin arm64 header, a universal x86_64 + arm64 one, an ELF, a missing file
printf '\317\372\355\376\014\000\000\001\000\000\000\000\002\000\000\000' >"$T/thin"
head -c 16 /dev/zero >>"$T/thin"
{
	printf '\312\376\272\276\000\000\000\002'
	printf '\001\000\000\007\000\000\000\003\000\000\020\000\000\000\000\040\000\000\000\014'
	printf '\001\000\000\014\000\000\000\000\000\000\040\000\000\000\000\040\000\000\000\015'
	head -c 4048 /dev/zero
	printf '\317\372\355\376\007\000\000\001\003\000\000\000\002\000\000\000'
	head -c 4080 /dev/zero
	cat "$T/thin"
} >"$T/fat"
is_eq "lipo -archs of a thin arm64 file" "$(lipo -archs "$T/thin")" "arm64 "
is_eq "lipo -archs of a universal file, in its order" "$(lipo -archs "$T/fat")" "x86_64 arm64 "
LL=$(command -v llvm-lipo) || for LL in /usr/lib/llvm-*/bin/llvm-lipo; do :; done
for f in "$T/thin" "$T/fat" "$TOP/build/macos/liblumemetal.dylib"; do
	if [ -x "$LL" ] && [ -f "$f" ]; then
		is_eq "lipo -archs says what llvm-lipo says of ${f##*/}" "$(lipo -archs "$f" | od -c)" "$("$LL" -archs "$f" | od -c)"
	fi
done
is_eq "lipo -info of a thin file" "$(lipo -info "$T/thin")" "Non-fat file: $T/thin is architecture: arm64"
is_eq "lipo -info of a universal file" "$(lipo -info "$T/fat")" "Architectures in the fat file: $T/fat are: x86_64 arm64 "
lipo -archs "$T/good.plist" >"$T/o" 2>"$T/e"
is_eq "lipo -archs of a file that is not Mach-O exits 1" $? 1
check_grep "... can't figure out the architecture type" "^fatal error: .*/lipo: can't figure out the architecture type of: $T/good.plist\$" "$T/e"
lipo -archs "$T/none" >"$T/o" 2>"$T/e"
is_eq "lipo -archs of a missing file exits 1" $? 1
check_grep "... can't open input file" "^fatal error: .*/lipo: can't open input file: $T/none \\(No such file or directory\\)\$" "$T/e"
check_rc "lipo without arguments exits 1" 1 lipo

# codesign: an unsigned thin and universal file, a file that is not Mach-O, a missing one
codesign --verify --strict "$T/thin" >"$T/o" 2>"$T/e"
is_eq "codesign --verify of an unsigned Mach-O exits 1" $? 1
printf '%s: code object is not signed at all\nIn architecture: arm64\n' "$T/thin" >"$T/e.want"
check "... not signed at all, in architecture arm64" diff -u "$T/e.want" "$T/e"
codesign -v "$T/fat" 2>"$T/e"
check_grep "codesign -v of an unsigned universal file names its first slice" '^In architecture: x86_64$' "$T/e"
codesign -d --verbose "$T/good.plist" >"$T/o" 2>"$T/e"
is_eq "codesign -d of a plain file exits 1" $? 1
is_eq "... not signed at all" "$(cat "$T/e")" "$T/good.plist: code object is not signed at all"
codesign -v "$T/none" 2>"$T/e"
is_eq "codesign -v of a missing file exits 1" $? 1
is_eq "... No such file or directory" "$(cat "$T/e")" "$T/none: No such file or directory"
check_rc "codesign without an operation exits 2" 2 codesign "$T/thin"

# codesign on the ad-hoc signed arm64 shim the build made with zig (make shim)
DY=$TOP/build/macos/liblumemetal.dylib
if [ -f "$DY" ]; then
	cp "$DY" "$T/shim.dylib"
	mkdir "$T/cs-tmp"
	TMPDIR=$T/cs-tmp codesign --verify --strict "$T/shim.dylib" >"$T/o" 2>"$T/e"
	is_eq "codesign --verify --strict of the ad-hoc signed shim: silent, exit 0" "$?:$(cat "$T/e")" 0:
	is_eq "... leaving nothing in TMPDIR (its code pages were hashed there)" "$(ls -A "$T/cs-tmp")" ""
	codesign -vv "$T/shim.dylib" 2>"$T/e"
	check_grep "codesign -vv: valid on disk" "^$T/shim.dylib: valid on disk\$" "$T/e"
	codesign -d --verbose "$T/shim.dylib" 2>"$T/e"
	check_grep "codesign -d --verbose: Executable" "^Executable=$T/shim.dylib\$" "$T/e"
	check_grep "codesign -d --verbose: Format" '^Format=Mach-O thin \(arm64\)$' "$T/e"
	check_grep "codesign -d --verbose: an ad-hoc, linker-signed CodeDirectory" '^CodeDirectory v=[0-9a-f]+ size=[0-9]+ flags=0x20002\(adhoc,linker-signed\) hashes=[0-9]+\+[0-9]+ location=embedded$' "$T/e"
	check_grep "codesign -d --verbose: Signature=adhoc" '^Signature=adhoc$' "$T/e"
	codesign -d "$T/shim.dylib" 2>"$T/e"
	is_eq "codesign -d alone prints Executable only" "$(cat "$T/e")" "Executable=$T/shim.dylib"
	flip_byte "$T/shim.dylib" 1000
	codesign --verify --strict "$T/shim.dylib" >"$T/o" 2>"$T/e"
	is_eq "codesign --verify of the shim with one byte changed exits 1" $? 1
	printf '%s: invalid signature (code or signature have been modified)\nIn architecture: arm64\n' "$T/shim.dylib" >"$T/e.want"
	check "... invalid signature, in architecture arm64" diff -u "$T/e.want" "$T/e"
else
	ok "codesign on the shim # SKIP no build/macos/liblumemetal.dylib (make shim)"
fi

# llama-perplexity and llama-bench (SIMULATED llama.cpp): the Metal device and the figures are the
# ones the shim really produced in the process (the real probe runs under its environment and
# name), not what its variables ask for: a shim that fails closed, or is not scoped to the
# process, leaves the device stock, and a KL comparison of stock against stock is 0.
for c in llama-perplexity llama-bench; do
	head -n 3 "$S/$c" >"$T/.head.$c"
	check_grep "$c is labelled a SIMULATION in its first lines" '^# SIMULATION of llama\.cpp' "$T/.head.$c"
done
printf 'GGUF stand-in\n' >"$T/m.gguf"
awk 'BEGIN { for (i = 0; i < 300; i++) print "The quick brown fox jumps over the lazy dog." }' >"$T/text.txt"
SHIM=$TOP/build/linux/liblumemetal.so
# ppl NAME [VAR=VALUE...]: the KL arm against $T/base, the shim preloaded with those variables
# (LUME_METAL_PROCESSES=llama-perplexity unless one is given); stdout NAME.out, stderr NAME.err.
ppl() {
	p_n=$1
	shift
	env LD_PRELOAD="$SHIM" LUME_METAL_PROCESSES=llama-perplexity "$@" \
		llama-perplexity -m "$T/m.gguf" -c 128 --kl-divergence-base "$T/base" --kl-divergence >"$T/$p_n.out" 2>"$T/$p_n.err"
	is_eq "$p_n: exit 0" $? 0
}
llama-perplexity -m "$T/m.gguf" -f "$T/text.txt" -c 128 --kl-divergence-base "$T/base" >"$T/base.out" 2>"$T/base.err"
is_eq "the stock arm: exit 0" $? 0
check_grep "... its base file starts with _logits_ and the context" '^_logits_ simulation n_ctx=128$' "$T/base"
check_grep "... its logits from the plain kernels (no simdgroup matrix on the stock device)" '^chunks=[0-9]+ kernels=plain$' "$T/base"
check_grep "... the build that prints ggml_metal_device_init lines (b10167, the evidence's)" '^build: 10167 \(ee3d1b54c\) with ' "$T/base.err"
check_grep "... Apple5" '^ggml_metal_device_init: GPU family: MTLGPUFamilyApple5  \(1005\)$' "$T/base.err"

ppl shim LUME_METAL_APPLE_FAMILY_MAX=1009
check_grep "shim arm: the shim's own activation line" '^\[lume-metal\] active in llama-perplexity \(AppleParavirtDevice\): appleFamilyMax=1009 ' "$T/shim.err"
check_grep "... Apple9" '^ggml_metal_device_init: GPU family: MTLGPUFamilyApple9  \(1009\)$' "$T/shim.err"
check_grep "... simdgroup matrix mul. true" '^ggml_metal_device_init: simdgroup matrix mul\. = true$' "$T/shim.err"
check_grep "... the simdgroup kernels against the plain ones: mean KLD 0.000412" '^Mean    KLD:   0\.000412 ' "$T/shim.out"

ppl out-of-range LUME_METAL_APPLE_FAMILY_MAX=1000
check_grep "LUME_METAL_APPLE_FAMILY_MAX=1000: the shim says it stays stock" '^\[lume-metal\] llama-perplexity stays stock: LUME_METAL_APPLE_FAMILY_MAX="1000" is out of range 1001\.\.1999$' "$T/out-of-range.err"
check_grep "... the device stays Apple5" '^ggml_metal_device_init: GPU family: MTLGPUFamilyApple5  \(1005\)$' "$T/out-of-range.err"
check_grep "... simdgroup matrix mul. false" '^ggml_metal_device_init: simdgroup matrix mul\. = false$' "$T/out-of-range.err"
check_grep "... the same kernels as the base: mean KLD 0" '^Mean    KLD:   0\.000000 ±   0\.000000$' "$T/out-of-range.out"
check_grep "... 100% same top token" '^Same top p: 100\.000 ± 0\.000 %$' "$T/out-of-range.out"
ppl malformed LUME_METAL_APPLE_FAMILY_MAX=1009 LUME_METAL_MAX_THREADGROUP_MEMORY=64k
check_grep "a malformed LUME_METAL_MAX_THREADGROUP_MEMORY: stock too" '^ggml_metal_device_init: simdgroup matrix mul\. = false$' "$T/malformed.err"
ppl hex LUME_METAL_APPLE_FAMILY_MAX=0x3f1
check_grep "LUME_METAL_APPLE_FAMILY_MAX=0x3f1, which the shim reads as 1009: Apple9" '^ggml_metal_device_init: GPU family: MTLGPUFamilyApple9  \(1009\)$' "$T/hex.err"
ppl other-process LUME_METAL_APPLE_FAMILY_MAX=1009 LUME_METAL_PROCESSES=llama-server
check_grep "a shim scoped to another process: stock, mean KLD 0" '^Mean    KLD:   0\.000000 ' "$T/other-process.out"
ppl apple6 LUME_METAL_APPLE_FAMILY_MAX=1006
check_grep "a ceiling of Apple6: the shim is active" '^\[lume-metal\] active in llama-perplexity ' "$T/apple6.err"
check_grep "... but without Apple7 no simdgroup matrix mul." '^ggml_metal_device_init: simdgroup matrix mul\. = false$' "$T/apple6.err"
check_grep "... bfloat from Apple6" '^ggml_metal_device_init: has bfloat            = true$' "$T/apple6.err"
check_grep "... the plain kernels again: mean KLD 0" '^Mean    KLD:   0\.000000 ' "$T/apple6.out"
ppl no-base-class LUME_METAL_APPLE_FAMILY_MAX=1009 LUME_METAL_SIM_BASE_NAME=MTLOtherDevice
check_grep "a Metal without _MTLDevice: the shim stays stock, and says why" '^\[lume-metal\] llama-perplexity stays stock: class _MTLDevice not found$' "$T/no-base-class.err"
check_grep "... mean KLD 0" '^Mean    KLD:   0\.000000 ' "$T/no-base-class.out"
LUME_METAL_SIM_PPL=bad-kld ppl bad LUME_METAL_APPLE_FAMILY_MAX=1009
check_grep "broken simdgroup kernels (LUME_METAL_SIM_PPL=bad-kld): mean KLD 1.87" '^Mean    KLD:   1\.873412 ' "$T/bad.out"
LUME_METAL_SIM_PPL=bad-kld ppl bad-stock LUME_METAL_APPLE_FAMILY_MAX=1000
check_grep "... which never run where the shim stays stock: 0" '^Mean    KLD:   0\.000000 ' "$T/bad-stock.out"
env LD_PRELOAD="$SHIM" LUME_METAL_PROCESSES=llama-bench LUME_METAL_APPLE_FAMILY_MAX=1000 \
	llama-bench -m "$T/m.gguf" -p 16 -n 4 -r 1 -o json >"$T/lb.out" 2>"$T/lb.err"
check_grep "llama-bench with a shim that stays stock: the stock figures (~432 pp)" '"samples_ts": \[ 4[0-9]{2}\.[0-9]+ \]' "$T/lb.out"
env LD_PRELOAD="$SHIM" LUME_METAL_PROCESSES=llama-bench LUME_METAL_APPLE_FAMILY_MAX=1009 \
	llama-bench -m "$T/m.gguf" -p 16 -n 4 -r 1 -o json >"$T/lb.out" 2>"$T/lb.err"
check_grep "... and with the shim active, the shim's (~4787 pp)" '"samples_ts": \[ 4[0-9]{3}\.[0-9]+ \]' "$T/lb.out"
check_grep "... its build, the one that prints ggml_metal_device_init lines" '"build_number": 10167,' "$T/lb.out"

# Its own errors, as llama.cpp's tools/perplexity/perplexity.cpp has them: LOG_ERR, then exit 0.
# 2 x n_ctx tokens are needed: 1000 bytes are 250 tokens here, enough for one context of 128 and
# not for two of 256 (the old simulation asked for one).
head -c 1000 "$T/text.txt" >"$T/short.txt"
llama-perplexity -m "$T/m.gguf" -f "$T/short.txt" -c 128 --kl-divergence-base "$T/b128" >"$T/o" 2>"$T/e"
is_eq "250 tokens, context 128 (256 needed): exit 0" $? 0
check_grep "... you need at least 256 tokens" '^perplexity: you need at least 256 tokens to evaluate perplexity with a context of 128$' "$T/e"
check_grep "... the data file tokenizes to only 250" '^perplexity: the data file you provided tokenizes to only 250 tokens$' "$T/e"
is_eq "... the base file holds its header alone, written before the text was tokenized" "$(cat "$T/b128")" "_logits_ simulation n_ctx=128"
llama-perplexity -m "$T/m.gguf" -c 128 --kl-divergence-base "$T/b128" --kl-divergence >"$T/o" 2>"$T/e"
is_eq "the comparison against that base: exit 0" $? 0
check_grep "... failed reading n_vocab, n_chunk" "^kl_divergence: failed reading n_vocab, n_chunk from $T/b128\$" "$T/e"
check "... and no statistics" sh -c '! grep -q "KLD" "$1"' - "$T/o"
llama-perplexity -m "$T/m.gguf" -f "$T/short.txt" -c 64 --kl-divergence-base "$T/b64" >"$T/o" 2>"$T/e"
check "250 tokens for context 64 (128 needed): no error" sh -c '! grep -q "you need" "$1"' - "$T/e"
llama-perplexity -m "$T/m.gguf" -c 128 --kl-divergence-base "$T/no-such-base" --kl-divergence >"$T/o" 2>"$T/e"
is_eq "a base file that cannot be opened: exit 0" "$?:$(tail -n 1 "$T/e")" "0:kl_divergence: failed to open $T/no-such-base"
printf 'not logits\n' >"$T/junk"
llama-perplexity -m "$T/m.gguf" -c 128 --kl-divergence-base "$T/junk" --kl-divergence >"$T/o" 2>"$T/e"
is_eq "a base file that is not one: exit 0" "$?:$(tail -n 1 "$T/e")" "0:kl_divergence: $T/junk does not look like a file containing log-probabilities"
llama-perplexity -m "$T/m.gguf" -f "$T/text.txt" -c 128 --kl-divergence-base "$T/no-dir/base" >"$T/o" 2>"$T/e"
is_eq "a base file that cannot be written: exit 0" "$?:$(tail -n 1 "$T/e")" "0:perplexity: failed to open $T/no-dir/base for writing"
llama-perplexity -m "$T/no-model.gguf" -f "$T/text.txt" -c 128 >"$T/o" 2>"$T/e"
is_eq "a model that does not load: exit 1, as the real one" $? 1

# An older build (LUME_METAL_SIM_LLAMA_BUILD=5970, before the Metal device split of about b6500):
# the ggml_metal_init lines of its ggml-metal.m, the GPU name alone, and its build line.
LUME_METAL_SIM_LLAMA_BUILD=5970 ppl old LUME_METAL_APPLE_FAMILY_MAX=1009
check_grep "b5970: its build line" '^build: 5970 \(07a19e27\) with ' "$T/old.err"
check_grep "... ggml_metal_init: GPU name, the name alone" '^ggml_metal_init: GPU name:   Apple Paravirtual device$' "$T/old.err"
check_grep "... Apple9 through the shim" '^ggml_metal_init: GPU family: MTLGPUFamilyApple9  \(1009\)$' "$T/old.err"
check_grep "... simdgroup matrix mul. true" '^ggml_metal_init: simdgroup matrix mul\. = true$' "$T/old.err"
check_grep "... its residency line" '^ggml_metal_init: has residency sets    = true$' "$T/old.err"
check "... and no ggml_metal_device_init line" sh -c '! grep -q "^ggml_metal_device_init" "$1"' - "$T/old.err"
LUME_METAL_SIM_LLAMA_BUILD=5970 llama-bench -m "$T/m.gguf" -p 16 -n 4 -r 1 -o json >"$T/lb.out" 2>"$T/lb.err"
check_grep "b5970 llama-bench: its build in the JSON" '"build_commit": "07a19e27",' "$T/lb.out"
check_grep "... and the older lines" '^ggml_metal_init: simdgroup matrix mul\. = false$' "$T/lb.err"
LUME_METAL_SIM_LLAMA_BUILD=6000 llama-bench -m "$T/m.gguf" -p 16 -n 4 -r 1 -o json >"$T/lb.out" 2>"$T/lb.err"
is_eq "a build that is not simulated: exit 1" $? 1
t_done
