#!/bin/sh
# shellcheck disable=SC1091,SC2016 # sourced libs; single-quoted $ is for the inner sh
# The user's OpenSSH configuration, read through `ssh -G` ($LUME_METAL_SSH_CONFIG is its -F
# file): a Host alias with HostName, User, Port, IdentityFile, UserKnownHostsFile and
# StrictHostKeyChecking reaches a real sshd guest; flags given on the command line win; a
# ProxyJump of one hop goes through the jump host's session (two hops are refused); OpenSSH's
# default identities are tried; and each way authentication cannot start has its own message.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/common.sh"

guest cfg 127.0.0.71 || exit 1
cat >"$T/ssh_config" <<EOF
Host tahoe-cfg
  HostName 127.0.0.71
  User $ME
  Port $PORT
  IdentityFile $T/id_ed25519
  UserKnownHostsFile $T/kh-cfg
  StrictHostKeyChecking accept-new
Host jumpy
  HostName 127.0.0.71
  User $ME
  Port $PORT
  ProxyJump mac-alias
Host jump2
  HostName 127.0.0.71
  ProxyJump $ME@127.0.0.72,$ME@127.0.0.73
Host mac-alias
  HostName 127.0.0.73
  User $ME
  Port $PORT
  IdentityFile $T/id_ed25519
EOF
# A Mac host at 127.0.0.73 whose lume lists the guest above as tahoe-x.
mkdir -p "$T/g/mac" "$T/lume-mac"
cp "$T/id_ed25519" "$T/id_ed25519.pub" "$T/g/mac/"
t_defer "sh '$TOP/tests/sshd.sh' stop '$T/g/mac'"
sh "$TOP/tests/sshd.sh" start "$T/g/mac" 127.0.0.73 "$PORT" --path "$TOP/tests/lume-sim" \
	--env "LUME_SIM_DIR=$T/lume-mac" --loglevel DEBUG1 || exit 1
sh "$TOP/tests/lume-sim/vm.sh" "$T/lume-mac" tahoe-x running 127.0.0.71 true
printf 'mac-alias\n' >"$T/hosts"
mkdir -p "$T/home" "$T/bare"
ssh-keygen -q -t ed25519 -N '' -f "$T/other"
ssh-keygen -q -t ed25519 -N 'a passphrase' -f "$T/locked"

# st OUT ARGS...: status as a user whose HOME is $T/home, with the test's configuration; the
# JSON lines and stderr into $T/OUT.
st() {
	o=$1
	shift
	HOME=$T/home LUME_METAL_SSH_CONFIG=$T/ssh_config "$LM" status --lume /nonexistent --state "$T/state" \
		--json "$@" >"$T/$o" 2>&1
}
state() { field state "$T/$1"; }

st alias --host tahoe-cfg
check_grep "--host ALIAS: HostName, User, Port, IdentityFile of ~/.ssh/config reach the guest" \
	'"state":"(drift|ok)"' "$T/alias"
check_has "its address is the HostName" '"address":"127.0.0.71"' "$T/alias"
check "StrictHostKeyChecking accept-new added the key to its UserKnownHostsFile" grep -q 127.0.0.71 "$T/kh-cfg"
"$LM" build --target linux-sim -o "$T/a.tar.gz" >/dev/null || exit 1
check_rc "deploy --host ALIAS: through the alias, validating its image version first" 0 env HOME="$T/home" \
	LUME_METAL_SSH_CONFIG="$T/ssh_config" "$LM" deploy --host tahoe-cfg --lume /nonexistent --state "$T/state" \
	--payload "$T/a.tar.gz" --validate-workload --model "$VMODEL" --timeout "$VTIMEOUT" --json
check_grep "... deployed at the HostName" '"vm":"tahoe-cfg","state":"deployed".*"address":"127\.0\.0\.71"' "$T/.out"

