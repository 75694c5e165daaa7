#!/bin/sh
# Runs inside the Soft-RoCE guest (see run_guest_suite.sh). For every message connection type:
#  1. check: MSG_CHECK_COUNT messages of random sizes (0..64 KiB, the ring wraps every ~150
#     messages), every byte compared by the receiver;
#  2. kill: the sender is killed (SIGKILL) mid-stream; the receiver must end with "the peer is
#     gone" within its timeout, having verified every message it delivered;
#  3. a latency and a bandwidth run of 200 messages (the bench's own plumbing).
# Exit 0 if all passed.
set -u
ip=${WRD_IP:-10.9.0.1}
count=${MSG_CHECK_COUNT:-20000}
types=${MSG_TYPES:-"send-recv send-recv-srq read-pull simplex-ring magic-ring duplex-ring faa-ring"}
failed=""
port=47100
W="weft --log-level warn msg bench"

ok() { echo "--- ok $1"; }
bad() { echo "--- FAILED $1: $2"; failed="$failed $1"; }

for t in $types; do
  # 1. every byte of $count messages
  port=$((port + 1))
  $W --server --bind "$ip" --port $port --mode check --timeout-ms 20000 >/tmp/check.$t 2>&1 &
  spid=$!
  s0=$(date +%s)
  if $W --client "$ip" --port $port --mode check --type "$t" --iters "$count" --timeout-ms 20000 --json; then
    wait $spid; rc=$?
    if [ $rc -eq 0 ] && grep -q "\"verified\":$count,\"of\":$count,\"error\":\"\"" /tmp/check.$t; then
      ok "check-$t ($count messages, $(($(date +%s) - s0)) s)"
    else
      bad "check-$t" "server rc $rc: $(cat /tmp/check.$t)"
    fi
  else
    wait $spid
    bad "check-$t" "client failed; server: $(cat /tmp/check.$t)"
  fi

  # 2. the sender dies mid-stream
  port=$((port + 1))
  $W --server --bind "$ip" --port $port --mode check --timeout-ms 20000 >/tmp/kill.$t 2>&1 &
  spid=$!
  $W --client "$ip" --port $port --mode check --type "$t" --iters 100000000 --timeout-ms 20000 >/dev/null 2>&1 &
  cpid=$!
  sleep 3
  kill -9 $cpid
  wait $cpid 2>/dev/null
  s0=$(date +%s)
  wait $spid; rc=$?
  took=$(($(date +%s) - s0))
  if [ $rc -ne 0 ] && grep -q "the peer is gone" /tmp/kill.$t && grep -q '"verified":[1-9]' /tmp/kill.$t &&
     [ $took -lt 15 ]; then
    ok "kill-$t (receiver ended $took s after the kill: $(grep -o '"verified":[0-9]*' /tmp/kill.$t))"
  else
    bad "kill-$t" "server rc $rc after $took s: $(cat /tmp/kill.$t)"
  fi

  # 3. latency and bandwidth plumbing (each client run ends its server)
  for mode in latency bandwidth; do
    port=$((port + 1))
    $W --server --bind "$ip" --port $port --timeout-ms 20000 >/dev/null 2>&1 &
    spid=$!
    if $W --client "$ip" --port $port --type "$t" --mode $mode --sizes 0,64,65536 --iters 200 --warmup 10 \
         --timeout-ms 20000 && wait $spid; then
      ok "$mode-$t"
    else
      bad "$mode-$t" "see above"
      kill $spid 2>/dev/null
      wait $spid 2>/dev/null
    fi
  done
done
if [ -n "$failed" ]; then echo "msg guest suite FAILED:$failed"; exit 1; fi
echo "msg guest suite passed"
