#!/bin/sh
# shellcheck disable=SC2034,SC2317 # helpers answer in variables the loader reads; traps call some helpers
# common.sh: the helpers install.sh, rollback.sh and status.sh share (JSON output, KEY=VALUE
# reading, the layout, the link switch, the lock). Loaded by `. "$(dirname "$0")/common.sh"`,
# or read first in the same `sh -s` when deploy pipes `tar -xzOf PAYLOAD bin/common.sh
# bin/install.sh` (the archive lists it first). It is one of the payload's checksummed files.
# A helper takes what it needs as arguments, or from these variables, which the loader sets
# after loading this file and before it calls the helpers that read them (empty until then):
#   uid        the user's id (id -u): launchctl's gui/<uid> domain (is_loaded, bootout_wait,
#              bootstrap_agent, job_info)
#   work       the run's scratch directory under staging/ (backup_of, confirm_job)
#   label, new_plist, cur_sha, prev_sha
#              the activation restore_agents undoes: the LaunchAgent being activated, its new
#              plist, and the releases current and previous pointed at before
#   confirm_timeout, confirm_settle, mark_settle
#              install.sh's --confirm-timeout, --confirm-settle and --mark-settle (confirm_job;
#              empty: the defaults)
# A helper that fails says why in a variable (b_err, c_err, s_err...) and returns 1: what to do
# then (fail, revert) is the loader's.
uid="" work="" label="" new_plist="" cur_sha="" prev_sha=""
confirm_timeout="" confirm_settle="" mark_settle=0
HOME=${HOME:-}
nl='
'
tab='	'
cr=$(printf '\r')
LC_ALL=C
export LC_ALL
umask 022
say() { printf 'lume-metal: %s\n' "$*" >&2; }
# jv S: sets j_v to S as a JSON string (control characters other than tab, CR and LF are
# dropped); plain printable text, the common case, costs no process. jstr S prints it.
jv() {
	case $1 in
	*[\\\"]* | *[![:print:]]*) ;;
	*) j_v="\"$1\""; return 0 ;;
	esac
	j_v="\"$(printf '%s' "$1" | tr -d '\000-\010\013\014\016-\037' |
		sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e "s/$tab/\\\\t/g" -e "s/$cr/\\\\r/g" |
		awk 'NR > 1 { printf "%s", "\\n" } { printf "%s", $0 }')\""
}
jstr() { jv "$1"; printf '%s' "$j_v"; }
# jvo S: sets j_v to S as a JSON string, or null when empty; jopt S prints it.
jvo() { if [ -n "$1" ]; then jv "$1"; else j_v=null; fi; }
jopt() { jvo "$1"; printf '%s' "$j_v"; }
# jl: sets j_v to the non-empty lines of stdin as a JSON array of strings; jlines prints it, and
# jlv TEXT is jl of TEXT's lines.
jl() {
	jl_out="[" jl_first=1
	while IFS= read -r jl_l || [ -n "$jl_l" ]; do
		[ -n "$jl_l" ] || continue
		jv "$jl_l"
		[ "$jl_first" -eq 1 ] || jl_out="$jl_out,"
		jl_first=0 jl_out="$jl_out$j_v"
	done
	j_v="$jl_out]"
}
jlines() { jl; printf '%s' "$j_v"; }
jlv() {
	jl <<JLV
$1
JLV
}
# The helpers below answer in a variable, not on stdout: a $(...) is a process.
# jfile FILE: sets j_out to the JSON object in FILE on one line (its lines trimmed of blanks and
# CRs, joined by a space), or null.
jfile() {
	j_out=""
	if [ -s "$1" ]; then
		while IFS=" $tab$cr" read -r j_l || [ -n "$j_l" ]; do
			j_out=$j_out${j_out:+${j_l:+ }}$j_l
		done <"$1"
	fi
	case $j_out in '{'*'}') ;; *) j_out=null ;; esac
}
# env_get FILE KEY: sets kv to the value of KEY in a KEY=VALUE file; fails when absent or malformed.
env_get() {
	kv=""
	[ -f "$1" ] || return 1
	while IFS='=' read -r k v || [ -n "$k" ]; do
		[ "$k" = "$2" ] || continue
		case $v in *[!A-Za-z0-9_.,:/+@-]*) return 1 ;; esac
		kv=$v
		return 0
	done <"$1"
	return 1
}
# label_of RELEASE_DIR: sets lbl to the LaunchAgent label of a release, checked; fails without one.
label_of() {
	lbl=""
	env_get "$1/payload.env" LUME_METAL_LABEL || return 1
	case $kv in '' | *[!A-Za-z0-9._-]* | .*) return 1 ;; esac
	lbl=$kv
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
# link_sha NAME: sets l_sha to the release sha ROOT/NAME points at (releases/<sha>), or "".
# readlink runs only when ROOT/NAME is a link.
link_sha() {
	l_sha=""
	[ -L "$ROOT/$1" ] || return 0
	l_t=$(readlink "$ROOT/$1") || return 0
	l_s=${l_t#releases/}
	[ "$l_s" != "$l_t" ] || return 0
	case $l_s in *[!0-9a-f]* | '') return 0 ;; esac
	[ ${#l_s} -ne 64 ] || l_sha=$l_s
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
		if [ -e "$ROOT/$1" ] || [ -L "$ROOT/$1" ]; then rm -f "$ROOT/$1"; fi
		return
	fi
	link_sha "$1"
	[ "$l_sha" != "$2" ] || return 0
	tmp="$ROOT/.$1.tmp.$$"
	if [ -e "$tmp" ] || [ -L "$tmp" ]; then rm -f "$tmp"; fi
	ln -s "releases/$2" "$tmp" || return 1
	mv_link "$tmp" "$ROOT/$1" || { rm -f "$tmp"; return 1; }
}
is_loaded() { launchctl print "gui/$uid/$1" >/dev/null 2>&1; }
# exit_timeout PLIST: sets eto to PLIST's ExitTimeOut, or to launchd's default of 20 s when it
# sets none (or 0, "never", or the file is gone). One read loop, no process.
exit_timeout() {
	eto=20
	[ -f "$1" ] || return 0
	e_key=0
	while IFS= read -r e_l || [ -n "$e_l" ]; do
		case $e_l in *'<key>ExitTimeOut</key>'*) e_key=1 e_l=${e_l#*'<key>ExitTimeOut</key>'} ;; esac
		[ "$e_key" -eq 1 ] || continue
		case $e_l in
		*'<integer>'*'</integer>'*)
			e_l=${e_l#*'<integer>'}
			e_l=${e_l%%'</integer>'*}
			case $e_l in '' | *[!0-9]* | 0 | ??????*) ;; *) eto=$e_l ;; esac
			return 0
			;;
		*'<'[a-z]*) return 0 ;;
		esac
	done <"$1"
}
# bootout_wait LABEL: boots gui/<uid>/LABEL out and waits until `launchctl print` no longer finds
# it. launchd finishes a boot-out asynchronously: the job can stay loaded after bootout returns,
# until it exits or launchd SIGKILLs it at its ExitTimeOut, and bootout may exit 36 (EINPROGRESS)
# meanwhile. So 0, 36 and "not loaded" (113 "Could not find specified service" on current macOS,
# 3 "No such process" on some releases) all mean "wait", up to the ExitTimeOut of LABEL's
# LaunchAgent plus 3 s, polled every 0.25 s; the usual case costs one print. Fails with b_err.
bootout_wait() {
	exit_timeout "$AGENTS/$1.plist"
	b_err=$(launchctl bootout "gui/$uid/$1" 2>&1)
	b_rc=$?
	b_n=$(((eto + 3) * 4))
	while is_loaded "$1"; do
		case $b_rc in
		0 | 3 | 36 | 113) ;;
		*) b_err=${b_err%%"$nl"*}; return 1 ;;
		esac
		if [ "$b_n" -le 0 ]; then
			b_err="still loaded $((eto + 3)) s after launchctl bootout (its ExitTimeOut is $eto s)"
			return 1
		fi
		sleep 0.25
		b_n=$((b_n - 1))
	done
	return 0
}
# bootstrap_agent PLIST LABEL: launchctl bootstrap into gui/<uid>; on failure b_err says why.
# LABEL is enabled first: a label in launchd's disabled set (launchctl disable, unload -w; it
# outlives the plist and reboots) fails every bootstrap with "5: Input/output error". No
# kickstart after it: launchd starts the job as its RunAtLoad or KeepAlive say, and
# `kickstart -k` would kill the instance bootstrap just started.
bootstrap_agent() {
	launchctl enable "gui/$uid/$2" >/dev/null 2>&1
	b_err=$(launchctl bootstrap "gui/$uid" "$1" 2>&1) && return 0
	b_err=${b_err%%"$nl"*}
	if is_loaded "$2"; then b_err="$b_err (gui/$uid/$2 is still loaded)"; fi
	return 1
}
# release_drift DIR: prints the files of a release that no longer match SHA256SUMS, are
# missing, or are not listed there, and every symbolic link; fails when there is any.
# One shasum -c, one find and one awk (which reads SHA256SUMS itself) on the usual path.
release_drift() {
	[ -d "$1" ] || { echo "(release directory missing)"; return 1; }
	[ -f "$1/SHA256SUMS" ] || { echo SHA256SUMS; return 1; }
	d_out=$(
		cd "$1" || exit
		shasum -a 256 -c SHA256SUMS 2>/dev/null | awk '/: FAILED/ { sub(/: FAILED.*$/, ""); print }
			END {
				while ((getline l <"SHA256SUMS") > 0) if (l ~ /^[0-9a-f]+ [ *]/ && index(l, " ") == 65) listed[substr(l, 67)] = 1
				c = "find . -type l -exec printf \"S %s\\n\" {} + -o ! -type d -print"
				while ((c | getline l) > 0) {
					if (substr(l, 1, 2) == "S ") print substr(l, 5)
					else if ((n = substr(l, 3)) != "SHA256SUMS" && !(n in listed)) print n
				}
				close(c)
			}'
	)
	[ -n "$d_out" ] || return 0
	printf '%s\n' "$d_out" | sort -u
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
# lock: takes $ROOT/.lock (a directory: mkdir is atomic), or one whose pid is dead (l_stale gets
# that pid); 1 when held. A stale lock is claimed before it is removed, so two installers that
# both find it dead cannot both take it (each removing what the other made): the claim renames
# its pid file to one named for this process (rename is atomic: one claimant gets it, the others
# find no pid and give up). The claimant removes the lock only when the file it got holds the
# dead pid; one that got a live holder's (which replaced the stale lock after it looked) puts it
# back, meanwhile nobody can take the lock (it still exists) or claim it (no pid file), and gives up.
lock() {
	l_stale=""
	if mkdir "$ROOT/.lock" 2>/dev/null; then
		echo $$ >"$ROOT/.lock/pid" 2>/dev/null
		return 0
	fi
	p=$(cat "$ROOT/.lock/pid" 2>/dev/null)
	if [ -n "$p" ] && ! kill -0 "$p" 2>/dev/null && mv "$ROOT/.lock/pid" "$ROOT/.lock/claim.$$" 2>/dev/null; then
		q=""
		IFS= read -r q 2>/dev/null <"$ROOT/.lock/claim.$$"
		if [ "$q" != "$p" ]; then
			mv "$ROOT/.lock/claim.$$" "$ROOT/.lock/pid" 2>/dev/null
			return 1
		fi
		rm -rf "$ROOT/.lock"
		mkdir "$ROOT/.lock" 2>/dev/null && { echo $$ >"$ROOT/.lock/pid" 2>/dev/null; l_stale=$p; return 0; }
	fi
	return 1
}
unlock() { rm -rf "$ROOT/.lock"; }
# backup_of LABEL: where save_agents keeps a copy of LABEL's LaunchAgent (under $work).
backup_of() { printf '%s/plist.%s' "$work" "$1"; }
# save_agents LABEL...: copies the installed LaunchAgents of LABEL... under $work and notes in
# $was_loaded which of them are loaded, so restore_agents can put them back; a copy that
# cannot be made fails, s_err saying so (full disk), before anything changed.
save_agents() {
	s_err=""
	for l in "$@"; do
		if [ -f "$AGENTS/$l.plist" ]; then
			cp -p "$AGENTS/$l.plist" "$(backup_of "$l")" 2>/dev/null ||
				{ s_err="cannot back up $AGENTS/$l.plist (full disk?)"; return 1; }
		fi
	done
	was_loaded=""
	for l in "$@"; do
		if is_loaded "$l"; then was_loaded="$was_loaded $l"; fi
	done
}
# restore_agents LABEL...: undoes an activation: boots $label out when it is loaded and not an
# old job whose boot-out never finished ($stuck), points current and previous back at $cur_sha
# and $prev_sha, puts the saved LaunchAgents back and bootstraps again what was loaded and is
# gone (every bootout here waited for the job to leave, so "still loaded" is true). What cannot
# be undone is added to $reason.
restore_agents() {
	case " $stuck " in
	*" $label "*) ;;
	*) if is_loaded "$label" && ! bootout_wait "$label"; then reason="$reason; $label: $b_err"; fi ;;
	esac
	point_link current "$cur_sha" || reason="$reason; could not restore current"
	point_link previous "$prev_sha" || reason="$reason; could not restore previous"
	rm -f "$new_plist"
	for l in "$@"; do
		if [ -f "$(backup_of "$l")" ]; then
			mv -f "$(backup_of "$l")" "$AGENTS/$l.plist" || reason="$reason; could not restore $AGENTS/$l.plist"
		else
			rm -f "$AGENTS/$l.plist"
		fi
	done
	for l in $was_loaded; do
		is_loaded "$l" && continue
		bootstrap_agent "$AGENTS/$l.plist" "$l" || reason="$reason; re-bootstrapping $l failed too: $b_err"
	done
}
# shim_dir LABEL: sets sdir to where the shim in LABEL's job leaves its state, one file per pid
# (the LaunchAgent's LUME_METAL_STATE_DIR, plugin/core/agent.h).
shim_dir() { sdir="$LOGS/$1.shim"; }
# plist_job PLIST: sets j_prog to the first ProgramArguments string of a rendered LaunchAgent
# (XML entities decoded), j_err to its StandardErrorPath, and j_starts to 1 when RunAtLoad or
# KeepAlive is true (launchd starts the job at bootstrap), else 0. One awk.
plist_job() {
	j_prog="" j_err="" j_starts=0
	j_out=$(awk '
		/<string>/ { v = $0; sub(/.*<string>/, "", v); sub(/<\/string>.*/, "", v)
			gsub(/&lt;/, "<", v); gsub(/&gt;/, ">", v); gsub(/&quot;/, "\"", v); gsub(/&amp;/, "\\&", v) }
		/<key>ProgramArguments<\/key>/ { pa = 1; next }
		pa && /<string>/ { prog = v; pa = 0 }
		/<key>StandardErrorPath<\/key>/ { ek = 1; next }
		ek { err = v; ek = 0 }
		/<key>(RunAtLoad|KeepAlive)<\/key>/ { k = 1; next }
		k { if ($0 ~ /<true\/>/) starts = 1; k = 0 }
		END { print starts + 0; print err; print prog }' "$1") || return 1
	j_starts=${j_out%%"$nl"*}
	j_out=${j_out#*"$nl"}
	j_err=${j_out%%"$nl"*}
	j_prog=${j_out#*"$nl"}
}
# job_info LABEL: what `launchctl print` says of LABEL's job: s_loaded (0/1), s_state, s_pid,
# s_runs, s_exit ("" while it never exited, else the "last exit code" or "last terminating
# signal" text). One launchctl, read without another process.
job_info() {
	s_loaded=0 s_state="" s_pid="" s_runs="" s_exit=""
	s_out=$(launchctl print "gui/$uid/$1" 2>/dev/null) || return 0
	s_loaded=1
	while IFS= read -r s_l; do
		s_l=${s_l#"${s_l%%[![:space:]]*}"}
		case $s_l in
		'state = '*) [ -n "$s_state" ] || s_state=${s_l#state = } ;;
		'pid = '*) s_pid=${s_l#pid = } ;;
		'runs = '*) s_runs=${s_l#runs = } ;;
		'last exit code = (never exited)') ;;
		'last exit code = '*) s_exit="last exit code ${s_l#last exit code = }" ;;
		'last terminating signal = '*) s_exit="terminated by ${s_l#last terminating signal = }" ;;
		esac
	done <<JOB
$s_out
JOB
	case $s_pid in *[!0-9]*) s_pid="" ;; esac
	case $s_runs in *[!0-9]*) s_runs="" ;; esac
}
# shim_state DIR PID: the state the shim left in process PID (DIR/PID, written by the shim):
# ss_json (the object, or null), ss_active (true, false, or "" without a file), ss_reason.
shim_state() {
	ss_active="" ss_reason=""
	jfile "$1/$2"
	ss_json=$j_out
	case $ss_json in
	*'"active":true'*) ss_active=true ;;
	*'"active":false'*)
		ss_active=false
		ss_reason=${ss_json#*'"reason":"'}
		ss_reason=${ss_reason%%'"'*}
		;;
	esac
}
# any_file DIR: DIR holds an entry (a glob: no process).
any_file() {
	for a_f in "$1"/*; do
		[ -e "$a_f" ] && return 0
	done
	return 1
}
# secs V MAX: sets n_out to V, a whole number of seconds up to MAX (leading zeros dropped);
# fails (n_out empty) on anything else.
secs() {
	n_out=""
	case $1 in '' | *[!0-9]* | ?????????*) return 1 ;; esac
	n_v=${1#"${1%%[!0]*}"}
	[ "${n_v:-0}" -le "$2" ] || return 1
	n_out=${n_v:-0}
}
# seen_active DIR: a process of the job left a state saying the shim was active in it (the pid
# watched or an earlier run's: install clears DIR before the bootstrap). No process.
seen_active() {
	for a_f in "$1"/*; do
		[ -f "$a_f" ] || continue
		jfile "$a_f"
		case $j_out in *'"active":true'*) return 0 ;; esac
	done
	return 1
}
# ms_since FILE: sets ms to the milliseconds from FILE's modification time to now (FILE.now,
# written now): macOS's date has no sub-second format, BSD stat's %.3Fm (the modification time,
# three digits after the point) has one. One stat; fails (ms empty) when it cannot tell.
ms_since() {
	ms=""
	printf . >"$1.now" 2>/dev/null || return 1
	m_t=$(stat -f %.3Fm "$1" "$1.now" 2>/dev/null)
	m_0=${m_t%%"$nl"*} m_1=${m_t#*"$nl"}
	case $m_0 in [0-9]*.[0-9][0-9][0-9]) ;; *) return 1 ;; esac
	case $m_1 in [0-9]*.[0-9][0-9][0-9]) ;; *) return 1 ;; esac
	case ${m_0%.*}${m_1%.*} in *[!0-9]*) return 1 ;; esac
	# The fractions with a leading 1, so 0xx is not read as octal.
	ms=$(((${m_1%.*} - ${m_0%.*}) * 1000 + 1${m_1#*.} - 1${m_0#*.}))
}
# c_ended LABEL: after job_info, whether LABEL's job is gone or exited since the bootstrap (a last
# exit code, more runs than one, or, once the shim is active in it, another pid than c_pid): sets
# c_err (with the end of its stderr log), and c_cause "workload" when the shim was seen active in
# a process of the job (the pid watched, or the state file any run of it left since the
# bootstrap), else it stays "image" (an exit before any state: dyld's abort looks so). A workload
# that had its shim and was to answer at c_url, and did not yet, "was not ready" (c_what).
c_ended() {
	if [ "$c_active" = true ] || seen_active "$sdir"; then c_e=workload; else c_e=image; fi
	c_b=""
	[ "$c_e" != workload ] || [ -z "$c_url" ] || [ -n "$c_up" ] || c_b=" before it answered 200 at $c_url"
	if [ "$s_loaded" -ne 1 ]; then
		c_err="gui/$uid/$1 is no longer loaded$c_b"
	else
		[ "$c_active" != true ] || [ "$s_pid" = "$c_pid" ] || s_exit=${s_exit:-"pid $c_pid gone"}
		[ -n "$s_exit" ] || [ "${s_runs:-0}" -gt 1 ] || return 1
		c_err="$j_prog exited (${s_exit:-no exit status}, ${s_runs:-?} runs)$c_b: it crashes"
		if [ -f "$j_err" ]; then
			c_log=$(tail -n 2 "$j_err" | tr -d '\000-\010\013-\037' | tr '\n' ' ' | cut -c1-400)
			c_err="$c_err; its stderr log ends: $c_log"
		fi
	fi
	c_cause=$c_e
	[ -z "$c_b" ] || c_what="was not ready"
	return 0
}
# c_gone LABEL: the pid watched no longer runs (kill -0: no process) and launchctl print says how
# the job ended (c_ended); fails while it runs.
c_gone() {
	! kill -0 "$c_pid" 2>/dev/null || return 1
	job_info "$1"
	c_ended "$1"
}
# confirm_job LABEL PLIST [URL]: after a bootstrap, confirms that LABEL's job serves with the shim,
# in three steps. (1) It waits (confirm_timeout, install.sh's --confirm-timeout; else
# LUME_METAL_CONFIRM_TIMEOUT; else 60 seconds: llama-server creates its Metal device when it lists
# its backends, before the weights load) until launchd runs the job with a pid whose shim state
# says active: until the shim has left a state file, launchctl (and the clock) is asked every 5th
# look (1 s, for an exit), the looks between, 0.2 s apart, being the shell's own glob. (2) With a
# URL (the workload's readiness, payload.env's LUME_METAL_READY_URL), within the same wait, until
# the URL answers 200 (llama-server's /health: 503 while it loads its model), asked 0.1, 0.2, 0.4,
# 0.8 s apart, then every second; c_ready gets the milliseconds from the bootstrap. (3) It watches
# the pid confirm_settle (--confirm-settle; else LUME_METAL_CONFIRM_SETTLE; else 5) more seconds
# (a server that fails after its device is up exits soon), with kill -0 every 0.25 s and the
# clock every second. After (2) or (3), one launchctl print more: no exit since the bootstrap
# (runs 1, the same pid, no last exit code: a KeepAlive server that exited is crashing). launchd
# has no "wait for exit", so these are looks; only launchctl print and curl are processes. With
# mark_settle 1 (install.sh --mark-settle) and a settle, its start is said on stdout:
# "lume-metal:settle N" and "lume-metal:settling", two lines. Sets c_conf ({"timeout":N,
# "settle":N}, the values used), c_pid, c_json (the shim's state, or null), c_active (true, false
# or null), c_ready (ms, or null); fails with c_what ("does not have the shim", or "was not
# ready" once it had the shim and a URL to answer) and c_err saying why: the job exited (with the
# end of its stderr log), the shim stays stock there (its reason), no state within the wait (dyld
# dropped the shim, or no Metal device yet), or no 200 within it; c_cause: "workload" when the
# shim was seen active in a process of the job before it exited or while it was never ready, else
# "image" (c_ended). A job launchd does not start at bootstrap (no RunAtLoad or KeepAlive) is not
# waited for.
confirm_job() {
	c_pid="" c_json=null c_active=null c_err="" c_cause=image c_what="does not have the shim" c_ready=null
	c_url=${3:-} c_up=""
	plist_job "$2" || { c_err="cannot read $2"; return 1; }
	[ "$j_starts" -eq 1 ] || return 0
	shim_dir "$1"
	printf . >"$work/.bootstrap" 2>/dev/null
	secs "${confirm_timeout:-${LUME_METAL_CONFIRM_TIMEOUT:-}}" 3600 || n_out=60
	c_t=$n_out
	c_end=$(($(date +%s) + c_t))
	secs "${confirm_settle:-${LUME_METAL_CONFIRM_SETTLE:-}}" 600 || n_out=5
	c_s=$n_out
	c_conf="{\"timeout\":$c_t,\"settle\":$c_s}"
	c_n=0
	while :; do
		c_n=$((c_n + 1))
		if [ $((c_n % 5)) -ne 1 ] && ! any_file "$sdir"; then
			sleep 0.2
			continue
		fi
		job_info "$1"
		c_pid=$s_pid
		! c_ended "$1" || return 1
		if [ "$s_state" = running ] && [ -n "$s_pid" ]; then
			shim_state "$sdir" "$s_pid"
			c_json=$ss_json
			case $ss_active in
			true) c_active=true; break ;;
			false)
				c_active=false
				c_err="the shim stays stock in $j_prog (pid $s_pid): $ss_reason"
				return 1
				;;
			esac
		fi
		if [ "$(date +%s)" -ge "$c_end" ]; then
			c_err="no shim state from $j_prog (pid ${s_pid:-none}, state ${s_state:-unknown}) within $c_t s in $sdir: dyld did not load the shim into it (hardened runtime?), or it created no Metal device"
			return 1
		fi
		sleep 0.1
	done
	if [ -n "$c_url" ]; then
		c_w=1
		while :; do
			c_code=$(curl -q -s -o /dev/null -w '%{http_code}' --noproxy '*' --connect-timeout 1 --max-time 2 "$c_url" 2>/dev/null)
			[ "$c_code" != 200 ] || break
			! c_gone "$1" || return 1
			if [ "$(date +%s)" -ge "$c_end" ]; then
				case $c_code in '' | 000) c_code="no answer" ;; *[!0-9]*) c_code="not HTTP" ;; *) c_code="HTTP $c_code" ;; esac
				c_cause=workload c_what="was not ready"
				c_err="$j_prog (pid $c_pid) did not answer 200 at $c_url within $c_t s of its bootstrap (its last answer: $c_code), the shim active in it"
				return 1
			fi
			if [ "$c_w" -lt 10 ]; then sleep "0.$c_w" && c_w=$((c_w * 2)); else sleep 1; fi
		done
		c_up=1
		! ms_since "$work/.bootstrap" || c_ready=$ms
	fi
	if [ "$c_s" -gt 0 ]; then
		# install.sh --mark-settle: the controller may go on meanwhile (the answer waits in the
		# channel); two lines, the settle's seconds and the mark.
		[ "${mark_settle:-0}" -eq 0 ] || printf 'lume-metal:settle %s\nlume-metal:settling\n' "$c_s"
		c_settled=$(($(date +%s) + c_s)) c_n=0
		while :; do
			! c_gone "$1" || return 1
			c_n=$((c_n + 1))
			[ $((c_n % 4)) -ne 0 ] || [ "$(date +%s)" -lt "$c_settled" ] || break
			sleep 0.25
		done
	fi
	[ -z "$c_url" ] && [ "$c_s" -eq 0 ] && return 0
	job_info "$1"
	! c_ended "$1"
}
stuck=""
LM_COMMON_LOADED=1
