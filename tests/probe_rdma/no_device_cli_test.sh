#!/usr/bin/env bash
# Host test (label unit): without an RDMA device `weft rdma responder` says
# "no RDMA device: ..." and exit 1, without a crash. Skipped (77) on a host that has a device.
set -u
WEFT=${1:?usage: no_device_cli_test.sh WEFT}
if compgen -G "/sys/class/infiniband/*" >/dev/null; then echo "this host has RDMA devices: skipped"; exit 77; fi
fail=0
check() {  # check NAME EXPECTED_RC ARGS...
  local name=$1 want=$2; shift 2
  local err rc
  err=$(timeout 20 "$WEFT" "$@" 2>&1 >/dev/null); rc=$?
  if [[ $rc -ne $want ]]; then echo "FAIL $name: exit $rc, want $want; stderr: $err"; fail=1; return; fi
  if [[ $err != *"no RDMA device: "* ]]; then echo "FAIL $name: no 'no RDMA device: ' in: $err"; fail=1; return; fi
  echo "ok $name: $err"
}
check responder 1 rdma responder --duration 1 --discovery none
exit $fail
