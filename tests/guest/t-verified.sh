#!/bin/sh
# shellcheck disable=SC1091,SC2016 # lib.sh and guest-lib.sh are sourced by path; single-quoted $ is for the inner sh
# install.sh --verified (deploy's one exec, after the controller checked every entry) skips the
# names listing, the per-file SHA256SUMS pass and the MANIFEST.json cross-check, but only once
# the whole payload's SHA-256 matched, and keeps the type check; --stock-file takes the stock
# probe's recorded answer instead of running it. Without them every check runs.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/guest/guest-lib.sh"

payload "$T/a.tar.gz" || not_ok "build payload a"
A=$SHA
# shasum and tar, logged (one line per run) ahead of the simulated and the real ones.
mkdir "$T/bin"
printf '#!/bin/sh\necho "shasum $*" >>"%s/calls"\nexec "%s/tests/guest-sim/bin/shasum" "$@"\n' "$T" "$TOP" >"$T/bin/shasum"
printf '#!/bin/sh\necho "tar $*" >>"%s/calls"\nexec "%s" "$@"\n' "$T" "$(command -v tar)" >"$T/bin/tar"
chmod +x "$T/bin/shasum" "$T/bin/tar"
PATH="$T/bin:$PATH"
# calls PATTERN: how many logged runs match PATTERN (grep -E).
calls() { grep -cE "$1" "$T/calls" 2>/dev/null || true; }

guest full
: >"$T/calls"
install "$T/full.json" "$T/a.tar.gz" "$A"
rc_is "by hand: installed" 0
is_eq "by hand: the payload's SHA-256 and the per-file pass (two shasum runs)" "$(calls '^shasum')" 2
is_eq "by hand: the names listing and the types listing" "$(calls '^tar -t(v)?zf')" 2

guest fast
: >"$T/calls"
install "$T/fast.json" "$T/a.tar.gz" "$A" --verified
rc_is "--verified: installed" 0
jis "--verified: result installed" "$T/fast.json" .result installed
jis "--verified: validated (both probes ran)" "$T/fast.json" .validated true
is_eq "--verified: only the payload's SHA-256 (one shasum run, no -c)" "$(calls '^shasum')" 1
is_eq "--verified: only the types listing" "$(calls '^tar -t(v)?zf')" 1
is_eq "--verified: ... which is -tvzf" "$(calls '^tar -tvzf')" 1
check "--verified: the release is intact" sh -c 'cd "$1/current" && sha256sum -c --quiet SHA256SUMS' - "$ROOT"

# The fast path only after the SHA-256: a tampered payload is refused all the same.
guest tampered
cp "$T/a.tar.gz" "$T/tampered.tar.gz"
flip_byte "$T/tampered.tar.gz" 200
install_from "$T/.install.sh" "$T/o.json" "$T/tampered.tar.gz" "$A" --verified
rc_is "--verified, tampered payload: refused (exit 1)" 1
check_grep "--verified, tampered payload: says why" '"reason":"payload SHA-256 is [0-9a-f]{64}, expected' "$T/o.json"
check "--verified, tampered payload: nothing installed" test ! -e "$ROOT/current"

# The type check stays: a link entry, with the payload's own SHA-256, is refused.
unpack "$T/a.tar.gz" "$T/link"
rm "$T/link/lib/liblumemetal.so"
ln -s /etc/passwd "$T/link/lib/liblumemetal.so"
repack "$T/link" "$T/link.tar.gz"
install_from "$T/.install.sh" "$T/o.json" "$T/link.tar.gz" "$SHA" --verified
rc_is "--verified, link entry: refused (exit 1)" 1
check_grep "--verified, link entry: says why" 'link or special entry' "$T/o.json"

# --stock-file: the recorded stock answer is used (its version marks it), the shimmed probe runs.
guest full
"$ROOT/current/bin/lume-metal-probe" | sed 's/"version": *"[^"]*"/"version":"recorded"/' >"$T/stock.json"
check "--stock-file: a stock answer, marked" grep -q '"version":"recorded"' "$T/stock.json"
guest known
install_from "$T/.install.sh" "$T/known.json" "$T/a.tar.gz" "$A" --verified --stock-file "$T/stock.json"
rc_is "--stock-file: installed" 0
jis "--stock-file: the stock answer is the recorded one" "$T/known.json" .stock.version recorded
jis "--stock-file: the shimmed probe ran and passed" "$T/known.json" .shimmed.expect.pass true
printf 'not json\n' >"$T/bad-stock"
guest badstock
install_from "$T/.install.sh" "$T/o.json" "$T/a.tar.gz" "$A" --verified --stock-file "$T/bad-stock"
rc_is "--stock-file without JSON: refused (exit 1)" 1
check_grep "--stock-file without JSON: says why" 'holds no JSON object' "$T/o.json"
t_done
