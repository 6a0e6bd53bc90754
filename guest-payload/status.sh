#!/bin/sh
# (make lint follows common.sh: shellcheck -x and the source directive below)
# status.sh
#
# Reports, changing nothing: the installed releases and whether each still matches its
# SHA256SUMS (drift: changed, missing or unlisted files), current and previous, the
# LaunchAgent (present, and equal to what the current release renders), the service state from
# launchctl print and whether the shim is active in its process, the guest's macOS version and model, and image.json when present.
#
# Prints one JSON object on stdout:
#   {"root":...,"current":...,"previous":...,"releases":[{"sha256":...,"intact":...,"drift":[...]}],
#    "label":...,"service":{"target":...,"loaded":...,"state":...,"pid":...,"shimActive":...,"shim":...},
#    "launchAgent":{"path":...,"present":...,"matches":...},"drift":[...],"driftDetected":...,
#    "os":{"productVersion":...,"build":...},"model":...,"image":{...}|null}
# "service.shimActive" is what the shim left for the running pid ($LOGS/<label>.shim/<pid>, the
# object itself in "shim"): true, false (stays stock, with its reason), null (no such file: no
# pid, or dyld did not load the shim there).
# "drift" lists the current release's drifted files, plus the LaunchAgent path when the
# installed plist differs from the rendered one. Exit 0 when reported, 2 usage.
set -u

# The shared helpers: beside this script, or already read in this same `sh -s` (deploy).
# shellcheck source=SCRIPTDIR/common.sh
[ -n "${LM_COMMON_LOADED:-}" ] || . "$(dirname "$0")/common.sh" || exit 2

if [ $# -gt 0 ]; then
	say "usage: status.sh"
	printf '{"result":"failed","reason":"usage: status.sh"}\n'
	exit 2
fi
if ! home_ok; then
	say "HOME must be an absolute path without newlines"
	printf '{"result":"failed","reason":"HOME must be an absolute path without newlines"}\n'
	exit 2
fi
uid=$(id -u)
link_sha current
cur_sha=$l_sha
link_sha previous
prev_sha=$l_sha

releases="" cur_drift=""
for d in "$ROOT/releases"/*; do
	[ -d "$d" ] || continue
	s=${d##*/}
	if drift=$(release_drift "$d"); then intact=true; else intact=false; fi
	[ "$s" != "$cur_sha" ] || cur_drift=$drift
	is_cur=false is_prev=false
	[ "$s" != "$cur_sha" ] || is_cur=true
	[ "$s" != "$prev_sha" ] || is_prev=true
	jlv "$drift"
	r_drift=$j_v
	jv "$s"
	releases="$releases${releases:+,}{\"sha256\":$j_v,\"current\":$is_cur,\"previous\":$is_prev,\"intact\":$intact,\"drift\":$r_drift}"
done
if [ -n "$cur_sha" ] && [ ! -d "$ROOT/releases/$cur_sha" ]; then
	cur_drift="(release directory missing)"
fi

label="" service=null agent=null
if [ -n "$cur_sha" ]; then
	! label_of "$ROOT/releases/$cur_sha" || label=$lbl
fi
if [ -n "$label" ]; then
	target="gui/$uid/$label"
	if out=$(launchctl print "$target" 2>/dev/null); then
		# The first "state = " line and the first "pid = N" line, read by the shell.
		st="" pid="" st_seen=""
		while IFS= read -r sl; do
			sl=${sl#"${sl%%[![:space:]]*}"}
			case $sl in
			"state = "*) [ -n "$st_seen" ] || { st=${sl#state = } st_seen=1; } ;;
			"pid = "*)
				p=${sl#pid = }
				case $p in '' | *[!0-9]*) ;; *) [ -n "$pid" ] || pid=$p ;; esac
				;;
			esac
		done <<OUT
$out
OUT
		# What the shim left in that process (install.sh's confirmation reads the same file).
		ss_json=null ss_active=""
		if [ -n "$pid" ]; then
			shim_dir "$label"
			shim_state "$sdir" "$pid"
		fi
		jvo "$st"
		j_st=$j_v
		jv "$target"
		service="{\"target\":$j_v,\"loaded\":true,\"state\":$j_st,\"pid\":${pid:-null},\"shimActive\":${ss_active:-null},\"shim\":$ss_json}"
	else
		jv "$target"
		service="{\"target\":$j_v,\"loaded\":false,\"state\":null,\"pid\":null,\"shimActive\":null,\"shim\":null}"
	fi
	plist="$AGENTS/$label.plist"
	jv "$plist"
	if [ -f "$plist" ]; then
		if render_plist "$ROOT/releases/$cur_sha" 2>/dev/null | cmp -s - "$plist"; then
			matches=true
		else
			matches=false
			cur_drift="$cur_drift$nl$plist"
		fi
		agent="{\"path\":$j_v,\"present\":true,\"matches\":$matches}"
	else
		agent="{\"path\":$j_v,\"present\":false,\"matches\":false}"
		cur_drift="$cur_drift$nl$plist"
	fi
fi
case $cur_drift in *[!"$nl"]*) detected=true ;; *) detected=false ;; esac

image=null
if [ -f "$ROOT/image.json" ]; then
	jfile "$ROOT/image.json"
	image=$j_out
fi
osv=$(sw_vers -productVersion 2>/dev/null) || osv=""
osb=$(sw_vers -buildVersion 2>/dev/null) || osb=""
model=$(sysctl -n hw.model 2>/dev/null) || model=""

# Each field as JSON, in a variable (no process for plain text).
jv "$ROOT"; j_root=$j_v
jvo "$cur_sha"; j_cur=$j_v
jvo "$prev_sha"; j_prev=$j_v
jvo "$label"; j_label=$j_v
jlv "$cur_drift"; j_drift=$j_v
jvo "$osv"; j_osv=$j_v
jvo "$osb"; j_osb=$j_v
jvo "$model"; j_model=$j_v
jv "$LOGS"; j_logs=$j_v
printf '{"root":%s,"current":%s,"previous":%s,"releases":[%s],"label":%s,"service":%s,"launchAgent":%s,"drift":%s,"driftDetected":%s,"os":{"productVersion":%s,"build":%s},"model":%s,"logs":%s,"image":%s}\n' \
	"$j_root" "$j_cur" "$j_prev" "$releases" "$j_label" \
	"$service" "$agent" "$j_drift" "$detected" \
	"$j_osv" "$j_osb" "$j_model" "$j_logs" "$image"
exit 0
