#!/usr/bin/env bash
# Host test (label unit): without an RDMA device `weft ping rdma` and `weft rdma responder` say
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
check ping-gid 1 ping rdma rxe0:::ffff:10.9.0.1 --qpn 17 -c 1
check ping-host 1 ping rdma rxe0:127.0.0.1 -c 1 --json
# Bad arguments are still bad arguments (2), whatever the host has.
err=$(timeout 20 "$WEFT" ping rdma rxe0:lid:0 --qpn 1 -c 1 2>&1 >/dev/null); rc=$?
if [[ $rc -ne 2 || $err != *"bad LID"* ]]; then echo "FAIL bad-lid: exit $rc: $err"; fail=1; else echo "ok bad-lid: $err"; fi
exit $fail
