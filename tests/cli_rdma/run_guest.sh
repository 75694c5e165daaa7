#!/usr/bin/env bash
# ctest entry (label rdma-guest): boots the Soft-RoCE lab once and runs guest_suite.sh inside.
#   run_guest.sh WEFT
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$(dirname "$0")/../../lab/guest-preconditions.sh"
guest_preconditions "the Soft-RoCE guest"
# perftest's programs for the -R steps (the lab image has ib_send_lat only), where installed.
pt_bins=()
for p in ib_send_bw ib_write_lat ib_write_bw ib_read_lat ib_read_bw; do
  if command -v $p >/dev/null; then pt_bins+=(--bin "$(command -v $p)"); fi
done
exec "$ROOT/lab/rdma-guest" --timeout "${WRD_GUEST_TIMEOUT:-840}" --bin "$1" --bin "$HERE/guest_suite.sh" \
  "${pt_bins[@]}" -- sh /usr/local/bin/guest_suite.sh
