#!/usr/bin/env bash
# ctest (label rdma-guest): the lab never hangs. A command that outlives --timeout comes back with
# 124 within a few seconds of the deadline, and no qemu outlives its run. Skips (77) like the other guest tests.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$(dirname "$0")/../../lab/guest-preconditions.sh"
guest_preconditions "the Soft-RoCE guest"
start=$SECONDS
rc=0
"$root/lab/rdma-guest" --timeout 20 -- "sleep 600" || rc=$?
took=$((SECONDS - start))
echo "exit $rc after ${took}s"
[[ $rc -eq 124 ]] || { echo "FAIL: expected exit 124"; exit 1; }
((took < 35)) || { echo "FAIL: took ${took}s for a 20 s limit"; exit 1; }
# The lab deletes a run's directory after killing its qemu: no qemu may outlive its directory.
for pid in $(pgrep -f 'qemu-system-x86_64 .*wrd-run\.' || true); do
  share=$(tr '\0' '\n' < "/proc/$pid/cmdline" 2>/dev/null | grep -oE 'path=[^,]*wrd-run\.[^,/]*' | cut -d= -f2 || true)
  if [[ -n $share && ! -d $share ]]; then echo "FAIL: qemu $pid outlived its run directory $share"; exit 1; fi
done
echo ok
