#!/bin/sh
# shellcheck disable=SC2317 # the common block has helpers a script may not use; traps call others
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

# ---- common: keep this block identical in install.sh, rollback.sh and status.sh ----
HOME=${HOME:-}
nl='
'
tab=$(printf '\t')
cr=$(printf '\r')
LC_ALL=C
export LC_ALL
umask 022
say() { printf 'lume-metal: %s\n' "$*" >&2; }
# jstr S: S as a JSON string (control characters other than tab, CR and LF are dropped).
# Plain printable text, the common case, costs no process.
jstr() {
	case $1 in
	*[\\\"]* | *[![:print:]]*) ;;
	*) printf '"%s"' "$1"; return 0 ;;
	esac
	printf '"%s"' "$(printf '%s' "$1" | tr -d '\000-\010\013\014\016-\037' |
		sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e "s/$tab/\\\\t/g" -e "s/$cr/\\\\r/g" |
		awk 'NR > 1 { printf "%s", "\\n" } { printf "%s", $0 }')"
}
# jopt S: S as a JSON string, or null when empty.
jopt() { if [ -n "$1" ]; then jstr "$1"; else printf null; fi; }
# jlines: the non-empty lines of stdin as a JSON array of strings.
jlines() {
	first=1
	printf '['
	while IFS= read -r l || [ -n "$l" ]; do
		[ -n "$l" ] || continue
		[ "$first" -eq 1 ] || printf ','
		first=0
		jstr "$l"
	done
	printf ']'
}
# jfile FILE: the JSON object in FILE on one line, or null.
jfile() {
	[ -s "$1" ] || { printf null; return 0; }
	j=$(tr '\n\r' '  ' <"$1" | sed -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//')
	case $j in '{'*'}') printf '%s' "$j" ;; *) printf null ;; esac
}
# env_get FILE KEY: the value of KEY in a KEY=VALUE file; fails when absent or malformed.
env_get() {
	[ -f "$1" ] || return 1
	while IFS='=' read -r k v || [ -n "$k" ]; do
		[ "$k" = "$2" ] || continue
		case $v in *[!A-Za-z0-9_.,:/+@-]*) return 1 ;; esac
		printf '%s\n' "$v"
		return 0
	done <"$1"
	return 1
}
# label_of RELEASE_DIR: the LaunchAgent label of a release, checked.
label_of() {
	l=$(env_get "$1/payload.env" LUME_METAL_LABEL) || return 1
	case $l in '' | *[!A-Za-z0-9._-]* | .*) return 1 ;; esac
	printf '%s\n' "$l"
}
home_ok() {
	case $HOME in
	/*) ;;
	*) return 1 ;;
	esac
	case $HOME in *"$nl"* | *__LUME_METAL_*) return 1 ;; esac
	return 0
}
os=""
ROOT="$HOME/Library/Application Support/lume-metal"
AGENTS="$HOME/Library/LaunchAgents"
LOGS="$HOME/Library/Logs/lume-metal"
# link_sha NAME: the release sha ROOT/NAME points at (releases/<sha>), or nothing.
link_sha() {
	[ -L "$ROOT/$1" ] || return 0
	t=$(readlink "$ROOT/$1") || return 0
	s=${t#releases/}
	[ "$s" != "$t" ] || return 0
	case $s in *[!0-9a-f]* | '') return 0 ;; esac
	[ ${#s} -ne 64 ] || printf '%s\n' "$s"
}
# mv_link TMP DEST: renames the link TMP over the link DEST without following DEST (BSD mv -h,
# GNU mv -T): a plain mv would move TMP into the directory DEST points at.
mv_link() {
	[ -n "$os" ] || os=$(uname -s)
	case $os in
	Darwin | *BSD | DragonFly) mv -f -h "$1" "$2" ;;
	*) mv -f -T "$1" "$2" ;;
	esac
}
# point_link NAME SHA: ROOT/NAME -> releases/SHA by rename of a temporary link; no SHA removes it.
point_link() {
	if [ -z "$2" ]; then
		rm -f "$ROOT/$1"
		return
	fi
	[ "$(link_sha "$1")" != "$2" ] || return 0
	tmp="$ROOT/.$1.tmp.$$"
	rm -f "$tmp"
	ln -s "releases/$2" "$tmp" || return 1
	mv_link "$tmp" "$ROOT/$1" || { rm -f "$tmp"; return 1; }
}
is_loaded() { launchctl print "gui/$uid/$1" >/dev/null 2>&1; }
# bootstrap_agent PLIST LABEL: launchctl bootstrap into gui/<uid>; on failure b_err says why.
# launchd finishes a boot-out asynchronously, so a label still loaded gets one more try.
bootstrap_agent() {
	b_err=$(launchctl bootstrap "gui/$uid" "$1" 2>&1) && return 0
	if is_loaded "$2"; then
		sleep 1
		b_err=$(launchctl bootstrap "gui/$uid" "$1" 2>&1) && return 0
		b_err="$(printf '%s\n' "$b_err" | head -n 1) (gui/$uid/$2 is still loaded; its boot-out did not take effect)"
		return 1
	fi
	b_err=$(printf '%s\n' "$b_err" | head -n 1)
	return 1
}
# release_drift DIR: prints the files of a release that no longer match SHA256SUMS, are
# missing, or are not listed there; fails when there is any.
release_drift() {
	[ -d "$1" ] || { echo "(release directory missing)"; return 1; }
	[ -f "$1/SHA256SUMS" ] || { echo SHA256SUMS; return 1; }
	d_out=$(
		cd "$1" || exit
		shasum -a 256 -c SHA256SUMS 2>/dev/null | sed -n 's/: FAILED.*$//p'
		{
			sed -n 's/^[0-9a-f]\{64\} [ *]/L /p' SHA256SUMS
			find . ! -type d | sed 's|^\./|F |'
			find . -type l | sed 's|^\./|S |'
		} | awk '$1 == "L" { l[substr($0, 3)] = 1; next }
			$1 == "S" || (substr($0, 3) != "SHA256SUMS" && !(substr($0, 3) in l)) { print substr($0, 3) }' | sort -u
	)
	[ -n "$d_out" ] || return 0
	printf '%s\n' "$d_out"
	return 1
}
# sed_repl S: sets e_out to S XML-escaped (& < >) and then escaped for a sed replacement
# (\ & |); plain text costs no process.
sed_repl() {
	case $1 in
	*[\&\<\>\\\|]*)
		e_out=$(printf '%s\n' "$1" | sed -e 's/&/\&amp;/g' -e 's/</\&lt;/g' -e 's/>/\&gt;/g' -e 's/[\\&|]/\\&/g')
		;;
	*) e_out=$1 ;;
	esac
}
# render_plist RELEASE_DIR: the release's LaunchAgent on stdout, tokens replaced (XML-escaped).
render_plist() {
	sed_repl "$HOME"
	r_home=$e_out
	sed_repl "$1"
	sed -e "s|__LUME_METAL_RELEASE__|$e_out|g" -e "s|__LUME_METAL_HOME__|$r_home|g" "$1/LaunchAgent.plist"
}
lock() {
	if mkdir "$ROOT/.lock" 2>/dev/null; then
		echo $$ >"$ROOT/.lock/pid" 2>/dev/null
		return 0
	fi
	p=$(cat "$ROOT/.lock/pid" 2>/dev/null)
	if [ -n "$p" ] && ! kill -0 "$p" 2>/dev/null; then
		rm -rf "$ROOT/.lock"
		mkdir "$ROOT/.lock" 2>/dev/null && { echo $$ >"$ROOT/.lock/pid" 2>/dev/null; return 0; }
	fi
	return 1
}
unlock() { rm -rf "$ROOT/.lock"; }
# ---- end of common block ----

mode=previous
from="" cur_sha="" prev_sha="" label="" reason="" removed="" booted=""
work="" locked=0 activating=0

emit() {
	printf '{"result":"%s","to":"%s","from":%s,"current":%s,"previous":%s,"label":%s,"removed":%s,"bootedOut":%s,"reason":%s}\n' \
		"$1" "$mode" "$(jopt "$from")" "$(jopt "$(link_sha current)")" "$(jopt "$(link_sha previous)")" \
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
# bootout_wait LABEL: boots the service out and waits (up to 3 s) for launchd to let it go.
bootout_wait() {
	is_loaded "$1" || return 0
	b_err=$(launchctl bootout "gui/$uid/$1" 2>&1)
	i=0
	while is_loaded "$1"; do
		if [ "$i" -ge 3 ]; then
			b_err=$(printf '%s\n' "${b_err:-still loaded after launchctl bootout}" | head -n 1)
			return 1
		fi
		sleep 1
		i=$((i + 1))
	done
	booted="$booted$nl$1"
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
cur_sha=$(link_sha current)
prev_sha=$(link_sha previous)
from=$cur_sha

labels=""
for s in $cur_sha $prev_sha; do
	l=$(label_of "$ROOT/releases/$s" 2>/dev/null) || continue
	case " $labels " in *" $l "*) ;; *) labels="$labels $l" ;; esac
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
		if ! bootout_wait "$l"; then
			for b in $booted; do
				launchctl bootstrap "gui/$uid" "$AGENTS/$b.plist" >/dev/null 2>&1
			done
			booted=""
			fail "launchctl bootout gui/$uid/$l failed: $b_err; nothing was removed"
		fi
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
	rm -f "$ROOT/current" "$ROOT/previous" "$ROOT"/.current.tmp.* "$ROOT"/.previous.tmp.*
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
label=$(label_of "$P") || fail "the previous release has no valid LUME_METAL_LABEL"
plist="$AGENTS/$label.plist"
old_label=""
[ -z "$cur_sha" ] || old_label=$(label_of "$ROOT/releases/$cur_sha" 2>/dev/null) || old_label=""
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
backup_of() { printf '%s/plist.%s' "$work" "$1"; }
for l in $label $old_label; do
	if [ -f "$AGENTS/$l.plist" ]; then
		cp -p "$AGENTS/$l.plist" "$(backup_of "$l")" 2>/dev/null ||
			{ rm -f "$new_plist"; fail "cannot back up $AGENTS/$l.plist (full disk?)"; }
	fi
done
was_loaded=""
for l in $label $old_label; do
	if is_loaded "$l"; then was_loaded="$was_loaded $l"; fi
done

revert_activation() {
	activating=0
	if is_loaded "$label"; then launchctl bootout "gui/$uid/$label" >/dev/null 2>&1; fi
	point_link current "$cur_sha" || reason="$reason; could not restore current"
	point_link previous "$prev_sha" || reason="$reason; could not restore previous"
	rm -f "$new_plist"
	for l in $label $old_label; do
		if [ -f "$(backup_of "$l")" ]; then
			mv -f "$(backup_of "$l")" "$AGENTS/$l.plist" || reason="$reason; could not restore $AGENTS/$l.plist"
		else
			rm -f "$AGENTS/$l.plist"
		fi
	done
	for l in $was_loaded; do
		is_loaded "$l" && continue
		if ! e=$(launchctl bootstrap "gui/$uid" "$AGENTS/$l.plist" 2>&1); then
			reason="$reason; re-bootstrapping $l failed too: $(printf '%s' "$e" | head -n 1)"
		fi
	done
	booted=""
}

trap '' INT TERM HUP
activating=1
for l in $was_loaded; do
	bootout_wait "$l" || fail "launchctl bootout gui/$uid/$l failed: $b_err"
done
point_link current "$prev_sha" || fail "cannot switch $ROOT/current"
point_link previous "" || fail "cannot clear $ROOT/previous"
mv -f "$new_plist" "$plist" || fail "cannot move the LaunchAgent to $plist"
[ -z "$old_label" ] || rm -f "$AGENTS/$old_label.plist"
bootstrap_agent "$plist" "$label" || fail "launchctl bootstrap gui/$uid $plist: $b_err"
if ! e=$(launchctl kickstart -k "gui/$uid/$label" 2>&1); then
	fail "launchctl kickstart -k gui/$uid/$label: $(printf '%s' "$e" | head -n 1)"
fi
activating=0
if [ -n "$cur_sha" ] && [ "$cur_sha" != "$prev_sha" ] && [ -d "$ROOT/releases/$cur_sha" ]; then
	rm -rf "$ROOT/releases/$cur_sha" && removed="$ROOT/releases/$cur_sha"
fi
emit rolled-back
exit 0
