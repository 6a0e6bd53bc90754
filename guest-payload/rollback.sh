#!/bin/sh
# shellcheck disable=SC2317 # traps call some functions (common.sh is followed: shellcheck -x)
# rollback.sh [previous|none]
#
# previous (the default): makes the previous release current again, renders its LaunchAgent,
# boots the workload's service out and bootstraps the previous one; the release rolled back
# from is removed and `previous` is cleared, so a second rollback never returns to it. If the
# bootstrap fails, the state from before the rollback is put back.
# none: boots the services out and removes everything lume-metal installed: the LaunchAgents,
# releases/, current, previous and staging/. image.json (the image identity a golden-image
# build stamped in) and ~/Library/Logs/lume-metal/ are kept.
#
# Prints one JSON object on stdout:
#   {"result":"rolled-back"|"nothing-to-do"|"failed","to":"previous"|"none","from":...,
#    "current":...,"previous":...,"label":...,"removed":[...],"bootedOut":[...],"reason":...}
# Exit 0 rolled back or nothing to do, 1 failed (state kept), 2 usage.
set -u

# The shared helpers: beside this script, or already read in this same `sh -s` (deploy).
# shellcheck source=SCRIPTDIR/common.sh
[ -n "${LM_COMMON_LOADED:-}" ] || . "$(dirname "$0")/common.sh" || exit 2

mode=previous
from="" cur_sha="" prev_sha="" label="" reason="" removed="" booted=""
work="" locked=0 activating=0

emit() {
	link_sha current
	e_cur=$l_sha
	link_sha previous
	printf '{"result":"%s","to":"%s","from":%s,"current":%s,"previous":%s,"label":%s,"removed":%s,"bootedOut":%s,"reason":%s}\n' \
		"$1" "$mode" "$(jopt "$from")" "$(jopt "$e_cur")" "$(jopt "$l_sha")" \
		"$(jopt "$label")" "$(printf '%s\n' "$removed" | jlines)" "$(printf '%s\n' "$booted" | jlines)" \
		"$(jopt "$reason")"
}
cleanup() {
	[ -z "$work" ] || rm -rf "$work"
	[ "$locked" -eq 0 ] || unlock
}
trap cleanup EXIT
trap 'fail "interrupted"' INT TERM HUP
usage() {
	reason="usage: rollback.sh [previous|none]${1:+ ($1)}"
	say "$reason"
	emit failed
	exit 2
}
fail() {
	reason=$1
	trap '' INT TERM HUP
	[ "$activating" -eq 0 ] || revert_activation
	say "$reason"
	emit failed
	exit 1
}
case $# in
0) ;;
1) case $1 in previous | none) mode=$1 ;; -h | --help) usage ;; *) usage "unknown argument: $1" ;; esac ;;
*) usage "too many arguments" ;;
esac
home_ok || usage "HOME must be an absolute path without newlines"
uid=$(id -u)
if [ ! -d "$ROOT" ]; then
	emit nothing-to-do
	exit 0
fi
lock || fail "another lume-metal install or rollback holds $ROOT/.lock (remove it if no such process runs)"
locked=1
link_sha current
cur_sha=$l_sha
link_sha previous
prev_sha=$l_sha
from=$cur_sha

labels=""
for s in $cur_sha $prev_sha; do
	label_of "$ROOT/releases/$s" || continue
	case " $labels " in *" $lbl "*) ;; *) labels="$labels $lbl" ;; esac
done