st user --host "nobody-here@tahoe-cfg"
check_has "an explicit user@ wins over User" 'nobody-here@127.0.0.71' "$T/user"
st dashu --host tahoe-cfg -u nobody-either
check_has "-u wins over User" 'nobody-either@127.0.0.71' "$T/dashu"
st lumeu --host tahoe-cfg -u lume
check_has "an explicit -u lume wins over User too: given is not the default" 'lume@127.0.0.71' "$T/lumeu"
mkdir -p "$T/home/.ssh"
st khdef --host tahoe-cfg --known-hosts "$T/home/.ssh/known_hosts"
check "an explicit --known-hosts ~/.ssh/known_hosts (the default's path) wins over UserKnownHostsFile" \
	grep -q 127.0.0.71 "$T/home/.ssh/known_hosts"
rm -f "$T/home/.ssh/known_hosts"

# The config file ($XDG_CONFIG_HOME/lume-metal/config): below the flags, above ~/.ssh/config.
CF=$XDG_CONFIG_HOME/lume-metal/config
mkdir -p "${CF%/*}"
printf '# a comment\n\nuser = cfg-user\nknown-hosts=%s\n' "$T/kh-conf" >"$CF"
st cfuser --host tahoe-cfg
check_has "config file user= wins over the OpenSSH User" 'cfg-user@127.0.0.71' "$T/cfuser"
check "config file known-hosts= wins over UserKnownHostsFile" grep -q 127.0.0.71 "$T/kh-conf"
st cfflag --host tahoe-cfg -u flag-user
check_has "-u wins over the config file" 'flag-user@127.0.0.71' "$T/cfflag"
HOME=$T/home LUME_METAL_SSH_CONFIG=$T/ssh_config "$LM" config --host tahoe-cfg >"$T/cfshow" 2>&1
check_grep "config shows user from the file, with its line" "^user +cfg-user +config:$CF:3\$" "$T/cfshow"
check_grep "... known-hosts from the file, line 4" "^known-hosts +$T/kh-conf +config:$CF:4\$" "$T/cfshow"
check_grep "... the identity from the OpenSSH configuration" "^identity +$T/id_ed25519 +ssh-config\$" "$T/cfshow"
HOME=$T/home LUME_METAL_SSH_CONFIG=$T/ssh_config "$LM" config --host tahoe-cfg -u x --known-hosts "$T/k" >"$T/cfshow" 2>&1
check_grep "... and a flag's value as flag" "^user +x +flag\$" "$T/cfshow"
rm -f "$CF"
HOME=$T/home LUME_METAL_SSH_CONFIG=$T/ssh_config "$LM" config --host tahoe-cfg --json >"$T/cfshow" 2>&1
check "config --json without the file: user and known hosts from ssh -G, state the default" python3 -c '
import json, sys
o = json.load(open(sys.argv[1]))
s = o["settings"]
assert o["fileExists"] is False, o
assert s["user"] == {"value": sys.argv[2], "source": "ssh-config"}, s["user"]
assert s["known-hosts"] == {"value": sys.argv[3] + "/kh-cfg", "source": "ssh-config"}, s["known-hosts"]
assert s["state"]["source"] == "default" and s["password-file"] == {"value": None, "source": "default"}, s
assert o["host"]["hostname"] == "127.0.0.71", o["host"]' "$T/cfshow" "$ME" "$T"

# What the file names is checked as a flag's value is: a key or password file others may read.
cp "$T/id_ed25519" "$T/open-key"
chmod 644 "$T/open-key"
printf 'pw\n' >"$T/open-pw"
chmod 644 "$T/open-pw"
printf 'identity=%s\n' "$T/open-key" >"$CF"
st cfkey --host "$ME@127.0.0.71:$PORT" --known-hosts "$T/kh-cfg"
check_has "an identity= others may read is refused, as -i is" "chmod 600 $T/open-key" "$T/cfkey"
printf 'password-file=%s\n' "$T/open-pw" >"$CF"
LUME_METAL_SSH_CONFIG=/dev/null HOME=$T/bare "$LM" status --lume /nonexistent --state "$T/state" --json \
	--host "$ME@127.0.0.71:$PORT" --known-hosts "$T/kh-cfg" >"$T/cfpw" 2>&1
