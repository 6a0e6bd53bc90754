#!/bin/sh
# Writes one simulated Lume VM: vm.sh DIR NAME STATUS IP|null SSH(true|false|null)
# The object has every field `lume get --format json` prints, in its order.
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
