#!/bin/sh
# Writes one simulated Lume VM: vm.sh DIR NAME STATUS IP|null SSH(true|false|null) [--folder PATH
# [--disk-kib N]]. The object has every field `lume get --format json` prints, in its order.
# --folder also makes the VM's folder PATH/NAME/ as `lume create` leaves it (PATH is a storage
# location's path, e.g. ~/.lume): config.json with the same hardware, a disk.img of N KiB of
# random bytes (default 256), nvram.bin, and no .manifest-digest. SIMULATION: the bytes are
# random, not a macOS disk.
set -eu
ip=$4
name=$(printf '%s' "$2" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g')
[ "$ip" = null ] || ip="\"$ip\""
cat >"$1/$2.json" <<JSON
{
  "cpuCount" : 4,
  "diskSize" : {
    "allocated" : 26843545600,
    "total" : 85899345920
  },
  "display" : "1024x768",
  "downloadProgress" : null,
  "ipAddress" : $ip,
  "locationName" : "home",
  "memorySize" : 17179869184,
  "name" : "$name",
  "networkMode" : "nat",
  "os" : "macOS",
  "provisioningOperation" : null,
  "sharedDirectories" : null,
  "sshAvailable" : $5,
  "status" : "$3",
  "vncUrl" : null
}
JSON
[ "${6:-}" = --folder ] || exit 0
vm=$7/$2 kib=256
[ "${8:-}" != --disk-kib ] || kib=$9
mkdir -p "$vm"
b64() { dd if=/dev/urandom bs="$1" count=1 2>/dev/null | base64 | tr -d '\n'; }
cat >"$vm/config.json" <<JSON
{
  "os" : "macOS",
  "cpuCount" : 4,
  "memorySize" : 17179869184,
  "diskSize" : 85899345920,
  "macAddress" : "7a:4e:1c:2b:3d:5f",
  "display" : "1024x768",
  "hardwareModel" : "$(b64 24)",
  "machineIdentifier" : "$(b64 16)",
  "networkMode" : "nat"
}
JSON
dd if=/dev/urandom of="$vm/disk.img" bs=1024 count="$kib" 2>/dev/null
dd if=/dev/urandom of="$vm/nvram.bin" bs=1024 count=8 2>/dev/null
