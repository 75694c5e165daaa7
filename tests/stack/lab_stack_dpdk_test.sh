#!/usr/bin/env bash
# Lab test (root, only built with DPDK): weft's stack on a DPDK port (src/stack/dev/dpdk_device.hpp:
# EAL --no-huge --no-pci with a net_af_packet vdev on P's end of a veth to the router namespace R,
# lab/stack_netns.sh) against the Linux kernel's TCP in K. Checks: ping; 4 MiB each way
# byte-exact as server (SHA-256 of random data from a kernel client) and as client (the pattern
# check against a kernel echo server), no loss. The af_packet PMD reports no checksum state, so
# R's end sends full checksums (tx checksumming off there: a partial one would look corrupt).
set -euo pipefail
WEFT=${1:?usage: $0 path/to/weft}
[[ $(id -u) == 0 ]] || { echo "SKIP: needs root"; exit 0; }
. "$(dirname "$0")/../../lab/stack_netns.sh"
stack_lab_init dpdk
P=wst-dpdk-p-$$
stack_lab_add_packet_link "$P"
rx python3 "$(dirname "$0")/../../lab/offloads.py" "$PKT_PEER" off >/dev/null
DEV=(--device dpdk --dpdk-vdev "net_af_packet0,iface=$PKT_IF" --ip "$STACK_IP/24" --gateway "$GW_IP")
N=4194304
fail=0

echo "== the stack as server (weft stack echo on DPDK net_af_packet over $PKT_IF), kernel client in $K"
stack_lab_bg ip netns exec "$P" "$WEFT" stack echo "${DEV[@]}" -t 300
stack_lab_wait_ping "$STACK_IP" || fail=1
stack_lab_check_echo echo "$STACK_IP" "$N" || fail=1
stack_lab_stop_bg

echo "== the stack as client (weft stack connect --echo-check on DPDK), kernel echo server in $K"
stack_lab_start_echo_server || fail=1
stack_lab_check_connect echo-check ip netns exec "$P" "$WEFT" stack connect "$KERN_IP" --echo-check "$N" "${DEV[@]}" -t 140 || fail=1
exit $fail
