#!/bin/sh
# host-identity.sh: sent as `sh -c` to a Mac host (not a guest; net/identity.c): one
# round trip for its facts, its storage locations, the digest of every VM folder in them (a file
# that is a link or no regular file is named '!', a missing one '-'; at most 80 bytes of each),
# and `lume ls`, each after a marker line. A location path is the listing's, "~" expanded; one
# holding ".." is skipped (the controller refuses the listing too). The preference read is
# net/host.h's HOST_DOMAIN and HOST_KEY: "unset" only for the missing default (exit 1, "does not
# exist", as host_pref_read takes it); any other failure is "error N" and its last line, never
# taken for unset.
PATH="$HOME/.local/bin:/opt/homebrew/bin:/usr/local/bin:$PATH"; export PATH
command -v lume >/dev/null 2>&1 || { echo 'lume is not installed on this host (not on PATH, ~/.local/bin, /opt/homebrew/bin or /usr/local/bin)' >&2; exit 127; }
echo @sysctl
sysctl -n machdep.cpu.brand_string hw.model kern.osproductversion kern.osversion 2>/dev/null
echo @pref
p=$(defaults read com.apple.gpusw.ParavirtualizedGraphics ForceUnrestrictedDeviceFeatureLevel 2>&1); r=$?
if [ $r -eq 0 ]; then printf '%s\n' "$p"
elif [ $r -eq 1 ] && case $p in *'does not exist'*) true ;; *) false ;; esac; then echo unset
else echo "error $r"; printf '%s\n' "$p" | tail -n 1 | cut -c1-200; fi
echo @storage
s=$(lume config storage list 2>/dev/null)
printf '%s\n' "$s"
echo @digests
printf '%s\n' "$s" | sed -n 's/^  - \([A-Za-z0-9_-][A-Za-z0-9_-]*\): \(.*\)$/\1 \2/p' | {
n=0
while read -r loc p; do
  p=${p% (default)}
  case $p in \~) p=$HOME ;; \~/*) p=$HOME/${p#\~/} ;; /*) ;; *) continue ;; esac
  case /$p/ in */../*) continue ;; esac
  for d in "$p"/*/; do
    v=${d%/}
    if [ ! -d "$v" ] || [ -L "$v" ]; then continue; fi
    n=$((n + 1)); [ "$n" -le 256 ] || break 2
    f=$v/.manifest-digest v=${v##*/}
    if [ -L "$f" ] || { [ -e "$f" ] && [ ! -f "$f" ]; }; then printf '%s %s !\n' "$loc" "$v"
    elif [ ! -e "$f" ]; then printf '%s %s -\n' "$loc" "$v"
    else printf '%s %s ' "$loc" "$v"; head -c 80 "$f" | tr -d '\n'; echo; fi
  done
done; }
echo @ls
exec lume ls --format json