if [ "$mode" = none ]; then
	found=0
	[ -z "$cur_sha$prev_sha" ] || found=1
	for d in "$ROOT/releases"/* "$ROOT/current" "$ROOT/previous" "$ROOT/staging"/* "$ROOT/staging"/.install.*; do
		if [ -e "$d" ] || [ -L "$d" ]; then found=1; fi
	done
	for l in $labels; do
		if [ -f "$AGENTS/$l.plist" ] || is_loaded "$l"; then found=1; fi
	done
	if [ "$found" -eq 0 ]; then
		emit nothing-to-do
		exit 0
	fi
	trap '' INT TERM HUP
	for l in $labels; do
		is_loaded "$l" || continue
		if ! bootout_wait "$l"; then
			for b in $booted; do
				bootstrap_agent "$AGENTS/$b.plist" "$b"
			done
			booted=""
			fail "launchctl bootout gui/$uid/$l: $b_err; nothing was removed"
		fi
		booted="$booted$nl$l"
	done
	for l in $labels; do
		if [ -f "$AGENTS/$l.plist" ]; then
			rm -f "$AGENTS/$l.plist" && removed="$removed$nl$AGENTS/$l.plist"
		fi
	done
	for s in "$ROOT/releases"/*; do
		[ -d "$s" ] || continue
		rm -rf "$s" && removed="$removed$nl$s"
	done
	rm -f "$ROOT/current" "$ROOT/previous" "$ROOT"/.current.tmp.* "$ROOT"/.previous.tmp.* "$ROOT/install.json"
	rm -rf "$ROOT/staging"
	rmdir "$ROOT/releases" 2>/dev/null
	if [ ! -e "$ROOT/image.json" ]; then
		unlock
		locked=0
		rmdir "$ROOT" 2>/dev/null || reason="$ROOT holds files lume-metal did not write; they were kept"
		removed="$removed$nl$ROOT"
	fi
	if [ -e "$ROOT/releases" ] || [ -L "$ROOT/current" ] || [ -L "$ROOT/previous" ]; then
		fail "could not remove everything under $ROOT"
	fi
	emit rolled-back
	exit 0
fi

# mode previous
if [ -z "$prev_sha" ]; then
	if [ -z "$cur_sha" ]; then
		emit nothing-to-do
		exit 0
	fi
	fail "no previous release to roll back to"
fi
P="$ROOT/releases/$prev_sha"
if ! drift=$(release_drift "$P"); then
	fail "the previous release $prev_sha no longer matches its checksums: $(printf '%s' "$drift" | tr '\n' ' ')"
fi
label_of "$P" || fail "the previous release has no valid LUME_METAL_LABEL"
label=$lbl
plist="$AGENTS/$label.plist"
old_label=""
[ -z "$cur_sha" ] || ! label_of "$ROOT/releases/$cur_sha" || old_label=$lbl
[ "$old_label" != "$label" ] || old_label=""

mkdir -p "$AGENTS" "$LOGS" 2>/dev/null || fail "cannot create $AGENTS or $LOGS"
work="$ROOT/staging/.rollback.$$"
rm -rf "$work"
mkdir -p "$work" || fail "cannot create $work (full disk?)"
new_plist="$AGENTS/.$label.plist.new.$$"
render_plist "$P" >"$new_plist" 2>/dev/null || { rm -f "$new_plist"; fail "cannot write $new_plist (full disk?)"; }
if grep -q '__LUME_METAL_' "$new_plist"; then rm -f "$new_plist"; fail "LaunchAgent.plist has an unknown token"; fi
chmod 644 "$new_plist"
if ! lint=$(plutil -lint "$new_plist" 2>&1); then
	rm -f "$new_plist"
	fail "rendered LaunchAgent does not lint: $lint"
fi
save_agents "$label" ${old_label:+"$old_label"} || { rm -f "$new_plist"; fail "$s_err"; }

revert_activation() {
	activating=0
	restore_agents "$label" ${old_label:+"$old_label"}
	booted=""
}

trap '' INT TERM HUP
activating=1
for l in $was_loaded; do
	bootout_wait "$l" || { stuck="$stuck $l"; fail "launchctl bootout gui/$uid/$l: $b_err"; }
	booted="$booted$nl$l"
done
point_link current "$prev_sha" || fail "cannot switch $ROOT/current"
point_link previous "" || fail "cannot clear $ROOT/previous"
mv -f "$new_plist" "$plist" || fail "cannot move the LaunchAgent to $plist"
[ -z "$old_label" ] || rm -f "$AGENTS/$old_label.plist"
# The shim's state from earlier processes goes, as install does: a pid can come again.
shim_dir "$label"
rm -rf "$sdir"
bootstrap_agent "$plist" "$label" || fail "launchctl bootstrap gui/$uid $plist: $b_err"
activating=0
if [ -n "$cur_sha" ] && [ "$cur_sha" != "$prev_sha" ] && [ -d "$ROOT/releases/$cur_sha" ]; then
	rm -rf "$ROOT/releases/$cur_sha" && removed="$ROOT/releases/$cur_sha"
fi
emit rolled-back
exit 0
