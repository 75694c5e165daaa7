#!/usr/bin/env bash
# ctest (label rdma-guest): boots the Soft-RoCE guest once and runs guest_suite.sh inside it
# (every message connection type: random sizes with every byte checked (5 000 of 0..64 KiB and
# 50 000 of 0..256 B per type), a sender killed
# mid-stream, latency and bandwidth runs; the shared ring with 3 and 4 senders, one leaving a hole). Skips (77) without root, qemu or a Debian kernel.
#   run_guest_suite.sh WEFT_BINARY
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$(dirname "$0")/../../lab/guest-preconditions.sh"
guest_preconditions "the Soft-RoCE guest"
exec "$root/lab/rdma-guest" --timeout "${WRD_GUEST_TIMEOUT:-840}" --bin "$1" --bin "$here/guest_suite.sh" -- \
  "MSG_CHECK_COUNT=${MSG_CHECK_COUNT:-5000} MSG_SMALL_COUNT=${MSG_SMALL_COUNT:-50000} MSG_SHARED_COUNT=${MSG_SHARED_COUNT:-2000} guest_suite.sh"
