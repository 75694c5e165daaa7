#!/usr/bin/env bash
# ctest entry (label rdma-guest): boots the Soft-RoCE lab once and runs guest_suite.sh inside.
#   run_guest.sh WEFT GUEST_TESTS
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
command -v qemu-system-x86_64 >/dev/null || { echo "qemu-system-x86_64 missing: skipped"; exit 77; }
command -v tc >/dev/null || { echo "tc (iproute2) missing: skipped"; exit 77; }
exec "$ROOT/lab/rdma-guest" --timeout 420 --bin "$1" --bin "$2" --bin "$HERE/guest_suite.sh" \
  --bin "$(command -v ip)" --bin "$(command -v tc)" -- sh /usr/local/bin/guest_suite.sh
