# docs/interfaces.md and the man page say what the sources do: the keys of the image.json
# golden stamps (golden_stamp_json, plugin/ops/golden.c), with no "digest" key, and the kinds
# deploy's gate and status read as an image version's verdict (ledger_want in deploy.c).
# shellcheck disable=SC1091,SC2016 # sourced lib; single-quoted $ is for the inner sh
. "$(dirname "$0")/../lib.sh"
doc=$TOP/docs/interfaces.md

# The stamp's keys, in the order the function adds them: {"image","baseDigest",...}.
sed -n '/^golden_stamp_json(/,/^}/p' "$TOP/plugin/ops/golden.c" | grep -o 'ToObject(s, "[A-Za-z0-9]*"' |
	sed 's/.*"\(.*\)"/"\1"/' | awk '!seen[$0]++' | paste -sd, - | sed 's/.*/{&}/' >"$T/keys"
check "golden_stamp_json adds image and at least five other keys" grep -q '^{"image"\(,"[A-Za-z0-9]*"\)\{5,\}}$' "$T/keys"
check "... and no digest" sh -c '! grep -q "\"digest\"" "$1"' - "$T/keys"
check "interfaces.md states the stamp as those keys" grep -qF "$(cat "$T/keys")" "$doc"
check "... and says nowhere that image.json holds a digest" sh -c '! grep -Eq "\\{\"image\": *[A-Z]+, *\"digest\"" "$1"' - "$doc"
env MANWIDTH=80 man -l "$TOP/man/lume-metal.1" 2>/dev/null | tr -s ' \n' '  ' | tr -d ' ' >"$T/man"
check "the man page states the stamp as those keys" grep -qF "$(cat "$T/keys")" "$T/man"

cat "$TOP/plugin/ops/deploy.c" "$TOP/plugin/ops/status.c" | grep -o 'ledger_want [a-z]* = {"[a-z|]*"' |
	grep -o '"[a-z|]*"' | sort -u >"$T/kinds"
check "deploy.c and status.c read one set of kinds as the verdict" test "$(wc -l <"$T/kinds")" -eq 1
check "interfaces.md names it" grep -qF "ledger_load_verdict(..., {$(cat "$T/kinds"), payload" "$doc"
t_done
