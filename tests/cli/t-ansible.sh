#!/bin/sh
# shellcheck disable=SC1091,SC2016 # sourced libs; single-quoted $ is for the inner sh
# scripts/ansible/: the dynamic inventory (lume-metal inventory and the script around it),
# lume-metal ledger merge on real ledgers, and, when Ansible is installed, deploy.yml run for
# real against an sshd "Mac host" whose (simulated) lume lists two real sshd guests.
. "$(dirname "$0")/../lib.sh"
. "$TOP/tests/deploy/common.sh"
INV=$TOP/scripts/ansible/inventory
json() { python3 -m json.tool "$1" >/dev/null; }
# py FILE... CODE: python3 CODE (which asserts) with the files as sys.argv[1:].
py() {
	for c in "$@"; do :; done
	python3 -c "import json, sys
sys.argv.pop()
$c" "$@"
}
# same NAME FILE: the last command's output must be FILE's bytes.
same() { cp "$T/.out" "$T/.same"; check "$1" cmp "$T/.same" "$2"; }

# --- (a) the inventory ---
printf '# two Macs\nadmin@10.9.0.1\n\n  bob@mac-2.lan:2222   # second\n' >"$T/macs.txt"
check_rc "inventory --list of a text hosts file" 0 "$LM" inventory --hosts "$T/macs.txt" --list
cp "$T/.out" "$T/inv.json"
check "... is JSON" json "$T/inv.json"
check "... group mac_hosts with both hosts, _meta.hostvars with host, user and port" py "$T/inv.json" '
d = json.load(open(sys.argv[1]))
assert d["mac_hosts"]["hosts"] == ["10.9.0.1", "mac-2.lan"], d
assert d["_meta"]["hostvars"] == {
    "10.9.0.1": {"ansible_host": "10.9.0.1", "ansible_user": "admin", "ansible_port": 22},
    "mac-2.lan": {"ansible_host": "mac-2.lan", "ansible_user": "bob", "ansible_port": 2222}}, d'
check_rc "inventory without --list is --list" 0 "$LM" inventory --hosts "$T/macs.txt"
same "... the same JSON" "$T/inv.json"
check_rc "scripts/ansible/inventory --list" 0 env LUME_METAL="$LM" LUME_METAL_HOSTS="$T/macs.txt" "$INV" --list
same "... prints what lume-metal inventory prints" "$T/inv.json"
check_rc "inventory of the JSON example manifest" 0 env LUME_METAL="$LM" \
	LUME_METAL_HOSTS="$TOP/manifests/hosts.example.json" "$INV" --list
cp "$T/.out" "$T/inv2.json"
check "... is JSON" json "$T/inv2.json"
check "... its names, addresses, users and ports" py "$T/inv2.json" '
d = json.load(open(sys.argv[1]))
assert d["mac_hosts"]["hosts"] == ["mac-01", "mac-02"], d
assert d["_meta"]["hostvars"] == {
    "mac-01": {"ansible_host": "mac-01.lan", "ansible_user": "admin", "ansible_port": 22},
    "mac-02": {"ansible_host": "10.0.4.12", "ansible_user": "admin", "ansible_port": 2222}}, d'
check_rc "--host NAME" 0 env LUME_METAL="$LM" LUME_METAL_HOSTS="$TOP/manifests/hosts.example.json" "$INV" --host mac-02
cp "$T/.out" "$T/host.json"
check "... prints that host's variables, as JSON" py "$T/host.json" '
assert json.load(open(sys.argv[1])) == {"ansible_host": "10.0.4.12", "ansible_user": "admin", "ansible_port": 2222}'
check_rc "--host of a text file's host" 0 "$LM" inventory --hosts "$T/macs.txt" --host mac-2.lan
check_grep "... its variables" '^\{"ansible_host":"mac-2.lan","ansible_user":"bob","ansible_port":2222\}$' "$T/.out"
check_rc "-u is the user of lines without one" 0 env LUME_METAL="$LM" LUME_METAL_HOSTS="$T/macs.txt" \
	LUME_METAL_USER=ops "$INV" --host 10.9.0.1
