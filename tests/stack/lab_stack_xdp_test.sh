#!/usr/bin/env bash
# Lab test (root, only built with libxdp): weft's user-space stack on an AF_XDP device
# (src/stack/dev/xdp_device.hpp: copy mode, libxdp's default XDP program, native mode on veth) against
# the Linux kernel's TCP. The stack runs in namespace P on P's end of a veth pair to the router
# namespace R (lab/stack_netns.sh); the kernel peer is in namespace K behind R. Copy mode carries
# no checksum state, so R's end sends full checksums (tx checksumming off there, as for DPDK).
# Checks: ping; as a server (weft stack echo) and as a client (weft stack connect --echo-check)
# 4 MiB each way come back byte-exact at 0 and 1 % loss (nft `numgen random` in R); 1 MiB in
# generic (SKB) mode (--xdp-generic); and after every run, including a server stopped by SIGINT,
# no XDP program is left on the interface. Cleans up on any exit.
set -euo pipefail
WEFT=${1:?usage: $0 path/to/weft}
[[ $(id -u) == 0 ]] || { echo "SKIP: needs root"; exit 0; }
. "$(dirname "$0")/../../lab/stack_netns.sh"
stack_lab_init xdp
P=wst-xdp-p-$$
stack_lab_add_packet_link "$P"
rx python3 "$(dirname "$0")/../../lab/offloads.py" "$PKT_PEER" off >/dev/null
set_loss() { stack_lab_set_loss "$1" "$STACK_IP"; }
DEV=(--device xdp --ifname "$PKT_IF" --ip "$STACK_IP/24" --gateway "$GW_IP")
N=4194304
fail=0
banner=$(mktemp)
trap 'rm -f "$banner"; stack_lab_cleanup' EXIT

# No XDP program on PKT_IF any more (ip link shows "prog/xdp id N" while one is attached).
check_detached() {  # LABEL
  if ip -n "$P" -d link show "$PKT_IF" | grep -q 'prog/xdp'; then
    echo "FAIL $1: an XDP program is still attached to $PKT_IF: $(ip -n "$P" -d link show "$PKT_IF" | grep prog/xdp)"
    return 1
  fi
  echo "$1: no XDP program left on $PKT_IF"
}
check_banner() {  # MODE: the start-up lines name the mode and how to undo
  if grep -q "in $1 mode" "$banner" && grep -q "ip link set dev $PKT_IF" "$banner"; then
    echo "banner: $(grep -o "attached .* mode" "$banner")"
  else
    echo "FAIL: banner does not say '$1 mode' and how to undo: $(cat "$banner")"; return 1
  fi
}

echo "== the stack as server (weft stack echo, AF_XDP on $PKT_IF in $P), kernel client in $K"
ip netns exec "$P" "$WEFT" stack echo "${DEV[@]}" -t 300 2>"$banner" &
srv=$!
stack_lab_pids+=("$srv")
stack_lab_wait_ping "$STACK_IP" 50 || fail=1
check_banner native || fail=1
ip -n "$P" -d link show "$PKT_IF" | grep -q 'prog/xdp' || { echo "FAIL: no XDP program while weft runs"; fail=1; }
for loss in 0 1; do
  set_loss "$loss"
  stack_lab_check_echo "loss $loss%" "$STACK_IP" "$N" || fail=1
done
set_loss 0
kill -INT "$srv"
if wait "$srv"; then echo "server: left on SIGINT"; else echo "FAIL: server exit status $? after SIGINT"; fail=1; fi
stack_lab_pids=()
check_detached "after SIGINT" || fail=1

echo "== the stack as client (weft stack connect --echo-check, AF_XDP), kernel echo server in $K"
stack_lab_start_echo_server || fail=1
run_client() {  # LABEL BYTES LOSS [weft options...]
  local label=$1 n=$2 loss=$3 out
  shift 3
  set_loss "$loss"
  if out=$(timeout 150 ip netns exec "$P" "$WEFT" stack connect "$KERN_IP" --echo-check "$n" "${DEV[@]}" -t 140 "$@" 2>"$banner") &&
     grep -q '"match":true' <<<"$out"; then
    echo "$label: $out"
  else
    echo "FAIL $label: ${out:-timeout} $(cat "$banner")"; fail=1
  fi
  check_detached "$label" || fail=1
}
run_client "loss 0%" "$N" 0
check_banner native || fail=1
run_client "loss 1%" "$N" 1
run_client "loss 0%, generic (SKB) mode" 1048576 0 --xdp-generic
check_banner "generic (SKB)" || fail=1
exit $fail
