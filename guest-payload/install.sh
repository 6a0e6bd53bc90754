#!/bin/sh
# shellcheck disable=SC2317 # traps call some functions (common.sh is followed: shellcheck -x)
# install.sh --payload FILE --sha256 HEX [--no-validate] [--verified] [--stock-file FILE]
#            [--confirm-timeout SEC] [--confirm-settle SEC] [--mark-settle]
#
# Installs one lume-metal payload for the logged-in user of a macOS guest. It can run from any
# copy; deploy runs `tar -xzOf FILE bin/install.sh | sh -s -- ...`. Order: check the payload's
# SHA-256, check every entry name and type, unpack under staging/, check every file against
# SHA256SUMS (and SHA256SUMS against MANIFEST.json), move it to releases/<sha>/, run the probe
# stock and shimmed, and only on a pass render the LaunchAgent (its program checked by
# run-with-shim --check), switch `current` (a temporary link renamed over it), keep `previous`,
# bootstrap the service, and confirm that the process launchd runs has the shim active.
# Anything that fails puts back what was there, so the previous state keeps running.
#
# --verified is for lume-metal's deploy, which checked every entry of this very payload (name,
# type, size, SHA-256, SHA256SUMS against MANIFEST.json, no placeholder) before sending it: once
# the whole payload's SHA-256 matches (step 1, always), that check holds for every entry, so the
# names listing, the per-file SHA256SUMS pass and the MANIFEST.json cross-check are skipped; the
# type check of every entry and the unpack stay. --stock-file FILE gives the stock probe's answer
# as recorded for this image version (deploy, from its ledger), instead of running the stock
# probe; the shimmed probe still runs against it. Run by hand or by another tool, without these
# flags, every check runs. --confirm-timeout SEC (1..3600) and --confirm-settle SEC (0..600) are
# step 8's wait and watch (deploy's flags of those names); given, they win over the environment's
# LUME_METAL_CONFIRM_TIMEOUT and LUME_METAL_CONFIRM_SETTLE, which win over 60 and 5.
# --mark-settle (deploy's driver) prints two lines on stdout before the JSON once the shim is
# active in the workload, the workload is ready, and the settle (when not 0) begins:
# "lume-metal:settle N" and "lume-metal:settling"; the controller then goes on with other VMs and
# reads the answer when the settle is over. The JSON stays the last line, and nothing else changes.
#
# Prints one JSON object on stdout:
#   {"result":"installed"|"unchanged"|"failed","sha256":...,"current":...,"previous":...,
#    "label":...,"plist":...,"validated":true|false,"reason":...,"cause":"image"|"workload"|null,
#    "stock":{probe}|null,"shimmed":{probe}|null,"confirm":{"timeout":N,"settle":N}|null,
#    "readyMs":N|null,"process":{"pid":N,"shimActive":true|false|null,"shim":{...}|null}|null}
# "process" is the workload's process launchd runs after the bootstrap (its pid, and the state
# its shim left in $LOGS/<label>.shim/<pid>): step 8 confirms it, within "confirm"'s timeout
# (seconds), and reverts when it stays stock, aborts or crash-loops (confirm_job in common.sh).
# A workload that says how to know it serves (payload.env's LUME_METAL_READY_URL, from its
# manifest's "readiness") must then answer 200 there within the same timeout: "readyMs" is the
# time from the bootstrap to that answer (null without one). Then it is watched "settle" seconds
# more. "cause" says what a failure is about: "image" when the shim cannot work there (the
# shimmed probe, the program's --check, a job where the shim was never seen active), "workload"
# when the shim was active in the job's process and it then exited, crash-looped or never became
# ready; null for everything else (a full disk, the lock, launchctl).
# Exit 0 installed or unchanged, 1 refused or failed (old state kept), 2 usage.
set -u

# The shared helpers: beside this script, or already read in this same `sh -s` (deploy).
# shellcheck source=SCRIPTDIR/common.sh
[ -n "${LM_COMMON_LOADED:-}" ] || . "$(dirname "$0")/common.sh" || exit 2

