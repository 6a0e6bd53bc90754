# lume-metal report on the published TinyLlama llama-bench runs, hostile variants and the ledger.
# shellcheck disable=SC1091,SC2086 # sourced lib; $ARMS is three words, split on purpose
. "$(dirname "$0")/../lib.sh"

F=$TOP/tests/fixtures/llama-bench/tinyllama-m1-ultra
H=$TOP/tests/fixtures/llama-bench/hostile
ARMS="stock=$F/tiny-stock-minimal.json shim=$F/tiny-safe-shim-10x-final.json host=$F/tiny-host-minimal.json"
W="TinyLlama 1.1B Q4_K_M (llama.cpp)"

check_rc "report --csv of the three runs" 0 "$LM" report $ARMS --csv --workload "$W"
sed -n '1,3p' "$F/results.csv" >"$T/want.csv"
if diff -u "$T/want.csv" "$T/.out" >"$T/diff"; then ok "... is the published header and TinyLlama rows, byte for byte"
else not_ok "... is the published header and TinyLlama rows, byte for byte"; sed 's/^/#   /' "$T/diff"; fi
check_has "... pp512 11.0839x, 98.2494%" ",pp512,tokens/s,4871.99,431.8625,4786.7,11.0839,98.2494" "$T/.out"
check_has "... tg128 16.3567x, 72.0588%" ",tg128,tokens/s,286.7055,12.6307,206.5965,16.3567,72.0588" "$T/.out"

check_rc "report (terminal table)" 0 "$LM" report $ARMS
check_grep "... labels the workload from the JSON, not a fixed name" \
	'^tinyllama-1\.1b-chat-v1\.0\.Q4_K_M\.gguf \(llama 1B Q4_K - Medium\): tokens/s' "$T/.out"
check_grep "... pp512 medians of samples_ts" '^pp512 +stock +431\.86 +427\.90 +433\.79 +10$' "$T/.out"
check_has "... the pp512 ratios" "shim/stock 11.08x   shim/host 98.25%" "$T/.out"
check_has "... stock is Apple5 without simdgroup matrix mul." "Apple5 (1005), simdgroup reduction false, simdgroup matrix mul. false" "$T/.out"
check_has "... shim is Apple9 with it" "Apple9 (1009), simdgroup reduction true, simdgroup matrix mul. true" "$T/.out"
check_has "... and is effective" "shim effective" "$T/.out"

check_rc "report --markdown" 0 "$LM" report $ARMS --markdown --workload "TinyLlama 1.1B Q4_K_M"
check_has "... the evidence README row" "| TinyLlama 1.1B Q4_K_M | tg128 | 286.71 | 12.63 | 206.60 | 16.36x | 72.06% |" "$T/.out"

check_rc "report --json" 0 "$LM" report $ARMS --json
check_grep "... one object" '^\{"format":"lume-metal-bench/1",.*\}$' "$T/.out"
check_grep "... with the arms' paths" '"stock":\{"path":"[^"]*/tiny-stock-minimal\.json","stderr":"[^"]*/tiny-stock-minimal\.stderr"' "$T/.out"
check_has "... the shim's Metal lines" '"apple_family":1009,"simdgroup_reduction":true,"simdgroup_matrix_mul":true' "$T/.out"
check_has "... the pp512 figures" '"test":"pp512","n_prompt":512,"n_gen":0,"n_depth":0,"stock":{"median":431.8625,"min":427.898,"max":433.785,"samples":10}' "$T/.out"
check_grep "... and ratios" '"guest_ratio":11\.08385[0-9]*,"shim_to_host_percent":98\.249[0-9]*' "$T/.out"

check_rc "without host= the host columns are empty" 0 "$LM" report stock="$F/tiny-stock-minimal.json" \
	shim="$F/tiny-safe-shim-10x-final.json" --csv --workload w
check_has "... and the ratio is still there" "w,pp512,tokens/s,,431.8625,4786.7,11.0839," "$T/.out"

check_rc "a shim arm on the stock path is exit 1" 1 "$LM" report stock="$F/tiny-stock-minimal.json" \
	shim="$H/shim-stock-path.json"
check_has "... reported as shim not effective" "shim not effective" "$T/.out"
if grep -q '[0-9]x' "$T/.out"; then not_ok "... with no speedup figure"; else ok "... with no speedup figure"; fi

check_rc "a newer llama.cpp's stderr is read" 0 "$LM" report stock="$F/tiny-stock-minimal.json" shim="$H/shim-newer.json"
check_has "... Apple9 (the highest of several), residency sets false" \
	"Apple9 (1009), simdgroup reduction true, simdgroup matrix mul. true, bfloat true, residency sets false" "$T/.out"
check_rc "unknown extra fields are accepted" 0 "$LM" report stock="$F/tiny-stock-minimal.json" shim="$H/extra-field.json" --csv
check_has "... with the same figures" ",431.8625,4786.7,11.0839," "$T/.out"

