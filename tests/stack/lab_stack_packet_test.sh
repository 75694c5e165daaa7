#!/usr/bin/env bash
# Lab test (root): weft's user-space stack on an AF_PACKET device (TPACKET_V3 receive ring,
# sendmmsg transmit; src/stack/packet_device.hpp) against the Linux kernel's TCP. The stack runs in
# namespace P and takes P's end of a veth pair whose other end sits in the router namespace R
# (lab/stack_netns.sh); the kernel peer is in namespace K behind R. Checks: ping; as a server
# (weft stack echo) and as a client (weft stack connect --echo-check) 4 MiB each way come back
# byte-exact at 0 and 1 % loss (nft `numgen random` in R, both directions), then 1 MiB with the
# stack computing every checksum itself (--no-vnet-hdr). Cleans up on any exit.
set -euo pipefail
WEFT=${1:?usage: $0 path/to/weft}
[[ $(id -u) == 0 ]] || { echo "SKIP: needs root"; exit 0; }
. "$(dirname "$0")/../../lab/stack_netns.sh"
stack_lab_init pkt
P=wst-pkt-p-$$
stack_lab_add_packet_link "$P"
pids=()
trap 'stack_lab_pids=("${pids[@]}"); stack_lab_cleanup' EXIT
set_loss() { stack_lab_set_loss "$1" "$STACK_IP"; }
px() { ip netns exec "$P" "$@"; }
DEV=(--device packet --ifname "$PKT_IF" --ip "$STACK_IP/24" --gateway "$GW_IP")
N=4194304
fail=0

ECHO_CLIENT=$(readlink -f "$(dirname "$0")/../../lab/stack_echo_client.py")

echo "== the stack as server (weft stack echo on $PKT_IF in $P), kernel client in $K"
px "$WEFT" stack echo "${DEV[@]}" -t 300 &
pids+=($!)
ok=0
for _ in $(seq 50); do nsx ping -c 1 -W 1 "$STACK_IP" >/dev/null 2>&1 && { ok=1; break; }; sleep 0.1; done
if ((ok)) && nsx ping -c 3 -i 0.2 -W 2 "$STACK_IP" >/dev/null; then echo "ping: 3 of 3 answered"; else echo "FAIL: ping"; fail=1; fi
for loss in 0 1; do
  set_loss "$loss"
  if out=$(timeout 150 ip netns exec "$K" python3 "$ECHO_CLIENT" "$STACK_IP" "$N"); then
    echo "loss $loss%: $out"
  else
    echo "FAIL loss $loss%: ${out:-timeout}"; fail=1
  fi
done
set_loss 0
kill "${pids[0]}" 2>/dev/null || true
wait "${pids[0]}" 2>/dev/null || true
pids=()

echo "== the stack as client (weft stack connect --echo-check on $PKT_IF), kernel echo server in $K"
nsx python3 -c "$STACK_LAB_ECHO_SERVER" &
pids+=($!)
for _ in $(seq 50); do nsx ss -ltn 2>/dev/null | grep -q ':7 ' && break; sleep 0.1; done
run_client() {  # LABEL BYTES LOSS [weft options...]
  local label=$1 n=$2 loss=$3 out
  shift 3
  set_loss "$loss"
  if out=$(timeout 150 ip netns exec "$P" "$WEFT" stack connect "$KERN_IP" --echo-check "$n" "${DEV[@]}" -t 140 "$@" 2>/dev/null) &&
     grep -q '"match":true' <<<"$out"; then
    echo "$label: $out"
  else
    echo "FAIL $label: ${out:-timeout}"; fail=1
  fi
}
run_client "loss 0%" "$N" 0
run_client "loss 1%" "$N" 1
run_client "loss 0%, checksums in software (--no-vnet-hdr)" 1048576 0 --no-vnet-hdr
set_loss 0
exit $fail
