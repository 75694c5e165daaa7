#!/usr/bin/env bash
# Lab test (root): weft's user-space stack on an AF_PACKET device (TPACKET_V3 receive ring,
# sendmmsg transmit; src/stack/packet_device.hpp) against the Linux kernel's TCP. The stack runs in
# namespace P and takes P's end of a veth pair whose other end sits in the router namespace R
# (lab/stack_netns.sh); the kernel peer is in namespace K behind R. Checks: ping; as a server
# (weft stack echo) and as a client (weft stack connect --echo-check) 4 MiB each way come back
# byte-exact at 0 and 1 % loss (nft `numgen random` in R, both directions), then 1 MiB with the
# stack computing every checksum itself (--no-vnet-hdr), then 4 MiB with TSO off on the interface
# (super-frames cut by the kernel's software GSO). Cleans up on any exit.
set -euo pipefail
WEFT=${1:?usage: $0 path/to/weft}
[[ $(id -u) == 0 ]] || { echo "SKIP: needs root"; exit 0; }
. "$(dirname "$0")/../../lab/stack_netns.sh"
stack_lab_init pkt
P=wst-pkt-p-$$
stack_lab_add_packet_link "$P"
set_loss() { stack_lab_set_loss "$1" "$STACK_IP"; }
DEV=(--device packet --ifname "$PKT_IF" --ip "$STACK_IP/24" --gateway "$GW_IP")
N=4194304
fail=0

echo "== the stack as server (weft stack echo on $PKT_IF in $P), kernel client in $K"
stack_lab_bg ip netns exec "$P" "$WEFT" stack echo "${DEV[@]}" -t 300
stack_lab_wait_ping "$STACK_IP" 50 || fail=1
for loss in 0 1; do
  set_loss "$loss"
  stack_lab_check_echo "loss $loss%" "$STACK_IP" "$N" || fail=1
done
set_loss 0
stack_lab_stop_bg

echo "== the stack as client (weft stack connect --echo-check on $PKT_IF), kernel echo server in $K"
stack_lab_start_echo_server || fail=1
run_client() {  # LABEL BYTES LOSS [weft options...]
  local label=$1 n=$2 loss=$3
  shift 3
  set_loss "$loss"
  stack_lab_check_connect "$label" ip netns exec "$P" "$WEFT" stack connect "$KERN_IP" --echo-check "$n" "${DEV[@]}" -t 140 "$@" || fail=1
}
run_client "loss 0%" "$N" 0
run_client "loss 1%" "$N" 1
run_client "loss 0%, checksums in software (--no-vnet-hdr)" 1048576 0 --no-vnet-hdr
# With TSO off on the interface the kernel must cut the stack's super-frames in software (GSO),
# which the qdisc-bypass path cannot do (it dropped every one: thousands of retransmits, ~4 MB/s).
# The device must notice and go through the qdisc; at 0 % loss nearly nothing is sent twice.
offl=$(ip netns exec "$P" python3 "$(dirname "$0")/../../lab/offloads.py" "$PKT_IF" off)
echo "offloads on $PKT_IF: $offl"
[[ $offl == *"tso 0"* ]] || { echo "FAIL: could not turn TSO off on $PKT_IF"; fail=1; }
set_loss 0
err=$(mktemp)
if out=$(timeout 150 ip netns exec "$P" "$WEFT" stack connect "$KERN_IP" --echo-check "$N" "${DEV[@]}" -t 140 2>"$err") &&
   grep -q '"match":true' <<<"$out" && grep -q "the kernel's GSO cuts super-frames" "$err" &&
   (($(sed -E 's/.*"retransmits":([0-9]+).*/\1/' <<<"$out") < 20)); then
  echo "loss 0%, TSO off on the interface (software GSO through the qdisc): $out"
else
  echo "FAIL TSO off on the interface: ${out:-timeout} $(cat "$err")"; fail=1
fi
rm -f "$err"
exit $fail
