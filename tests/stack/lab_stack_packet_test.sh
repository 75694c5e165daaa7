#!/usr/bin/env bash
# Lab test (root): weft's user-space stack on an AF_PACKET device (TPACKET_V2 receive ring by
# default, TPACKET_V3 with --packet-ring v3; sendmmsg transmit; src/stack/dev/packet_device.hpp) against the Linux kernel's TCP. The stack runs in
# namespace P and takes P's end of a veth pair whose other end sits in the router namespace R
# (lab/stack_netns.sh); the kernel peer is in namespace K behind R. Checks: ping; as a server
# (weft stack echo) and as a client (weft stack connect --echo-check) 4 MiB each way come back
# byte-exact at 0 and 1 % loss (nft `numgen random` in R, both directions), a 64-byte
# request/response median under 600 us as server (a lone frame must not wait in the ring: with
# TPACKET_V3's 1 ms blocks it took ~1 ms), 4 MiB as server on the V3 ring, then 1 MiB with the
# stack computing every checksum itself (--no-vnet-hdr), then 4 MiB with TSO off on the interface
# (super-frames cut by the kernel's software GSO), then `connect --zerocopy` (the send ring filled
# on its first lap only) with a kernel server checking every byte of the stream. Cleans up on any exit.
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
lat=$(mktemp)
cc -O2 -o "$lat" "$(dirname "$0")/../../bench/tcp_echo_lat.c"
out=$(timeout 60 ip netns exec "$K" "$lat" client "$STACK_IP" 7 500 64 || true)
med=$(sed -nE 's/.*"median_us":([0-9.]+).*/\1/p' <<<"$out")
if [[ -n $med ]] && python3 -c "import sys; sys.exit(0 if $med < 600 else 1)"; then
  echo "64 B request/response, 500 round trips: median $med us (TPACKET_V2 ring)"
else
  echo "FAIL 64 B request/response median ${med:-none} us (a lone frame waiting in the ring?): ${out:-nothing}"; fail=1
fi
stack_lab_stop_bg
stack_lab_bg ip netns exec "$P" "$WEFT" stack echo "${DEV[@]}" --packet-ring v3 -t 300
stack_lab_wait_ping "$STACK_IP" 50 || fail=1
out=$(timeout 60 ip netns exec "$K" "$lat" client "$STACK_IP" 7 200 64 || true)
echo "the same on the TPACKET_V3 ring (1 ms blocks): median $(sed -nE 's/.*"median_us":([0-9.]+).*/\1/p' <<<"$out") us"
stack_lab_check_echo "loss 0%, TPACKET_V3 ring" "$STACK_IP" "$N" || fail=1
rm -f "$lat"
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
# `connect --zerocopy` (still with TSO off: software GSO) writes its pattern into the send ring on
# the first lap only and then commits the ring's bytes as they are: a kernel server in K checks that
# the stream is 'S' and then byte s = (s % 256) * 7 mod 256, every byte, and that it got all weft
# counted. A 64 KiB ring makes thousands of laps; a capacity not a multiple of 256 writes always.
zc_out=$(mktemp)
nsx python3 -c '
import socket
ls = socket.socket(); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); ls.bind(("0.0.0.0", 9100)); ls.listen(4)
want = bytes((i * 7) & 255 for i in range(256))
for _ in range(2):
    c, _a = ls.accept(); s = 0; bad = -1
    while True:
        k = c.recv(1 << 20)
        if not k: break
        if s == 0 and k[0] != ord("S"): bad = 0
        start = 1 if s == 0 else 0
        p = (s + start) % 256
        exp = ((want[p:] + want[:p]) * ((len(k) - start) // 256 + 2))[:len(k) - start]
        if bad < 0 and k[start:] != exp:
            bad = s + start + next(i for i in range(len(exp)) if k[start + i] != exp[i])
        s += len(k)
    print("zc", s, bad, flush=True); c.close()
' >"$zc_out" 2>&1 &
stack_lab_pids+=($!)
for _ in $(seq 50); do nsx ss -ltn 2>/dev/null | grep -q ':9100 ' && break; sleep 0.1; done
n=0
for buf in 65536 65636; do
  out=$(timeout 60 ip netns exec "$P" "$WEFT" stack connect "$KERN_IP" --port 9100 --zerocopy --json -t 1 \
    --buffer "$buf" "${DEV[@]}" 2>/dev/null) || true
  n=$((n + 1))
  for _ in $(seq 50); do (($(wc -l <"$zc_out") >= n)) && break; sleep 0.1; done
  bytes=$(sed -nE 's/.*"bytes":([0-9]+).*/\1/p' <<<"$out")
  srv=$(sed -n "${n}p" "$zc_out")
  if [[ -n $bytes ]] && ((bytes > buf * 4)) && [[ $srv == "zc $((bytes + 1)) -1" ]] && grep -q '"ok":true' <<<"$out"; then
    echo "--zerocopy, send ring of $buf bytes: $bytes bytes, every byte as the pattern says (server: $srv)"
  else
    echo "FAIL --zerocopy, send ring of $buf bytes: weft ${out:-nothing}; server: ${srv:-nothing}"; fail=1
  fi
done
rm -f "$zc_out"
exit $fail
