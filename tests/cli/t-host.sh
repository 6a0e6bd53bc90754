#!/bin/sh
# shellcheck disable=SC1091,SC2016 # sourced lib; single-quoted $ is for the inner sh
# host status/enable/disable against the simulated defaults(1), and the VMs it says to restart.
. "$(dirname "$0")/../lib.sh"
HOME=$T/home
PATH=$TOP/tests/guest-sim/bin:$PATH
LUME_SIM_DIR=$T/lume
export HOME PATH LUME_SIM_DIR
mkdir -p "$HOME" "$LUME_SIM_DIR"
sh "$TOP/tests/lume-sim/vm.sh" "$LUME_SIM_DIR" tahoe-run running 192.168.64.5 true
sh "$TOP/tests/lume-sim/vm.sh" "$LUME_SIM_DIR" tahoe-off stopped null null
H() { "$LM" host --state "$T/state" --lume "$TOP/tests/lume-sim/lume" "$@"; }
D="com.apple.gpusw.ParavirtualizedGraphics ForceUnrestrictedDeviceFeatureLevel"

check_rc "host status with the preference unset" 0 H status
check_grep "... says not set" "$D: not set" "$T/.out"
defaults write com.apple.gpusw.ParavirtualizedGraphics ForceUnrestrictedDeviceFeatureLevel -bool false
check_rc "host enable" 0 H enable --json
check_grep "... sets it, remembering false" '"value":"true","before":"false"' "$T/.out"
check_grep "... and names the running VM to restart, not the stopped one" '"restartNeeded":\["tahoe-run"\]' "$T/.out"
check "... defaults reads 1" sh -c '[ "$(defaults read com.apple.gpusw.ParavirtualizedGraphics ForceUnrestrictedDeviceFeatureLevel)" = 1 ]'
check_rc "enable again keeps the first remembered value" 0 H enable
check_rc "host disable" 0 H disable --json
check_grep "... restores false" '"value":"false","restored":"false"' "$T/.out"
check "... defaults reads 0" sh -c '[ "$(defaults read com.apple.gpusw.ParavirtualizedGraphics ForceUnrestrictedDeviceFeatureLevel)" = 0 ]'
defaults delete com.apple.gpusw.ParavirtualizedGraphics ForceUnrestrictedDeviceFeatureLevel 2>/dev/null
check_rc "enable from unset" 0 H enable
check_rc "then disable" 0 H disable
check "... deletes it again, as stock" sh -c '! defaults read com.apple.gpusw.ParavirtualizedGraphics ForceUnrestrictedDeviceFeatureLevel 2>/dev/null'
check_rc "host with a bad verb" 2 H reboot
t_done