payload="" want="" validate=1 verified=0 stock_file=""
sha="" cur_sha="" prev_sha="" label="" plist="" reason=""
stock_json=null shimmed_json=null validated=false proc=null
cause="" c_conf=null confirm_timeout="" confirm_settle="" mark_settle=0 ready_ms=null
work="" locked=0 new_rel=0 displaced="" activating=0 R="" cleaned=""

# emit RESULT: the one JSON object, printed piece by piece (no $(...)).
emit() {
	printf '{"result":"%s","sha256":' "$1"
	jopt "$sha"
	link_sha current
	printf ',"current":'
	jopt "$l_sha"
	link_sha previous
	printf ',"previous":'
	jopt "$l_sha"
	printf ',"label":'
	jopt "$label"
	printf ',"plist":'
	jopt "$plist"
	printf ',"validated":%s,"reason":' "$validated"
	jopt "$reason"
	printf ',"cause":'
	jopt "$cause"
	printf ',"cleaned":'
	jopt "$cleaned"
	printf ',"stock":%s,"shimmed":%s,"confirm":%s,"readyMs":%s,"process":%s}\n' "$stock_json" "$shimmed_json" "$c_conf" \
		"$ready_ms" "$proc"
}
# cleanup: the work directory and the lock, in one rm.
cleanup() {
	set --
	[ -z "$work" ] || set -- "$work"
	[ "$locked" -eq 0 ] || set -- "$@" "$ROOT/.lock"
	[ $# -eq 0 ] || rm -rf "$@"
}
trap cleanup EXIT
trap 'fail "interrupted"' INT TERM HUP
# A session that goes away (the controller interrupted or killed) sends no HUP to a command
# without a terminal; its pipes just close. Writing to them then fails instead of killing this
# script mid-way, so it runs to its end and its EXIT trap drops the lock and staging.
trap '' PIPE

usage() {
	reason="usage: install.sh --payload FILE --sha256 HEX [--no-validate] [--verified] [--stock-file FILE] [--confirm-timeout SEC] [--confirm-settle SEC] [--mark-settle]${1:+ ($1)}"
	say "$reason"
	emit failed
	exit 2
}
# fail REASON: puts back what this run changed, reports, exits 1.
fail() {
	reason=$1
	trap '' INT TERM HUP
	[ -z "${c_pid:-}" ] || proc="{\"pid\":$c_pid,\"shimActive\":$c_active,\"shim\":$c_json}"
	[ "$activating" -eq 0 ] || revert_activation
	if [ "$new_rel" -eq 1 ] && [ -n "$R" ]; then rm -rf "$R"; fi
	if [ -n "$displaced" ] && [ -d "$displaced" ]; then
		mv "$displaced" "$R" || reason="$reason; could not put back $R"
	fi
	say "$reason"
	emit failed
	exit 1
}

while [ $# -gt 0 ]; do
	case $1 in
	--payload) [ $# -ge 2 ] || usage "--payload needs a file"; payload=$2; shift 2 ;;
	--sha256) [ $# -ge 2 ] || usage "--sha256 needs a value"; want=$2; shift 2 ;;
	--no-validate) validate=0; shift ;;
	--verified) verified=1; shift ;;
	--stock-file) [ $# -ge 2 ] || usage "--stock-file needs a file"; stock_file=$2; shift 2 ;;
	--confirm-timeout)
		[ $# -ge 2 ] || usage "--confirm-timeout needs seconds"
		{ secs "$2" 3600 && [ "$n_out" -ge 1 ]; } || usage "--confirm-timeout $2: not a whole number of seconds from 1 to 3600"
		confirm_timeout=$n_out
		shift 2
		;;
	--confirm-settle)
		[ $# -ge 2 ] || usage "--confirm-settle needs seconds"
		secs "$2" 600 || usage "--confirm-settle $2: not a whole number of seconds from 0 to 600"
		confirm_settle=$n_out
		shift 2
		;;
	--mark-settle) mark_settle=1; shift ;;
	-h | --help) usage ;;
	*) usage "unknown argument: $1" ;;
	esac
