#!/usr/bin/env bash
# Lab test (root, only built with DPDK): weft's stack on a DPDK port (src/stack/dpdk_device.hpp:
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
pids=()
trap 'stack_lab_pids=("${pids[@]}"); stack_lab_cleanup' EXIT
rx python3 "$(dirname "$0")/../../lab/offloads.py" "$PKT_PEER" off >/dev/null
DEV=(--device dpdk --dpdk-vdev "net_af_packet0,iface=$PKT_IF" --ip "$STACK_IP/24" --gateway "$GW_IP")
N=4194304
fail=0
ECHO_CLIENT=$(readlink -f "$(dirname "$0")/../../lab/stack_echo_client.py")
echo "== the stack as server (weft stack echo on DPDK net_af_packet over $PKT_IF), kernel client in $K"
ip netns exec "$P" "$WEFT" stack echo "${DEV[@]}" -t 300 &
pids+=($!)
ok=0
for _ in $(seq 100); do nsx ping -c 1 -W 1 "$STACK_IP" >/dev/null 2>&1 && { ok=1; break; }; sleep 0.1; done
if ((ok)) && nsx ping -c 3 -i 0.2 -W 2 "$STACK_IP" >/dev/null; then echo "ping: 3 of 3 answered"; else echo "FAIL: ping"; fail=1; fi
if out=$(timeout 150 ip netns exec "$K" python3 "$ECHO_CLIENT" "$STACK_IP" "$N"); then
  echo "echo: $out"
else
  echo "FAIL echo: ${out:-timeout}"; fail=1
fi
kill "${pids[0]}" 2>/dev/null || true
wait "${pids[0]}" 2>/dev/null || true
pids=()

echo "== the stack as client (weft stack connect --echo-check on DPDK), kernel echo server in $K"
nsx python3 -c "$STACK_LAB_ECHO_SERVER" &
pids+=($!)
for _ in $(seq 50); do nsx ss -ltn 2>/dev/null | grep -q ':7 ' && break; sleep 0.1; done
if out=$(timeout 150 ip netns exec "$P" "$WEFT" stack connect "$KERN_IP" --echo-check "$N" "${DEV[@]}" -t 140 2>/dev/null) &&
   grep -q '"match":true' <<<"$out"; then
  echo "echo-check: $out"
else
  echo "FAIL echo-check: ${out:-timeout}"; fail=1
fi
exit $fail
