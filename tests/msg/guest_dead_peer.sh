#!/bin/sh
# Runs inside the Soft-RoCE guest (see run_guest_dead_peer.sh): how fast `weft msg bench` notices
# a peer that died, and how its server fails when it cannot serve.
#  1. dead receiver: the server (the receiver) is killed (SIGKILL) while the client streams
#     (--mode check) or ping-pongs (--mode latency); the client must exit non-zero with "the peer
#     is gone" within 1 s of the kill, for every type (its --timeout-ms is 20 s: a client that only
#     gives up at its limit fails);
#  2. dead sender: the client (the sender) is killed mid-stream; the server must end with "the
#     peer is gone" within 1 s, for every type;
#  3. the shared ring: the receiver is killed under 2 forked senders; the client within 1 s; and a
#     latency run whose client blocks on the completion channel (--wait channel);
#  4. the server never fails silently: no client within --timeout-ms, a port in use and an unknown
#     --device each end it with a message naming the cause and exit 1, the last two at once.
# Times come from /proc/uptime (busybox has no sub-second date). Exit 0 if all passed.
set -u
ip=${WRD_IP:-10.9.0.1}
types=${MSG_TYPES:-"send-recv send-recv-srq read-pull simplex-ring magic-ring duplex-ring faa-ring"}
limit_cs=${MSG_DEAD_LIMIT_CS:-100}
failed=""
port=47500
W="weft --log-level warn msg bench"

cs() { read -r u _ </proc/uptime; echo "${u%.*}${u#*.}"; }  # centiseconds since boot
ok() { echo "--- ok $1"; }
bad() { echo "--- FAILED $1: $2"; failed="$failed $1"; }
# Waits (at most 60 s) until the client writing to file $1 is connected, then 1 s more.
connected() {
  i=0
  while ! grep -q "connected" "$1" 2>/dev/null && [ $i -lt 60 ]; do sleep 1; i=$((i + 1)); done
  sleep 1
}

# dead NAME VICTIM(server|client) MODE CLIENT-ARGS...: starts a server and a client, kills VICTIM
# once the client is connected and times how long the other one takes to exit.
dead() {
  name=$1 victim=$2 mode=$3; shift 3
  port=$((port + 1))
  # The previous run's "connected" must not be what connected() finds before this client writes.
  rm -f /tmp/dp.s /tmp/dp.c
  $W --server --bind "$ip" --port $port --mode "$mode" --timeout-ms 20000 >/tmp/dp.s 2>&1 &
  spid=$!
  $W --client "$ip" --port $port --mode "$mode" --iters 100000000 --sizes 64 --timeout-ms 20000 "$@" \
    >/tmp/dp.c 2>&1 &
  cpid=$!
  connected /tmp/dp.c
  if [ "$victim" = server ]; then
    kill -9 $spid; t0=$(cs); wait $cpid; rc=$?; t1=$(cs); wait $spid 2>/dev/null; out=/tmp/dp.c
  else
    kill -9 $cpid; t0=$(cs); wait $spid; rc=$?; t1=$(cs); wait $cpid 2>/dev/null; out=/tmp/dp.s
  fi
  took=$((t1 - t0))
  if [ $rc -ne 0 ] && grep -q "the peer is gone" $out && [ $took -lt "$limit_cs" ]; then
    ok "$name (the survivor exited $took cs after the kill)"
  else
    bad "$name" "rc $rc after $took cs (limit $limit_cs): $(cat $out)"
  fi
}

for t in $types; do
  dead "dead-receiver-check-$t" server check --type "$t"
  dead "dead-receiver-latency-$t" server latency --type "$t"
  dead "dead-sender-check-$t" client check --type "$t"
done
dead dead-receiver-shared-ring server check --type shared-ring --senders 2
# Blocking on the completion channel instead of busy polling (the first type of the list).
set -- $types
dead "dead-receiver-latency-channel-$1" server latency --type "$1" --wait channel

# 4. the server's own failures: each says why and exits 1.
server_fails() {
  name=$1 want=$2 max_cs=$3; shift 3
  t0=$(cs)
  out=$($W --server --bind "$ip" "$@" 2>&1); rc=$?
  took=$(($(cs) - t0))
  if [ $rc -eq 1 ] && echo "$out" | grep -q "$want" && [ $took -lt "$max_cs" ]; then
    ok "$name ($took cs: $(echo "$out" | tail -1))"
  else
    bad "$name" "rc $rc after $took cs: $out"
  fi
}
server_fails server-no-client "no client connected within 1000 ms" 1000 --port 47590 --timeout-ms 1000
$W --server --bind "$ip" --port 47591 --timeout-ms 20000 >/dev/null 2>&1 &
busy=$!
sleep 1
server_fails server-port-in-use "listen on $ip:47591: .*in use" 300 --port 47591
kill $busy; wait $busy 2>/dev/null
server_fails server-no-such-device "no device named 'nope0'" 300 --port 47592 --device nope0

if [ -n "$failed" ]; then echo "msg dead-peer suite FAILED:$failed"; exit 1; fi
echo "msg dead-peer suite passed"