done
[ -n "$payload" ] || usage "no --payload"
case $want in *[A-F]*) want=$(printf '%s' "$want" | tr 'ABCDEF' 'abcdef') ;; esac
case $want in *[!0-9a-f]* | '') usage "--sha256 must be 64 hex digits" ;; esac
[ ${#want} -eq 64 ] || usage "--sha256 must be 64 hex digits"
home_ok || usage "HOME must be an absolute path without newlines"
if [ ! -f "$payload" ] || [ ! -r "$payload" ]; then
	reason="payload $payload is not a readable file"
	say "$reason"
	emit failed
	exit 1
fi
uid=$(id -u)
case $payload in /*) ;; *) payload="$(pwd)/$payload" ;; esac

mkdir -p "$ROOT/releases" "$ROOT/staging" "$AGENTS" "$LOGS" 2>/dev/null ||
	fail "cannot create $ROOT, $AGENTS or $LOGS (full disk or permissions?)"
lock || fail "another lume-metal install or rollback holds $ROOT/.lock (remove it if no such process runs)"
locked=1
# What an earlier run left (its session went away, or it was killed): a lock whose pid is dead,
# and staging folders; with the lock held, no other install's can be among them.
[ -z "$l_stale" ] || cleaned="the lock of pid $l_stale, which is dead"
for d in "$ROOT/staging"/.install.*; do
	[ -d "$d" ] || continue
	rm -rf "$d" && cleaned="${cleaned:+$cleaned, }staging/${d##*/}"
done
link_sha current
cur_sha=$l_sha
link_sha previous
prev_sha=$l_sha

# 1. The payload is the one the host built.
got=$(shasum -a 256 <"$payload" 2>/dev/null)
got=${got%% *}
if [ "$got" != "$want" ]; then
	fail "payload SHA-256 is ${got:-unreadable}, expected $want: the upload is tampered with or truncated"
fi
sha=$want
R="$ROOT/releases/$sha"

# 2. Reinstalling what is already current and intact, with the same agent loaded: no change.
if [ "$sha" = "$cur_sha" ] && release_drift "$R" >/dev/null && label_of "$R"; then
	label=$lbl plist="$AGENTS/$lbl.plist"
	if [ -f "$plist" ] && render_plist "$R" | cmp -s - "$plist" && is_loaded "$label"; then
		emit unchanged
		exit 0
	fi
fi
label="" plist=""

# 3. Entry names and types, before anything is unpacked (one listing of each, one awk).
work="$ROOT/staging/.install.$$"
[ ! -e "$work" ] || rm -rf "$work"
fresh="$work/release"
mkdir "$work" "$fresh" || fail "cannot create $fresh (full disk?)"
# list_to FILE TAR-FLAGS: the payload's listing in FILE; fails with why (a bad archive or a full disk).
list_to() {
	tar "$2" "$payload" >"$1" 2>/dev/null && return 0
	l_err=$(tar "$2" "$payload" 2>&1 >/dev/null) && fail "cannot write $1 (full disk?)"
	fail "payload is not a readable tar.gz: $(printf '%s' "$l_err" | tail -n 2 | tr '\n' ' ')"
}
# check_entries: every entry a plain file or directory, inside the payload's directory, and
# SHA256SUMS among them (one listing of names, one of types, one awk). Verified (--verified, the
# SHA-256 matched): the listing of types alone, for the type check (names, and SHA256SUMS, were
# checked on the controller; tar refuses names outside its directory all the same).
check_entries() {
	if [ "$verified" -eq 1 ]; then
		list_to "$work/types" -tvzf
		listing=""
		! grep -q '^[^d-]' "$work/types" || listing=special
	else
		list_to "$work/names" -tzf
		list_to "$work/types" -tvzf
		listing=$(awk 'FILENAME == ARGV[1] {
				n++; x = $0; sub(/^\.\//, "", x)
				if (bad == "" && (x == "" || x ~ /^\// || x ~ /(^|\/)\.\.(\/|$)/)) bad = $0
				if (x == "SHA256SUMS") sums = 1
				next
			}
			{ t++; c = substr($0, 1, 1); if (c != "-" && c != "d") special = 1 }
			END {
				if (bad != "") print "outside " bad
				else if (t != n) print "inconsistent"
				else if (special) print "special"
				else if (!sums) print "nosums"
			}' "$work/names" "$work/types")
	fi
	case $listing in
	"outside "*) fail "payload has an entry outside its directory: ${listing#outside }" ;;
	inconsistent) fail "payload listing is inconsistent (an entry name with a newline?)" ;;
	special) fail "payload has a link or special entry; only files and directories are allowed" ;;
	nosums) fail "payload has no SHA256SUMS" ;;
	esac
}
check_entries

