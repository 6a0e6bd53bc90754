# Shared setup for the deploy tests: real sshd guests on 127.0.0.x and the simulated lume.
# Sourced after tests/lib.sh. Every sshd started here is stopped on exit, even on failure.
LUME_SIM_DIR=$T/lume
export LUME_SIM_DIR
mkdir -p "$LUME_SIM_DIR"
PORT=$((30000 + $$ % 20000))
ME=$(id -un)
ssh-keygen -q -t ed25519 -N '' -C lume-metal-test -f "$T/id_ed25519"
unset SSH_AUTH_SOCK LUME_METAL_PASSWORD

# guest NAME ADDR [sshd.sh options]: a running Lume VM NAME served by sshd at ADDR:$PORT.
guest() {
	g=$1 a=$2
	shift 2
	mkdir -p "$T/g/$g"
	cp "$T/id_ed25519" "$T/id_ed25519.pub" "$T/g/$g/" 2>/dev/null
	t_defer "sh '$TOP/tests/sshd.sh' stop '$T/g/$g'"
	sh "$TOP/tests/sshd.sh" start "$T/g/$g" "$a" "$PORT" "$@" || return 1
	sh "$TOP/tests/lume-sim/vm.sh" "$LUME_SIM_DIR" "$g" running "$a" true
}
stop_guest() { sh "$TOP/tests/sshd.sh" stop "$T/g/$1"; }
# root NAME: the guest's lume-metal directory.
root() { printf '%s/g/%s/home/Library/Application Support/lume-metal' "$T" "$1"; }

# lm CMD ARGS...: lume-metal with this harness's connection flags. With LM_EXEC=exec set in a
# subshell, the subshell becomes lume-metal, so `( LM_EXEC=exec; lm ... ) &` gives its pid in $!.
LM_EXEC=""
lm() {
	c=$1
	shift
	$LM_EXEC "$LM" "$c" --lume "$TOP/tests/lume-sim/lume" --port "$PORT" -u "$ME" -i "$T/id_ed25519" \
		--known-hosts "$T/known_hosts" --state "$T/state" "$@"
}

# field NAME FILE: the first string or number value of "NAME" in FILE (one JSON object per line).
field() { sed -n "s/.*\"$1\":\"\{0,1\}\([^\",}]*\).*/\1/p" "$2" | head -n 1; }

# A second profile: the same shim with a lower ceiling, so two payloads differ.
sed -e 's/"id": "m1-ultra-tahoe-26.5"/"id": "apple8"/' -e 's/"appleFamilyMax": 1009/"appleFamilyMax": 1008/' \
	"$TOP/manifests/profiles/m1-ultra-tahoe-26.5.json" >"$T/apple8.json"

# validated NAME [lume-metal validate flags...]: a real `lume-metal validate`, which must pass,
# of the image version of the VM the flags name (a Lume name, or --host), with the
# SIMULATED llama-perplexity on the guests' PATH and $VMODEL (one file every guest on this
# machine reads): llama-server requires validation ("requireValidation"), so without a passing
# validate record its deploys are refused. The guests of one version (the same simulated facts
# and image label) share a key, so one call per test file and version covers them all. One TAP
# line, NAME.
# deploy --validate-workload --model "$VMODEL" --timeout "$VTIMEOUT" validates the same way,
# where validate cannot reach (--hosts). VTIMEOUT bounds a VM's run: validation raises the
# default --timeout to 3600 s, and a run that hangs must not cost the suite an hour.
VMODEL=$T/model.gguf VTIMEOUT=100
head -c 4096 /dev/urandom >"$VMODEL"
validated() {
	n=$1
	shift
	check_rc "$n" 0 lm validate --target linux-sim --model "$VMODEL" --timeout "$VTIMEOUT" "$@"
}

# unvalidated_datadir DIR: makes DIR a data folder of this tree's whose workloads require no
# validate record (the gate is t-validate's), for tests about what a guest does after the gate:
# use it as LUME_METAL_DATADIR for the build and the deploys.
unvalidated_datadir() {
	mkdir -p "$1/manifests/workloads"
	for u_f in guest-payload build manifests/profiles manifests/schema manifests/texts; do
		ln -s "$TOP/$u_f" "$1/$u_f"
	done
	for u_f in "$TOP/manifests/workloads/"*.json; do
		sed 's/"requireValidation": *true/"requireValidation": false/' "$u_f" >"$1/manifests/workloads/${u_f##*/}"
	done
}

# unvalidated_payload: D=$T/data, a data folder of unvalidated_datadir, is LUME_METAL_DATADIR for
# the rest of the test (the workloads it makes go into $D/manifests/workloads), and its linux-sim
# payload is built to $T/a.tar.gz (one TAP line); A is that payload's SHA-256.
unvalidated_payload() {
	D=$T/data
	unvalidated_datadir "$D"
	LUME_METAL_DATADIR=$D
	export LUME_METAL_DATADIR
	check_rc "build the workload's payload" 0 "$LM" build --target linux-sim -o "$T/a.tar.gz"
	# shellcheck disable=SC2034 # A is for the test that sources this
	A=$(sha256sum <"$T/a.tar.gz" | cut -c1-64)
}