# Hostile input: exit 2, one line naming the file.
bad() {
	check_rc "$1: exit 2" 2 "$LM" report stock="$H/$2" shim="$F/tiny-safe-shim-10x-final.json" ${3:+"$3"} ${4:+"$4"}
	check_grep "... one line naming $2 and the reason" "^lume-metal: $H/$2: .*$5" "$T/.out"
	if [ "$(wc -l <"$T/.out")" -eq 1 ]; then ok "... on one line"; else not_ok "... on one line"; fi
}
bad "truncated JSON" truncated.json "" "" "truncated"
bad "a bare nan sample" nan.json "" "" "nan is not a number"
bad "a NaN string sample" nan-string.json "" "" "samples_ts\[1\] is not a number"
bad "a negative sample" negative.json "" "" "samples_ts\[1\] is -12.6872"
bad "an empty samples_ts" empty-samples.json "" "" "samples_ts is empty"
bad "a row with n_prompt and n_gen" pp-and-tg.json "" "" "row 2 has both n_prompt 512 and n_gen 128"
bad "too few samples" few-samples.json "" "" "2 samples in samples_ts, fewer than the 3"
bad "fewer than --min-samples" extra-field.json --min-samples 11 "10 samples in samples_ts, fewer than the 11"
bad "no Metal device in gpu_info" no-metal.json "" "" "gpu_info is empty"
bad "no tg row" no-tg.json "" "" "no tg test"
check_rc "--min-samples 2 accepts two samples" 0 "$LM" report stock="$H/few-samples.json" \
	shim="$F/tiny-safe-shim-10x-final.json" --min-samples 2 --csv
check_rc "--min-samples 0 is exit 2" 2 "$LM" report $ARMS --min-samples 0
check_rc "a missing file is exit 2" 2 "$LM" report stock="$T/none.json" shim="$F/tiny-safe-shim-10x-final.json"
check_rc "shim= is required" 2 "$LM" report stock="$F/tiny-stock-minimal.json"
check_rc "an argument that is not ARM=FILE is exit 2" 2 "$LM" report $ARMS guest=x.json
check_rc "two output forms are exit 2" 2 "$LM" report $ARMS --csv --json
check_rc "help report" 0 "$LM" help report
check_grep "... documents --ledger" '--ledger' "$T/.out"

# The ledger: two image versions with a bench record each, written as bench_record does.
mkdir -p "$T/state/ledger"
"$LM" report $ARMS --json --workload "$W" >"$T/table.json" || not_ok "report --json for the ledger"
doc() { # GUEST_OS GUEST_BUILD VM MINUTE
	printf '{"key":{"image":"ghcr.io/trycua/macos-tahoe-cua:latest","imageDigest":null,"guestOS":"%s",' "$1"
	printf '"guestBuild":"%s","guestModel":"VirtualMac2,1","hostChip":"Apple M1 Ultra","hostBuild":"25G76"},' "$2"
	printf '"records":[{"kind":"deploy","verdict":"pass","time":"2026-08-09T18:00:00Z"},'
	printf '{"kind":"bench","vm":"%s","workload":"%s","verdict":"effective","time":"2026-08-09T19:%s:00Z","bench":' \
		"$3" "$W" "$4"
	cat "$T/table.json"
	printf '}]}\n'
}
doc 26.5.2 25F84 tahoe-1 00 >"$T/state/ledger/0000000000000001.json"
doc 26.6 25G5 tahoe-2 01 >"$T/state/ledger/0000000000000002.json"
check_rc "report --ledger" 0 "$LM" report --ledger --state "$T/state"
check_grep "... one row per image version and test" '26\.5\.2 \(25F84\) .*tahoe-1 .*pp512 +431\.86 +4786\.70 +4871\.99 +11\.08x +98\.25%' "$T/.out"
check_grep "... side by side with the other version" '26\.6 \(25G5\) .*tahoe-2 .*tg128 +12\.63 +206\.60 +286\.71 +16\.36x +72\.06%' "$T/.out"
check_rc "report --ledger --csv" 0 "$LM" report --ledger --state "$T/state" --csv
check_has "... the results.csv columns after the image version's" \
	"ghcr.io/trycua/macos-tahoe-cua:latest,,26.6,25G5,Apple M1 Ultra,25G76,2026-08-09T19:01:00Z,tahoe-2,$W,tg128,tokens/s,286.7055,12.6307,206.5965,16.3567,72.0588" "$T/.out"
if [ "$(wc -l <"$T/.out")" -eq 5 ]; then ok "... a header and four rows"; else not_ok "... a header and four rows"; fi
check_rc "report --ledger --image of another image" 0 "$LM" report --ledger --state "$T/state" --image other
check_grep "... has no bench records" '^no bench records for other' "$T/.out"
check_rc "report --ledger --json" 0 "$LM" report --ledger --state "$T/state" --json
check_grep "... holds both documents" '^\[\{"key":\{.*"guestBuild":"25F84".*\},\{"key":\{.*"guestBuild":"25G5".*\}\]$' "$T/.out"
if grep -q '"kind":"deploy"' "$T/.out"; then not_ok "... and only their bench records"; else ok "... and only their bench records"; fi
printf '{"key":{"image":"x"},"records":[{"kind":"bench","bench":{"format":"nope"}}]}' >"$T/state/ledger/00000000000000ff.json"
check_rc "a bench record that is not a table is exit 2" 2 "$LM" report --ledger --state "$T/state"
check_grep "... naming the document (its name in the database) and record" 'ledger\.db#[0-9a-f]{16}: record 1: not a bench table' "$T/.out"
check_rc "--ledger takes no files" 2 "$LM" report --ledger $ARMS
t_done