# 4. Unpack into staging and check every file.
# cd rather than -C: GNU tar unquotes backslashes in a -C directory.
if ! terr=$(cd "$fresh" && tar -xzf "$payload" 2>&1); then
	fail "cannot unpack the payload into $ROOT/staging: $(printf '%s' "$terr" | tail -n 2 | tr '\n' ' ')"
fi
# finding TAG: sets f_out to the text of the TAG line of $sums; fails when there is none.
finding() {
	f_out=$nl$sums$nl
	case $f_out in *"$nl$1 "* | *"$nl$1$nl"*) ;; *) return 1 ;; esac
	f_out=${f_out#*"$nl$1"}
	f_out=${f_out#" "}
	f_out=${f_out%%"$nl"*}
}
# check_files: every unpacked file against SHA256SUMS, and SHA256SUMS against MANIFEST.json.
# Verified (--verified): the controller compared every entry with both, and the SHA-256 of the
# whole payload matched, so neither pass runs (sums stays empty: no finding).
sums=""
check_files() {
	[ "$verified" -eq 0 ] || return 0
	# SHA256SUMS against MANIFEST.json in one pass: malformed lines, required files it must list,
	# checksums MANIFEST.json does not record (MANIFEST.json's own is only in SHA256SUMS), and
	# placeholder binaries. Each finding is one tagged line, reported in the order below.
	sums=$(awk 'FILENAME == ARGV[1] {
			if ($0 ~ /"placeholder"[ \t\r]*:[ \t\r]*true/) ph = 1
			s = $0
			while (match(s, /[0-9a-f]+/)) { if (RLENGTH == 64) m[substr(s, RSTART, 64)] = 1; s = substr(s, RSTART + RLENGTH) }
			next
		}
		$0 == "" { next }
		{
			h = substr($0, 1, 64); sep = substr($0, 65, 2); n = substr($0, 67)
			if (length(h) != 64 || h ~ /[^0-9a-f]/ || (sep != "  " && sep != " *") || n == "" || n ~ /^\// || n ~ /(^|\/)\.\.(\/|$)/) { bad = 1; next }
			have[n] = 1
			if (n != "MANIFEST.json" && !(h in m)) unrec = unrec n " "
		}
		END {
			if (bad) print "malformed"
			k = split("MANIFEST.json payload.env shim.env profile.json LaunchAgent.plist bin/run-with-shim bin/lume-metal-probe", req, " ")
			for (i = 1; i <= k; i++) if (!(req[i] in have)) miss = miss req[i] " "
			if (miss != "") print "missing " miss
			if (unrec != "") print "unrecorded " substr(unrec, 1, length(unrec) - 1)
			if (ph) print "placeholder"
		}' "$fresh/MANIFEST.json" "$fresh/SHA256SUMS")
	! finding malformed || fail "SHA256SUMS has a malformed line"
	if finding missing; then fail "payload does not list ${f_out}in SHA256SUMS"; fi
	if ! drift=$(release_drift "$fresh"); then
		fail "payload files do not match SHA256SUMS: $(printf '%s' "$drift" | tr '\n' ' ')"
	fi
	if finding unrecorded; then fail "MANIFEST.json does not record the SHA-256 of $f_out"; fi
}
check_files
label_of "$fresh" || fail "payload.env has no valid LUME_METAL_LABEL"
label=$lbl
env_get "$fresh/payload.env" LUME_METAL_TARGET || fail "payload.env has no valid LUME_METAL_TARGET"
target=$kv
[ -n "$os" ] || os=$(uname -s)
case $os in Darwin) host_target=macos ;; *) host_target=linux-sim ;; esac
[ "$target" = "$host_target" ] || fail "payload is for target $target, this guest runs $host_target"
plist="$AGENTS/$label.plist"
if [ "$validate" -eq 1 ] && finding placeholder; then
	fail "payload holds placeholder binaries (MANIFEST.json); it cannot be validated"
