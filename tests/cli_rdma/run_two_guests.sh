#!/usr/bin/env bash
# ctest entry (label rdma-guest): boots two Soft-RoCE guests wired by qemu's UDP socket netdev
# (lab/rdma-guest --two) and runs two_guest_suite.sh in both: rxe0 up on each, `weft ping rdma`
# across (and across netem), `weft rdma bench` send_lat across, `weft msg bench` check mode across.
#   run_two_guests.sh WEFT
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$(dirname "$0")/../../lab/guest-preconditions.sh"
guest_preconditions "the Soft-RoCE guests"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
rc=0
"$ROOT/lab/rdma-guest" --two --timeout "${WRD_GUEST_TIMEOUT:-400}" --bin "$1" --bin "$HERE/two_guest_suite.sh" \
  -- sh /usr/local/bin/two_guest_suite.sh | tee "$out" || rc=$?
# Each guest passed its own checks, and each check ran on the side that makes it.
for want in "[g0] --- ok rxe0-up" "[g1] --- ok rxe0-up" "[g1] --- ok ping-rdma " "[g1] --- ok ping-rdma-netem" \
            "[g1] --- ok rdma-bench-send-lat" "[g0] --- ok msg-check " "[g0] all passed" "[g1] all passed"; do
  grep -qF -- "$want" "$out" || { echo "run_two_guests: missing '$want'"; ((rc)) || rc=1; }
done
exit "$rc"
