#!/bin/sh
# deploy.sh SHA256 WAIT CONFIRM_TIMEOUT CONFIRM_SETTLE: deploy's one exec (ops/deploy_exec.h),
# run after facts.sh in the same shell, whose end it marks with a line.
# When the payload is current and the controller does not insist (WAIT is not "wait": --force),
# it ends at once, so an unchanged rerun costs no round trip more than the facts. Else the
# controller's word on stdin (install, or install-stock and a line of stock answers), then the
# payload into staging/ under a name of this driver's own, its gzip stream read whole by tar
# while common.sh and install.sh are taken out of it (a cut-off upload ends here, before any of
# it runs), install.sh run from that copy with --verified (it checks the SHA-256 first) and
# --mark-settle, and one find that removes this run's files and uploads of runs that died (never
# a live one: those are not 10 minutes old). CONFIRM_TIMEOUT and CONFIRM_SETTLE, when not empty,
# are install.sh's --confirm-timeout and --confirm-settle.
echo lume-metal:facts-end
R="$HOME/Library/Application Support/lume-metal"
[ "$2" = wait ] || ! cd -P "$R/current" 2>/dev/null || case $PWD in */releases/"$1") exit 0 ;; esac
IFS= read -r go || exit 0
case $go in install | install-stock) ;; *) exit 0 ;; esac
# the facts left it in a release, which the install may prune
cd "$HOME" || exit 1
h=$1 S="$R/staging" ct=$3 cs=$4
[ -d "$S" ] || mkdir -p "$S" 2>/dev/null || { echo "cannot create the directory $S" >&2; exit 1; }
p="$S/.$h.tar.gz.part.$$"
set -- --payload "$p" --sha256 "$h" --verified --mark-settle
[ -z "$ct" ] || set -- "$@" --confirm-timeout "$ct"
[ -z "$cs" ] || set -- "$@" --confirm-settle "$cs"
if [ "$go" = install-stock ] && IFS= read -r k && printf '%s\n' "$k" >"$p.stock"; then
  set -- "$@" --stock-file "$p.stock"
fi
if ! cat >"$p"; then w="cannot write $p (full disk?)"
elif ! w=$(tar -xzOf "$p" bin/common.sh bin/install.sh 2>&1 >"$p.sh"); then w="it did not arrive whole: $w"
else w=''; fi
if [ -n "$w" ]; then echo "upload of $h.tar.gz failed: $w" >&2; rc=1; else sh "$p.sh" "$@"; rc=$?; fi
find "$S" -name '.*.part.*' \( -name "${p##*/}" -o -name "${p##*/}.*" -o -mmin +10 \) -delete 2>/dev/null
exit $rc
