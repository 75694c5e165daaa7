#!/bin/sh
# Runs inside the Soft-RoCE guest (see run_guest_suite.sh): the verbs test binary, the mesh
# example with 4 processes and pingpong over RC and UD in every wait mode. Exit 0 if all passed.
set -u
ip=${WRD_IP:-10.9.0.1}
failed=""
step() {
  name=$1; shift
  echo "=== $name: $*"
  if "$@"; then echo "--- ok $name"; else echo "--- FAILED $name"; failed="$failed $name"; fi
}
pingpong() {  # pingpong QP WAIT PORT
  weft --log-level warn rdma pingpong --server --bind "$ip" --port "$3" --qp "$1" --wait "$2" --iters 300 &
  spid=$!
  weft --log-level warn rdma pingpong --client "$ip" --port "$3" --qp "$1" --wait "$2" --iters 300
  rc=$?
  wait $spid || rc=1
  return $rc
}

step devices weft rdma devices
step verbs rdma_guest_tests --gtest_brief=1
step mesh-4 weft rdma mesh --nodes 4 --hosts "$ip,$ip,$ip,$ip" --rounds 20 --size 4096
step mesh-4-channel weft rdma mesh --nodes 4 --hosts "$ip,$ip,$ip,$ip" --rounds 5 --wait channel --base-port 47030
step mesh-4-epoll weft rdma mesh --nodes 4 --hosts "$ip,$ip,$ip,$ip" --rounds 5 --wait epoll --base-port 47040
port=47050
for qp in rc ud; do
  for wait in busy channel epoll; do
    step "pingpong-$qp-$wait" pingpong $qp $wait $port
    port=$((port + 1))
  done
done
if [ -n "$failed" ]; then echo "guest suite FAILED:$failed"; exit 1; fi
echo "guest suite passed"
