#!/bin/sh
# facts.sh: what the guest says about itself (net/guest.c guest_facts_parse reads it). Sent
# on stdin to `sh -s`, or first in deploy's one exec (deploy.sh follows it): no arguments.
# Each process is guest CPU on every run, the unchanged ones included, so there is one: sysctl,
# for the macOS version and build as the kernel has them (what sw_vers prints) and the model and
# chip ("kern.osproductversion: 26.5", "hw.model: VirtualMac2,1"). The links are read by
# builtins: "current=/.../releases/<sha>" from `pwd -P` once `cd` followed one, so a link to a
# missing release is no release; image.json is joined into one line by `read`.
R="$HOME/Library/Application Support/lume-metal"
printf 'home=%s\n' "$HOME"
sysctl kern.osproductversion kern.osversion hw.model machdep.cpu.brand_string 2>/dev/null
for l in current previous; do
  if cd "$R/$l" 2>/dev/null; then printf '%s=' "$l"; pwd -P; fi
done
if [ -f "$R/image.json" ]; then
  printf 'image='
  while IFS= read -r l || [ -n "$l" ]; do printf '%s' "$l"; done <"$R/image.json"
  printf '\n'
fi