fi

# 5. Into releases/<sha>: reuse an intact copy, replace a drifted one.
if [ -d "$R" ] && release_drift "$R" >/dev/null; then
	rm -rf "$fresh"
else
	if [ -e "$R" ] || [ -L "$R" ]; then
		displaced="$work/displaced"
		mv "$R" "$displaced" || fail "cannot move the drifted $R aside"
	fi
	mv "$fresh" "$R" || fail "cannot move the release into $R"
	new_rel=1
	find "$R" -type f -exec chmod a-w {} + || fail "cannot make $R read-only"
fi

# 6. Validation: the probe stock, then shimmed against the profile.
# stock_probe: the probe without the shim into $work/stock.json; with --stock-file, the answer
# recorded for this image version instead (it must still be a JSON object).
stock_probe() {
	if [ -n "$stock_file" ]; then
		jfile "$stock_file"
		stock_json=$j_out
		[ "$stock_json" != null ] || fail "--stock-file $stock_file holds no JSON object"
		printf '%s\n' "$stock_json" >"$work/stock.json" || fail "cannot write $work/stock.json (full disk?)"
		return 0
	fi
	(
		unset DYLD_INSERT_LIBRARIES LD_PRELOAD LUME_METAL_APPLE_FAMILY_MAX \
			LUME_METAL_MAX_THREADGROUP_MEMORY LUME_METAL_RECOMMENDED_WORKING_SET_SIZE LUME_METAL_PROCESSES
		exec "$R/bin/lume-metal-probe"
	) >"$work/stock.json" 2>"$work/stock.err"
	rc=$?
	jfile "$work/stock.json"
	stock_json=$j_out
	if [ "$rc" -ne 0 ] || [ "$stock_json" = null ]; then
		fail "stock probe failed (exit $rc): $(tail -n 3 "$work/stock.err" | tr '\n' ' ')"
	fi
}
if [ "$validate" -eq 1 ]; then
	stock_probe
	"$R/bin/run-with-shim" "$R/bin/lume-metal-probe" --expect "$R/profile.json" --stock "$work/stock.json" \
		>"$work/shimmed.json" 2>"$work/shimmed.err"
	rc=$?
	jfile "$work/shimmed.json"
	shimmed_json=$j_out
	# Past the stock probe, a failure is the shim's in this image version.
	[ "$rc" -eq 0 ] && [ "$shimmed_json" != null ] || cause=image
	case $rc in
	0) [ "$shimmed_json" != null ] || fail "shimmed probe printed no JSON" ;;
	1)
		env_get "$R/payload.env" LUME_METAL_PROFILE || kv='?'
		fail "validation failed: the shimmed device does not meet profile $kv (see shimmed.expect.differences)"
		;;
	*) fail "shimmed probe failed (exit $rc): $(tail -n 3 "$work/shimmed.err" | tr '\n' ' ')" ;;
	esac
	validated=true
fi

# 7. The LaunchAgent, rendered and linted before anything live changes.
new_plist="$AGENTS/.$label.plist.new.$$"
render_plist "$R" >"$new_plist" 2>/dev/null || { rm -f "$new_plist"; fail "cannot write $new_plist (full disk?)"; }
if grep -q '__LUME_METAL_' "$new_plist"; then rm -f "$new_plist"; fail "LaunchAgent.plist has an unknown token"; fi
if ! lint=$(plutil -lint "$new_plist" 2>&1); then
	rm -f "$new_plist"
	fail "rendered LaunchAgent does not lint: $lint"
