#!/bin/sh
# Runs inside the Soft-RoCE guest (see run_guest_suite.sh). For every message connection type:
#  1. check: MSG_CHECK_COUNT messages of random sizes (0..64 KiB, the ring wraps every ~150
#     messages) and MSG_SMALL_COUNT of 0..256 B, every byte compared by the receiver (1 M per
#     type: bench/msg_check_count.sh, docs/BENCHMARKS.md);
#  2. kill: the sender is killed (SIGKILL) a second after it connected; the receiver must end with "the peer is
#     gone" within its timeout, having verified every message it delivered;
#  3. stall: the receiver is stopped (SIGSTOP); the sender must give up with a timeout naming
#     what it waited for (a credit, ring space) within its limit;
#  4. a latency and a bandwidth run of 200 messages (the bench's own plumbing).
# Then the shared ring (N:1, MSG_SHARED_COUNT messages per sender, 0..64 KiB):
#  5. shared-check: 3 sender processes into one receiver, every byte of every sender checked;
#  6. shared-holes: 4 senders; sender 2 reserves its message 200 and exits without writing it (a
#     hole in the ring), sender 3 is killed (SIGKILL) mid-stream; senders 0 and 1 must get every
#     message through (the receiver skips the holes) and sender 2's first 200 must be delivered.
# Exit 0 if all passed.
set -u
ip=${WRD_IP:-10.9.0.1}
count=${MSG_CHECK_COUNT:-20000}
shared=${MSG_SHARED_COUNT:-2000}
small=${MSG_SMALL_COUNT:-50000}
types=${MSG_TYPES:-"send-recv send-recv-srq read-pull simplex-ring magic-ring duplex-ring faa-ring"}
failed=""
port=47100
W="weft --log-level warn msg bench"

ok() { echo "--- ok $1"; }
# Waits (at most 60 s) until the client writing to file $1 is connected, then 1 s more.
connected() {
  i=0
  while ! grep -q "connected" "$1" 2>/dev/null && [ $i -lt 60 ]; do sleep 1; i=$((i + 1)); done
  sleep 1
}
bad() { echo "--- FAILED $1: $2"; failed="$failed $1"; }
# check TYPE COUNT MAX: COUNT random-size messages of 0..MAX bytes, every byte compared.
check() {
  port=$((port + 1))
  $W --server --bind "$ip" --port $port --mode check --timeout-ms 20000 >/tmp/check.$1 2>&1 &
  spid=$!
  s0=$(date +%s)
  if $W --client "$ip" --port $port --mode check --type "$1" --iters "$2" --max-message "$3" \
       --timeout-ms 20000 --json; then
    wait $spid; rc=$?
    if [ $rc -eq 0 ] && grep -q "\"verified\":$2,\"of\":$2,\"error\":\"\"" /tmp/check.$1; then
      ok "check-$1 ($2 messages of 0..$3 bytes, $(($(date +%s) - s0)) s)"
    else
      bad "check-$1-$3" "server rc $rc: $(cat /tmp/check.$1)"
    fi
  else
    wait $spid
    bad "check-$1-$3" "client failed; server: $(cat /tmp/check.$1)"
  fi
}