check_grep "... (LUME_METAL_USER in the script)" '"ansible_user":"admin"' "$T/.out"
printf 'mac.lan\n' >"$T/nouser.txt"
check_rc "... for a line without a user" 0 env LUME_METAL="$LM" LUME_METAL_HOSTS="$T/nouser.txt" \
	LUME_METAL_USER=ops "$INV" --list
check_grep "... is ops" '"mac.lan":\{"ansible_host":"mac.lan","ansible_user":"ops","ansible_port":22\}' "$T/.out"
check_rc "a name the file does not list is exit 2" 2 env LUME_METAL="$LM" LUME_METAL_HOSTS="$T/macs.txt" "$INV" --host mac-9
check_grep "... naming it" 'macs.txt lists no host named "mac-9"' "$T/.out"
check_rc "--list and --host together are exit 2" 2 "$LM" inventory --hosts "$T/macs.txt" --list --host mac-2.lan
printf 'admin@10.9.0.1\nbob@10.9.0.2 extra\n' >"$T/bad.txt"
check_rc "a bad hosts line is exit 2" 2 env LUME_METAL="$LM" LUME_METAL_HOSTS="$T/bad.txt" "$INV" --list
check_grep "... naming the file and line" 'bad.txt: line 2: "bob@10.9.0.2 extra" is not user@host\[:port\]' "$T/.out"
check "... and printing no JSON" sh -c '! grep -q "{" "$1"' - "$T/.out"
check_rc "a missing hosts file is exit 2" 2 env LUME_METAL="$LM" LUME_METAL_HOSTS="$T/none.txt" "$INV" --list
check_rc "LUME_METAL_HOSTS unset is exit 2" 2 env -u LUME_METAL_HOSTS LUME_METAL="$LM" "$INV" --list
check_grep "... naming the variable" 'LUME_METAL_HOSTS is not set' "$T/.out"
check_rc "LUME_METAL_HOSTS empty is exit 2 too" 2 env LUME_METAL_HOSTS= LUME_METAL="$LM" "$INV" --list
check_rc "the script without --list or --host is exit 2" 2 env LUME_METAL_HOSTS="$T/macs.txt" LUME_METAL="$LM" "$INV"
check_rc "... and with anything else" 2 env LUME_METAL_HOSTS="$T/macs.txt" LUME_METAL="$LM" "$INV" --host
check_rc "a LUME_METAL that is not executable is exit 2" 2 env LUME_METAL_HOSTS="$T/macs.txt" \
	LUME_METAL="$T/nope" "$INV" --list
check_grep "... naming it" "LUME_METAL=$T/nope: not an executable" "$T/.out"
mkdir "$T/bin" && ln -s "$LM" "$T/bin/lume-metal"
check_rc "without LUME_METAL, lume-metal on PATH" 0 env -u LUME_METAL PATH="$T/bin:/usr/bin:/bin" \
	LUME_METAL_HOSTS="$T/macs.txt" "$INV" --list
same "... the same JSON" "$T/inv.json"
if [ -x "$TOP/plugin/lume-metal" ]; then
	check_rc "without either, the repo's plugin/lume-metal" 0 env -u LUME_METAL PATH=/usr/bin:/bin \
		LUME_METAL_HOSTS="$T/macs.txt" "$INV" --list
	same "... the same JSON" "$T/inv.json"
fi

# --- (b) ledger merge, on two real ledgers: one deploy each into its own state ---
# Two guests, also listed (as tahoe-a and tahoe-b) by the Mac host of part (c).
LUME_MAC=$T/lume-mac1
mkdir -p "$LUME_MAC"
guest a1 127.0.0.202 && guest b1 127.0.0.203 || exit 1
sh "$TOP/tests/lume-sim/vm.sh" "$LUME_MAC" tahoe-a running 127.0.0.202 true
sh "$TOP/tests/lume-sim/vm.sh" "$LUME_MAC" tahoe-b running 127.0.0.203 true
"$LM" build --target linux-sim -o "$T/a.tar.gz" >/dev/null || exit 1
"$LM" build --target linux-sim --profile "$T/apple8.json" -o "$T/b.tar.gz" >/dev/null || exit 1
A=$(cut -c1-64 "$T/a.tar.gz.sha256") B=$(cut -c1-64 "$T/b.tar.gz.sha256")
cur() { readlink "$(root "$1")/current" 2>/dev/null || echo none; }
# llama-server requires validation: each state's first deploy validates its image version.
check_rc "a real ledger: deploy a1 into state s1" 0 lm deploy a1 --payload "$T/a.tar.gz" --accept-new --state "$T/s1" \
	--validate-workload --model "$VMODEL" --timeout "$VTIMEOUT"
