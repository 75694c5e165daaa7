#!/usr/bin/env bash
# ctest (label rdma-guest): two guests wired by qemu's UDP socket netdev, pingpong across the wire
# (guest 0 serves, guest 1 is the client). Skips (77) without root, qemu or a Debian kernel.
#   run_two_guests.sh WEFT_BINARY
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$(dirname "$0")/../../lab/guest-preconditions.sh"
guest_preconditions "the Soft-RoCE guests"
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