for t in $types; do
  # 1. every byte of $count messages of 0..64 KiB, and of $small messages of 0..256 B
  check "$t" "$count" 65536
  check "$t" "$small" 256

  # 2. the sender dies mid-stream
  port=$((port + 1))
  $W --server --bind "$ip" --port $port --mode check --timeout-ms 20000 >/tmp/kill.$t 2>&1 &
  spid=$!
  $W --client "$ip" --port $port --mode check --type "$t" --iters 100000000 --timeout-ms 20000 >/tmp/killc.$t 2>&1 &
  cpid=$!
  connected /tmp/killc.$t
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

  # 3. the receiver stalls (SIGSTOP): the sender must fail with a timeout naming what it waited
  #    for, within its 3 s limit, never hang
  port=$((port + 1))
  $W --server --bind "$ip" --port $port --mode check --timeout-ms 20000 >/dev/null 2>&1 &
  spid=$!
  $W --client "$ip" --port $port --mode check --type "$t" --iters 100000000 --timeout-ms 3000 >/tmp/stall.$t 2>&1 &
  cpid=$!
  connected /tmp/stall.$t
  kill -STOP $spid
  s0=$(date +%s)
  wait $cpid; rc=$?
  took=$(($(date +%s) - s0))
  kill -CONT $spid; kill $spid 2>/dev/null; wait $spid 2>/dev/null
  if [ $rc -ne 0 ] && grep -q "waiting for .*timed out" /tmp/stall.$t && [ $took -lt 15 ]; then
    ok "stall-$t (sender gave up $took s after the stall: $(grep -o 'waiting for [a-z ]*' /tmp/stall.$t | head -1))"
  else
    bad "stall-$t" "client rc $rc after $took s: $(cat /tmp/stall.$t)"
  fi

  # 4. latency and bandwidth plumbing (each client run ends its server)
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
# 5. shared ring, 3 senders, every byte checked
S="--type shared-ring --mode check --timeout-ms 20000"
port=$((port + 1))
$W --server --bind "$ip" --port $port --mode check --timeout-ms 20000 >/tmp/shared.s 2>&1 &
spid=$!
s0=$(date +%s)
if $W --client "$ip" --port $port $S --senders 3 --iters "$shared" --json >/tmp/shared.c 2>&1 && wait $spid &&
   grep -q "\"verified\":\[$shared,$shared,$shared\],.*\"error\":\"\"" /tmp/shared.s; then
  ok "shared-check (3 senders x $shared messages of 0..65536 bytes, $(($(date +%s) - s0)) s)"
else
  kill $spid 2>/dev/null; wait $spid 2>/dev/null
  bad "shared-check" "server: $(cat /tmp/shared.s) client: $(cat /tmp/shared.c)"
fi

# 6. shared ring, 4 senders: one leaves a reservation unwritten, one is killed mid-stream
port=$((port + 1))
$W --server --bind "$ip" --port $port --mode check --timeout-ms 20000 >/tmp/holes.s 2>&1 &
spid=$!
for k in 0 1; do
  $W --client "$ip" --port $port $S --senders 4 --sender-index $k --iters "$shared" --json >/tmp/holes.$k 2>&1 &
  eval "c$k=\$!"
done
$W --client "$ip" --port $port $S --senders 4 --sender-index 2 --iters "$shared" --abandon-at 200 >/tmp/holes.2 2>&1 &
$W --client "$ip" --port $port $S --senders 4 --sender-index 3 --iters 100000000 >/tmp/holes.3 2>&1 &
kpid=$!
connected /tmp/holes.3
kill -9 $kpid
s0=$(date +%s)
wait $c0; r0=$?
wait $c1; r1=$?
wait $spid
took=$(($(date +%s) - s0))
wait
v=$(grep -o '"verified":\[[0-9,]*\]' /tmp/holes.s)
if [ $r0 -eq 0 ] && [ $r1 -eq 0 ] && echo "$v" | grep -q "\[$shared,$shared,200,[1-9][0-9]*\]" &&
   grep -q '"holes":[1-9]' /tmp/holes.s && grep -q "every sender is gone" /tmp/holes.s && [ $took -lt 30 ]; then
  ok "shared-holes ($v, $(grep -o '"holes":[0-9]*' /tmp/holes.s), ended $took s after the kill)"
else
  bad "shared-holes" "senders rc $r0 $r1 after $took s; server: $(cat /tmp/holes.s); 0: $(cat /tmp/holes.0); 2: $(cat /tmp/holes.2)"
fi

if [ -n "$failed" ]; then echo "msg guest suite FAILED:$failed"; exit 1; fi
echo "msg guest suite passed"
