#!/usr/bin/env bash
# ctest (label rdma-guest): boots the Soft-RoCE guest once and runs guest_suite.sh inside it
# (the verbs gtest binary, the 4-process mesh, pingpong RC/UD x busy/channel/epoll).
# Skips (77) without root, qemu or a Debian kernel.
#   run_guest_suite.sh WEFT_BINARY RDMA_GUEST_TESTS_BINARY
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$(dirname "$0")/../../lab/guest-preconditions.sh"
guest_preconditions "the Soft-RoCE guest"
exec "$root/lab/rdma-guest" --timeout "${WRD_GUEST_TIMEOUT:-600}" --bin "$1" --bin "$2" \
  --bin "$here/guest_suite.sh" -- guest_suite.sh
