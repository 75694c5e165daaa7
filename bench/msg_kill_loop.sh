#!/bin/sh
# Runs inside the Soft-RoCE guest: the msg guest suite's kill step (tests/msg/guest_suite.sh step 2)
# N times per type, to measure how often a receiver misjudges a killed sender (session 7's
# read-pull race: a raw IBV_WC_REM_ACCESS_ERR instead of "the peer is gone"). From the host:
#   lab/rdma-guest --timeout 800 --bin build/weft --bin bench/msg_kill_loop.sh -- "N=15 TYPES=read-pull msg_kill_loop.sh"
# (WEFT=NAME picks another binary put in the guest with --bin). Prints "kill loop: K ok, F failed".
ip=${WRD_IP:-10.9.0.1}
port=47500
W="${WEFT:-weft} --log-level warn msg bench"
fails=0
oks=0
for i in $(seq 1 "${N:-10}"); do
  for t in ${TYPES:-read-pull}; do
    port=$((port + 1))
    rm -f /tmp/kill.$t /tmp/killc.$t
    $W --server --bind "$ip" --port $port --mode check --timeout-ms 20000 >/tmp/kill.$t 2>&1 &
    spid=$!
    $W --client "$ip" --port $port --mode check --type "$t" --iters 100000000 --timeout-ms 20000 >/tmp/killc.$t 2>&1 &
    cpid=$!
    j=0
    while ! grep -q connected /tmp/killc.$t 2>/dev/null && [ $j -lt 60 ]; do sleep 1; j=$((j + 1)); done
    sleep 1
    kill -9 $cpid
    wait $cpid 2>/dev/null
    wait $spid
    rc=$?
    if [ $rc -ne 0 ] && grep -q "the peer is gone" /tmp/kill.$t; then
      oks=$((oks + 1))
    else
      fails=$((fails + 1))
      echo "FAIL $t (round $i): server rc $rc: $(cat /tmp/kill.$t)"
    fi
  done
done
echo "kill loop: $oks ok, $fails failed"