check_rc "... and again (unchanged)" 0 lm deploy a1 --payload "$T/a.tar.gz" --state "$T/s1"
check_rc "another: deploy b1 into state s2" 0 lm deploy b1 --payload "$T/a.tar.gz" --accept-new --state "$T/s2" \
	--validate-workload --model "$VMODEL" --timeout "$VTIMEOUT"
check_rc "... and roll it back" 0 lm rollback b1 --to none --no-probe --state "$T/s2"
check "... each ledger has its database" sh -c 'ls "$1"/ledger.db && ls "$2"/ledger.db' - "$T/s1" "$T/s2"
# Each ledger's documents, as files (a directory of documents is a source too).
ledger_docs "$T/s1" "$T/d1" && ledger_docs "$T/s2" "$T/d2"
# n DIR: the records of DIR's documents.
n() { py "$1" '
import glob
print(sum(len(json.load(open(f))["records"]) for f in glob.glob(sys.argv[1] + "/*.json")))'; }
N1=$(n "$T/d1") N2=$(n "$T/d2")
check "... holding records (s2 one more, the rollback's)" test "$N1" -ge 1 -a "$N2" -eq $((N1 + 1))
# count FILE...: how many of the glob's files exist.
count() { if [ -e "$1" ]; then echo $#; else echo 0; fi; }
D1=$(count "$T"/d1/*.json) D2=$(count "$T"/d2/*.json)
ND=$(py "$T/d1" "$T/d2" '
import glob
print(len({json.dumps(json.load(open(f))["key"], sort_keys=True) for d in sys.argv[1:] for f in glob.glob(d + "/*.json")}))')
check_rc "merge a state directory and a directory of documents into a third state" 0 \
	"$LM" ledger merge --state "$T/s3" --json "$T/s1" "$T/d2"
check_grep "... counts: every record merged, none present, every source document read" \
	"^\\{\"merged\":$((N1 + N2)),\"documents\":$ND,\"present\":0,\"sources\":$((D1 + D2))\\}\$" "$T/.out"
check_rc "ledger show --json of the merged state" 0 "$LM" ledger show --json --state "$T/s3"
cp "$T/.out" "$T/show.json"
check "... holds every record of both once, each document in time order, under its own key" py \
	"$T/show.json" "$T/d1" "$T/d2" $((N1 + N2)) '
import glob
docs = json.load(open(sys.argv[1]))
src = {}
for d in sys.argv[2:4]:
    for f in glob.glob(d + "/*.json"):
        doc = json.load(open(f))
        k = json.dumps(doc["key"], sort_keys=True)
        src.setdefault(k, []).extend(json.dumps(r, sort_keys=True) for r in doc["records"])
got = {}
for doc in docs:
    k = json.dumps(doc["key"], sort_keys=True)
    assert k not in got, "two documents for one key"
    times = [r["time"] for r in doc["records"]]
    assert times == sorted(times), times
    got[k] = [json.dumps(r, sort_keys=True) for r in doc["records"]]
assert sorted(got) == sorted(src), (list(got), list(src))
for k in got:
    assert sorted(got[k]) == sorted(src[k]), k
assert sum(map(len, got.values())) == sum(map(len, src.values())) == int(sys.argv[4])'
check "... and the records name both VMs" sh -c 'grep -q "\"vm\":\"a1\"" "$1" && grep -q "\"vm\":\"b1\"" "$1"' - "$T/show.json"
"$LM" ledger show --json --state "$T/s3" | cksum >"$T/s3.sum"
check_rc "merging the same sources again" 0 "$LM" ledger merge --state "$T/s3" --json "$T/s1" "$T/d2"
check_grep "... adds nothing, counting every record present" \
	"^\\{\"merged\":0,\"documents\":0,\"present\":$((N1 + N2)),\"sources\":$((D1 + D2))\\}\$" "$T/.out"
check "... and leaves the documents as they were" sh -c '"$3" ledger show --json --state "$1" | cksum | cmp -s - "$2"' - "$T/s3" "$T/s3.sum" "$LM"
check_rc "merge as text" 0 "$LM" ledger merge --state "$T/s3" "$T/s1"
check_grep "... says so" "^merged 0 record\\(s\\) into 0 document\\(s\\); $N1 already present\$" "$T/.out"
for doc in "$T"/d2/*.json; do break; done
check_rc "a single document is a source too" 0 "$LM" ledger merge --state "$T/s5" --json "$doc"
check_grep "... merged" '^\{"merged":[1-9][0-9]*,"documents":1,"present":0,"sources":1\}$' "$T/.out"
printf '{"hosts": []}\n' >"$T/other.json"
check_rc "a JSON source that is not a ledger document is exit 2" 2 "$LM" ledger merge --state "$T/s4" "$T/s1" "$T/other.json"
check_has "... naming its path" "$T/other.json" "$T/.out"
check "... and writes nothing" test ! -e "$T/s4/ledger.db"
check_rc "... nor into a state that has documents" 2 "$LM" ledger merge --state "$T/s3" "$T/s2" "$T/other.json"
check "... which stay as they were" sh -c '"$3" ledger show --json --state "$1" | cksum | cmp -s - "$2"' - "$T/s3" "$T/s3.sum" "$LM"
printf 'not json' >"$T/garbage.json"
check_rc "a source that does not parse is exit 2" 2 "$LM" ledger merge --state "$T/s4" "$T/garbage.json"
check_has "... naming its path" "$T/garbage.json" "$T/.out"
check_rc "a missing source is exit 2" 2 "$LM" ledger merge --state "$T/s4" "$T/none"
check_rc "merge without a source is exit 2" 2 "$LM" ledger merge --state "$T/s4"
mkdir "$T/emptydir"
check_rc "a directory without documents is exit 2 (issue 17: no quiet success)" 2 "$LM" ledger merge --state "$T/s4" --json "$T/emptydir"
check_grep "... naming it" "emptydir holds no ledger" "$T/.out"

# --- (c) Ansible, when it is installed ---
if ! command -v ansible-playbook >/dev/null 2>&1 || ! command -v ansible-inventory >/dev/null 2>&1; then
	ok "# SKIP ansible-playbook is not installed (scripts/deps.sh installs ansible-core)"
	t_done
fi
AD=$TOP/scripts/ansible
mkdir -p "$T/ansible/tmp" "$T/cp"
: >"$T/ansible.cfg"
ANSIBLE_CONFIG=$T/ansible.cfg ANSIBLE_HOME=$T/ansible ANSIBLE_LOCAL_TEMP=$T/ansible/tmp ANSIBLE_NOCOLOR=1
ANSIBLE_REMOTE_TEMP=$T/ansible/remote-tmp
ANSIBLE_RETRY_FILES_ENABLED=False ANSIBLE_PYTHON_INTERPRETER=/usr/bin/python3 ANSIBLE_PIPELINING=True
ANSIBLE_PRIVATE_KEY_FILE=$T/id_ed25519 ANSIBLE_HOST_KEY_CHECKING=True ANSIBLE_DEPRECATION_WARNINGS=False
ANSIBLE_SSH_ARGS="-o ControlMaster=auto -o ControlPersist=30s -o IdentitiesOnly=yes -o UserKnownHostsFile=$T/ansible_known_hosts"
ANSIBLE_SSH_CONTROL_PATH_DIR=$T/cp LUME_METAL=$LM
export ANSIBLE_CONFIG ANSIBLE_HOME ANSIBLE_LOCAL_TEMP ANSIBLE_REMOTE_TEMP ANSIBLE_NOCOLOR ANSIBLE_RETRY_FILES_ENABLED \
	ANSIBLE_PYTHON_INTERPRETER ANSIBLE_PIPELINING ANSIBLE_PRIVATE_KEY_FILE ANSIBLE_HOST_KEY_CHECKING \
	ANSIBLE_DEPRECATION_WARNINGS ANSIBLE_SSH_ARGS ANSIBLE_SSH_CONTROL_PATH_DIR LUME_METAL
# The ControlPersist masters outlive ansible-playbook: end them (by their control sockets).
t_defer 'for s in "$T"/cp/*; do [ -S "$s" ] && ssh -o ControlPath="$s" -O exit x >/dev/null 2>&1; done'

# (No --syntax-check run: the two runs below parse the whole playbook, and a start of
# ansible-playbook is about two seconds of CPU here.)
check_rc "ansible-inventory -i scripts/ansible/inventory --list" 0 env LUME_METAL_HOSTS="$TOP/manifests/hosts.example.json" \
	ansible-inventory -i "$INV" --list
cp "$T/.out" "$T/ai.out"
check "... has both hosts in mac_hosts, with their variables" py "$T/ai.out" '
t = open(sys.argv[1]).read()
d = json.loads(t[t.index("{"):])
assert d["mac_hosts"]["hosts"] == ["mac-01", "mac-02"], d
assert d["_meta"]["hostvars"]["mac-02"] == {"ansible_host": "10.0.4.12", "ansible_user": "admin", "ansible_port": 2222}, d'

# One Mac host on loopback: sshd with the simulated lume first on its PATH, listing tahoe-a and
# tahoe-b (the guests above); its lume-metal is this build, reaching the guests itself.
MAC=$T/g/mac1
mkdir -p "$MAC" && cp "$T/id_ed25519" "$T/id_ed25519.pub" "$MAC/"
t_defer "sh '$TOP/tests/sshd.sh' stop '$MAC'"
sh "$TOP/tests/sshd.sh" start "$MAC" 127.0.0.201 "$PORT" --path "$TOP/tests/lume-sim" --env "LUME_SIM_DIR=$LUME_MAC" || exit 1
printf '[127.0.0.201]:%s %s\n' "$PORT" "$(cut -d' ' -f1,2 "$MAC/host_ed25519.pub")" >"$T/ansible_known_hosts"
printf '%s@127.0.0.201:%s\n' "$ME" "$PORT" >"$T/mac-hosts.txt"
# shellcheck disable=SC2153 # LSAN_OPTIONS is tests/lib.sh's, ASAN_OPTIONS tests/deploy/common.sh's
cat >"$T/vars.json" <<JSON
{"payload": "$T/b.tar.gz", "lume_metal_bin": "$LM", "fetch_dir": "$T/fetched",
 "lume_metal_controller_state": "$T/ctl", "lume_metal_model": "$VMODEL",
 "lume_metal_deploy_args": ["--port", "$PORT", "-u", "$ME", "-i", "$T/id_ed25519",
   "--known-hosts", "$T/mac_known_hosts", "--accept-new", "--timeout", "60"],
 "lume_metal_environment": {"ASAN_OPTIONS": "$ASAN_OPTIONS", "LSAN_OPTIONS": "$LSAN_OPTIONS"}}
JSON
start=$(date +%s)
check_rc "ansible-playbook deploy.yml against one Mac host with two VMs" 0 env LUME_METAL_HOSTS="$T/mac-hosts.txt" \
	ansible-playbook -i "$INV" "$AD/deploy.yml" -e "@$T/vars.json"
cp "$T/.out" "$T/play.out"
printf '# deploy.yml ran in %ss\n' "$(($(date +%s) - start))"
check_grep "... the host ok, nothing failed" '127\.0\.0\.201 +: ok=[0-9]+ +changed=[1-9][0-9]* +unreachable=0 +failed=0' "$T/play.out"
check "... both guests have payload B current" test "$(cur a1) $(cur b1)" = "releases/$B releases/$B"
check "... the payload and its .sha256 were copied to the Mac host" \
	test -s "$MAC/home/.lume-metal/ansible/b.tar.gz" -a -s "$MAC/home/.lume-metal/ansible/b.tar.gz.sha256"
check "... the host's ledger is in its state directory" test -s "$MAC/home/.local/state/lume-metal/ledger.db"
check "... exported and fetched into FETCH_DIR/HOST/ledger.json: the host's documents" sh -c \
	'"$1" ledger show --json --state "$2" | cmp - "$3"' - "$LM" "$MAC/home/.local/state/lume-metal" "$T/fetched/127.0.0.201/ledger.json"
check_rc "the controller's ledger" 0 "$LM" ledger show --json --state "$T/ctl"
cp "$T/.out" "$T/ctl.json"
check "... holds both VMs' deploys of payload B, passed" py "$T/ctl.json" "$B" '
recs = [r for d in json.load(open(sys.argv[1])) for r in d["records"] if r["kind"] == "deploy"]
got = sorted((r.get("vm"), r.get("payloadSha256"), r.get("verdict")) for r in recs)
assert got == [("tahoe-a", sys.argv[2], "pass"), ("tahoe-b", sys.argv[2], "pass")], got'
check "... and one passing validate record of their image version (lume_metal_model)" py "$T/ctl.json" '
recs = [r for d in json.load(open(sys.argv[1])) for r in d["records"] if r["kind"] == "validate"]
assert len(recs) == 1 and recs[0]["verdict"] == "pass", recs'

check "... the role merged the host's records as they arrived" sh -c \
	'grep -A1 "^TASK \[lume_metal : Merge it into" "$1" | grep -q "^changed: \[127\.0\.0\.201 -> localhost\]"' - "$T/play.out"
check_grep "... and the merge play found them there" '\\"merged\\": *0, *\\"documents\\": *0, *\\"present\\": *3' "$T/play.out"

# Payload A again, with a third VM the host lists down: both guests switch back (new records),
# deploy exits 1, the host fails and Ansible stops the run before the merge play; the host's
# records are merged all the same, by the role.
sh "$TOP/tests/lume-sim/vm.sh" "$LUME_MAC" tahoe-c running 127.0.0.204 true
sed "s,$T/b.tar.gz,$T/a.tar.gz," "$T/vars.json" >"$T/vars-a.json"
check_rc "a run with a VM down: the play fails (deploy exit 1)" 2 env LUME_METAL_HOSTS="$T/mac-hosts.txt" \
	ansible-playbook -i "$INV" "$AD/deploy.yml" -e "@$T/vars-a.json"
cp "$T/.out" "$T/play2.out"
check_grep "... the host failed, saying why" 'lume-metal deploy exited 1 \(1: some VM failed' "$T/play2.out"
check_grep "... naming the VM" '\\"vm\\":\\"tahoe-c\\",\\"state\\":\\"unreachable\\"' "$T/play2.out"
check "... the guests were deployed anyway" test "$(cur a1) $(cur b1)" = "releases/$A releases/$A"
check_rc "... and their records are in the controller's ledger" 0 "$LM" ledger show --json --state "$T/ctl"
cp "$T/.out" "$T/ctl2.json"
check "... (payload A, tahoe-a and tahoe-b, and A validated once: a verdict covers one payload)" py "$T/ctl2.json" "$A" '
recs = [r for d in json.load(open(sys.argv[1])) for r in d["records"] if r.get("payloadSha256") == sys.argv[2]]
got = sorted(r.get("vm") for r in recs if r["kind"] == "deploy")
assert got == ["tahoe-a", "tahoe-b"], got
assert len([r for r in recs if r["kind"] == "validate" and r["verdict"] == "pass"]) == 1, recs'
check "... and, the batch failed, Ansible ran no later play: the role's merge was needed" sh -c '! grep -q "PLAY \[Merge the fetched ledgers" "$1"' - "$T/play2.out"
t_done