check_has "a password-file= others may read is refused, as --password-file is" "chmod 600 $T/open-pw" "$T/cfpw"
printf 'user=a\nparalel=4\n' >"$CF"
check_rc "a bad config line: exit 2" 2 st cfbad --host tahoe-cfg --known-hosts "$T/kh-never" --accept-new
check_has "... naming the file and line, with a suggestion" "status: $CF:2: unknown key 'paralel'; did you mean parallel?" "$T/cfbad"
check "... before connecting to anything" test ! -e "$T/kh-never"
rm -f "$CF"

st port --host "tahoe-cfg:1"
check_has "an explicit :port wins over Port" "@127.0.0.71:1: " "$T/port"
st key --host tahoe-cfg -i "$T/other"
check_has "-i wins over IdentityFile (an unaccepted key: auth-failed)" '"state":"auth-failed"' "$T/key"
st kh --host tahoe-cfg --known-hosts "$T/kh-flag"
check "--known-hosts wins over UserKnownHostsFile" grep -q 127.0.0.71 "$T/kh-flag"

st hosts.out --hosts "$T/hosts" --port "$PORT" -u "$ME" -i "$T/id_ed25519" --accept-new --known-hosts "$T/kh-hosts"
check_grep "--hosts: a Mac host named by its alias (HostName, Port) is reached, and its guest through it" \
	'"vm":"mac-alias/tahoe-x".*"state":"(drift|ok)"' "$T/hosts.out"

st jump --host jumpy -i "$T/id_ed25519" --known-hosts "$T/kh-jump" --accept-new
check_grep "--host ALIAS with a ProxyJump of one hop (itself an alias) reaches the guest" '"state":"(drift|ok)"' \
	"$T/jump"
check "... through a direct-tcpip channel of the jump host's session" grep -q "target 127.0.0.71 port" \
	"$T/g/mac/sshd.log"
check "... the guest's host key is known by its HostName and port, as OpenSSH does" \
	grep -q "^\[127.0.0.71\]:$PORT " "$T/kh-jump"
st jump2 --host jump2
check_has "a ProxyJump of two hops is refused, said so" 'more than one hop is not supported yet: use --hosts' \
	"$T/jump2"
check_has "... as refused" '"state":"refused"' "$T/jump2"

# OpenSSH's default identities: ~/.ssh/id_ed25519 of $HOME, with no -i and no configuration.
mkdir -p "$T/home/.ssh"
cp "$T/id_ed25519" "$T/home/.ssh/id_ed25519"
LUME_METAL_SSH_CONFIG=/dev/null HOME=$T/home "$LM" status --lume /nonexistent --state "$T/state" --json \
	--host "$ME@127.0.0.71:$PORT" --known-hosts "$T/kh-cfg" >"$T/dflt" 2>&1
check_grep "no -i: ~/.ssh/id_ed25519 is tried, as OpenSSH does" '"state":"(drift|ok)"' "$T/dflt"

# bare ARGS...: status with nothing configured and an empty HOME.
bare() {
	HOME=$T/bare LUME_METAL_SSH_CONFIG=/dev/null "$LM" status --lume /nonexistent --state "$T/state" --json \
		--host "$ME@127.0.0.71:$PORT" --known-hosts "$T/kh-cfg" "$@" >"$T/bare.out" 2>&1
}
bare
check_has "no credentials at all: said so" 'no credentials to offer' "$T/bare.out"
bare -i "$T/locked"
check_has "a passphrase-protected key and no agent: said so" 'is protected by a passphrase and no ssh-agent holds it' \
	"$T/bare.out"
bare -i "$T/missing-key"
check_has "-i naming no file: said so" "private key $T/missing-key does not exist" "$T/bare.out"
bare -i "$T/other.pub"
check_has "-i naming a .pub: said so" "is a public key: -i takes the private key ($T/other," "$T/bare.out"
chmod 644 "$T/other"
bare -i "$T/other"
check_has "a key others may read is still refused" "chmod 600 $T/other" "$T/bare.out"
check "no sanitizer report in any run" sh -c '! grep -l Sanitizer "$1"/*' - "$T"
t_done
