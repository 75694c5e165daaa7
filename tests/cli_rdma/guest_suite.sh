#!/bin/sh
# Runs inside the Soft-RoCE guest (see run_guest.sh): the rdma CLI fixes that need a device.
# Every command runs under `timeout`, so a hang is a failure, not a stuck suite. Exit 0 if all passed.
set -u
ip=${WRD_IP:-10.9.0.1}
failed=""
step() {
  name=$1; shift
  echo "=== $name"
  if "$@"; then echo "--- ok $name"; else echo "--- FAILED $name"; failed="$failed $name"; fi
}
W="weft --log-level warn"

# A UD message above the MTU is refused at once (exit 2, names the MTU); it used to time out.
ud_above_mtu() {
  out=$(timeout 20 $W rdma pingpong --client "$ip" --qp ud --size 2000 2>&1); rc=$?
  echo "$out"
  [ $rc -eq 2 ] && echo "$out" | grep -q "active MTU" || return 1
  out=$(timeout 20 $W rdma pingpong --server --qp ud --size 2000 2>&1); rc=$?
  echo "$out"
  [ $rc -eq 2 ] && echo "$out" | grep -q "active MTU"
}

# A target whose address handle cannot be made (rxe refuses a link-local GID: EINVAL): ping says
# so and ends (exit 1) instead of waiting for ever for -c probes that are never sent. With a
# second, reachable target the run ends after that one's -c probes.
ping_no_ah() {
  out=$(timeout 30 $W ping rdma -d rxe0 fe80::1 --qpn 17 -c 3 -i 0.05 2>&1); rc=$?
  echo "$out"
  [ $rc -eq 1 ] && echo "$out" | grep -q "fe80::1: cannot probe" || return 1
  out=$(timeout 30 $W ping rdma -d rxe0 fe80::1 "::ffff:$ip" --qpn 17 -c 3 -i 0.05 --timeout 0.5 2>&1); rc=$?
  echo "$out"
  [ $rc -ne 124 ] && echo "$out" | grep -q "cannot probe" && echo "$out" | grep -q "3 sent"
}

# Busy-polling ping's RTT floor is close to a verbs ping-pong's (it was 9x: the loop read the
# clock three times a turn). Median of the ping against median of `weft rdma pingpong` over UD.
busy_floor() {
  $W rdma responder -d rxe0 --address "$ip" --discovery "$ip:7779" --busy-poll --duration 60 >/tmp/wcr-resp.out 2>&1 &
  rpid=$!
  i=0
  while [ $i -lt 50 ] && ! grep -q "RDMA responder on" /tmp/wcr-resp.out 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
  timeout 60 $W ping rdma -d rxe0 "$ip" --busy-poll -c 300 -i 0.005 --json >/tmp/wcr-ping.json; prc=$?
  kill -INT $rpid; wait $rpid
  timeout 60 $W rdma pingpong --server --bind "$ip" --port 47101 --qp ud --iters 300 >/dev/null &
  spid=$!
  timeout 60 $W rdma pingpong --client "$ip" --port 47101 --qp ud --iters 300 >/tmp/wcr-pp.json; crc=$?
  wait $spid
  cat /tmp/wcr-ping.json /tmp/wcr-pp.json
  [ $prc -eq 0 ] && [ $crc -eq 0 ] || return 1
  ping_p50=$(sed -n 's/.*"rtt_us":{[^}]*"p50":\([0-9.]*\).*/\1/p' /tmp/wcr-ping.json)
  pp_p50=$(sed -n 's/.*"rtt_us":{[^}]*"p50":\([0-9.]*\).*/\1/p' /tmp/wcr-pp.json)
  echo "busy ping p50 ${ping_p50} us, verbs pingpong p50 ${pp_p50} us"
  awk -v a="$ping_p50" -v b="$pp_p50" 'BEGIN { exit !(a > 0 && b > 0 && a <= 3 * b) }'
}

step ud-above-mtu ud_above_mtu
step ping-no-address-handle ping_no_ah
step busy-poll-floor busy_floor
if [ -n "$failed" ]; then echo "cli rdma guest suite FAILED:$failed"; exit 1; fi
echo "cli rdma guest suite passed"
