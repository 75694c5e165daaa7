#!/usr/bin/env bash
# ctest (label rdma-guest): boots the Soft-RoCE guest once and runs guest_dead_peer.sh inside it
# (a killed receiver or sender noticed within 1 s for every type; the server's own failures).
# Skips (77) without root, qemu or a Debian kernel.
#   run_guest_dead_peer.sh WEFT_BINARY
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$(dirname "$0")/../../lab/guest-preconditions.sh"
guest_preconditions "the Soft-RoCE guest"
exec "$root/lab/rdma-guest" --timeout "${WRD_GUEST_TIMEOUT:-600}" --bin "$1" --bin "$here/guest_dead_peer.sh" -- \
  "${MSG_TYPES:+MSG_TYPES='$MSG_TYPES' }guest_dead_peer.sh"
