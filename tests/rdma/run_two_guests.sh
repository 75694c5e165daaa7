#!/usr/bin/env bash
# ctest (label rdma-guest): two guests wired by qemu's UDP socket netdev, pingpong across the wire
# (guest 0 serves, guest 1 is the client). Skips (77) without root, qemu or a Debian kernel.
#   run_two_guests.sh WEFT_BINARY
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
[[ $(id -u) -eq 0 ]] || { echo "skip: the Soft-RoCE guests need root"; exit 77; }
command -v qemu-system-x86_64 >/dev/null || { echo "skip: qemu-system-x86_64 not installed"; exit 77; }
compgen -G "/boot/vmlinuz-*" >/dev/null || { echo "skip: no Debian kernel in /boot"; exit 77; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$root/lab/rdma-guest" --two --timeout "${WRD_GUEST_TIMEOUT:-300}" --bin "$1" -- '
  if [ "$WRD_NODE" = 0 ]; then
    weft --log-level warn rdma pingpong --server --bind "$WRD_IP" --iters 200 --timeout-ms 20000
  else
    weft --log-level warn rdma pingpong --client "$WRD_PEER_IP" --iters 200 --timeout-ms 20000
  fi' | tee "$out"
# Both sides finished and the client measured what crossed the wire.
grep -q '^\[g0\] {"role":"server"' "$out"
grep -q '^\[g1\] {"role":"client","device":"rxe0","qp":"rc".*"iters":200' "$out"