fi
# The program launchd will run must take the shim: run-with-shim --check refuses what dyld would
# abort (arm64e, x86_64; the hardened runtime without disable-library-validation, the
# library-validation flag) or run stock
# (the hardened runtime without allow-dyld-environment-variables), and a program that is not
# Mach-O (on macOS); on linux-sim it checks what run-with-shim checks there. Its reason (one
# line) goes into the failure unchanged.
plist_job "$new_plist" || { rm -f "$new_plist"; fail "cannot read $new_plist"; }
if [ -n "$j_prog" ] && ! c_out=$("$R/bin/run-with-shim" --check "$j_prog" 2>&1 >/dev/null); then
	rm -f "$new_plist"
	cause=image
	c_out=${c_out#run-with-shim: }
	fail "the LaunchAgent's program cannot take the shim: ${c_out%%"$nl"*}"
fi
old_label=""
[ -z "$cur_sha" ] || ! label_of "$ROOT/releases/$cur_sha" || old_label=$lbl
[ "$old_label" != "$label" ] || old_label=""
save_agents "$label" ${old_label:+"$old_label"} || { rm -f "$new_plist"; fail "$s_err"; }

# revert_activation: the links, plists and services as they were before step 8.
revert_activation() {
	activating=0
	restore_agents "$label" ${old_label:+"$old_label"}
}

# 8. Activation. Signals wait until the state is consistent again.
trap '' INT TERM HUP
activating=1
for l in $was_loaded; do
	bootout_wait "$l" || { stuck="$stuck $l"; fail "launchctl bootout gui/$uid/$l: $b_err"; }
done
if [ "$sha" != "$cur_sha" ]; then
	point_link previous "$cur_sha" || fail "cannot switch $ROOT/previous"
	point_link current "$sha" || fail "cannot switch $ROOT/current"
fi
mv -f "$new_plist" "$plist" || fail "cannot move the LaunchAgent to $plist"
[ -z "$old_label" ] || rm -f "$AGENTS/$old_label.plist"
# The shim's state from processes of earlier runs goes: a pid can come again.
shim_dir "$label"
{ rm -rf "$sdir" && mkdir -p "$sdir"; } || fail "cannot make $sdir"
bootstrap_agent "$plist" "$label" || fail "launchctl bootstrap gui/$uid $plist: $b_err"
# The process launchd runs must have the shim active and stay up; otherwise all is put back.
if [ "$validate" -eq 1 ]; then
	env_get "$R/payload.env" LUME_METAL_READY_URL || kv=""
	confirm_job "$label" "$plist" "$kv" || { cause=$c_cause; fail "the workload launchd runs $c_what: $c_err"; }
	proc="{\"pid\":${c_pid:-null},\"shimActive\":$c_active,\"shim\":$c_json}"
	ready_ms=$c_ready
fi
activating=0
new_rel=0
[ -z "$displaced" ] || rm -rf "$displaced"
trap 'fail "interrupted"' INT TERM HUP

# 9. Keep current and previous, drop older releases.
link_sha previous
keep_prev=$l_sha
for d in "$ROOT/releases"/*; do
	[ -d "$d" ] || continue
	n=${d##*/}
	[ "$n" = "$sha" ] || [ "$n" = "$keep_prev" ] || rm -rf "$d"
done
# The result is also kept as install.json (the current release's install), so a deploy that
# finds this release current with no ledger record for it (its session went away before the
# answer arrived) records it from here.
if emit installed >"$ROOT/.install.json.$$" 2>/dev/null && mv -f "$ROOT/.install.json.$$" "$ROOT/install.json"; then
	cat "$ROOT/install.json"
else
	rm -f "$ROOT/.install.json.$$"
	emit installed
fi
exit 0
