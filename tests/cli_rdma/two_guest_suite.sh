#!/bin/sh
# Runs in both Soft-RoCE guests of `lab/rdma-guest --two` (see run_two_guests.sh): the rdma CLI
# across qemu's UDP wire, guest 0 serving (10.9.0.1), guest 1 the client (10.9.0.2). Both guests
# walk the same steps; wrd-barrier keeps them in step, so a failed step on one side costs the other
# at most the barrier's wait. Each guest exits 0 only if all its own checks passed.
#   rxe0 up       rxe0 ACTIVE/LINK_UP on eth0 with the RoCE v2 GID ::ffff:<own address> (both)
#   ping          `weft ping rdma` from guest 1 to `weft rdma responder` on guest 0: every probe
#                 answered, min RTT > 0; then netem 20 ms on guest 1's eth0: min RTT >= 20 ms
#   bench         `weft rdma bench --op send --test lat` across: both sides exit 0, a result row
#   msg check     `weft msg bench --mode check` (send-recv, 0..64 KiB): every byte verified
set -u
W="weft --log-level warn"
TC=/usr/sbin/tc
srv=10.9.0.1
failed=""
ok() { echo "--- ok $1"; }
bad() { echo "--- FAILED $1: $2"; failed="$failed $1"; }
client() { [ "$WRD_NODE" = 1 ]; }
barrier() { wrd-barrier "$1" "${2:-120}" || bad "barrier-$1" "the other guest did not arrive"; }
# json_num FILE PATH: the first number after "PATH": in FILE (PATH like rtt_incl_responder_delay_us.*min)
json_num() { grep -o "\"$2\":[0-9.]*" "$1" | head -n 1 | cut -d: -f2; }

# 1. rxe0 on eth0 is up, with this guest's RoCE v2 GID.
link=$(rdma link show rxe0/1 2>&1)
echo "$link"
gid=$(cat /sys/class/infiniband/rxe0/ports/1/gids/1 2>/dev/null)
want=$(echo "$WRD_IP" | awk -F. '{ printf "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x", $1, $2, $3, $4 }')
case "$link" in
  *"state ACTIVE physical_state LINK_UP netdev eth0"*)
    if [ "$gid" = "$want" ]; then ok "rxe0-up ($WRD_IP, GID 1 $gid)"; else bad rxe0-gid "GID 1 is '$gid', not $want"; fi ;;
  *) bad rxe0-up "$link" ;;
esac
barrier up

# 2. weft ping rdma across, then with netem delaying guest 1's eth0 by 20 ms.
if client; then
  barrier responder
  $W ping rdma "rxe0:$srv" -c 10 -i 0.05 --timeout 5 --json >/tmp/ping.json
  rc=$?
  cat /tmp/ping.json
  got=$(json_num /tmp/ping.json received)
  min=$(grep -o '"rtt_incl_responder_delay_us":{[^}]*}' /tmp/ping.json | grep -o '"min":[0-9.]*' | cut -d: -f2)
  if [ $rc -eq 0 ] && [ "${got:-0}" = 10 ] && awk -v m="${min:-0}" 'BEGIN { exit !(m > 0) }'; then
    ok "ping-rdma (10 of 10 answered, min RTT $min us)"
  else
    bad ping-rdma "rc $rc, received ${got:-none}, min ${min:-none}"
  fi
  if $TC qdisc add dev eth0 root netem delay 20ms; then
    $W ping rdma "rxe0:$srv" -c 5 -i 0.05 --timeout 5 --json >/tmp/ping-netem.json
    rc=$?
    $TC qdisc del dev eth0 root
    cat /tmp/ping-netem.json
    dmin=$(grep -o '"rtt_incl_responder_delay_us":{[^}]*}' /tmp/ping-netem.json | grep -o '"min":[0-9.]*' | cut -d: -f2)
    if [ $rc -eq 0 ] && awk -v m="${dmin:-0}" 'BEGIN { exit !(m >= 20000) }'; then
      ok "ping-rdma-netem (netem 20 ms: min RTT $dmin us)"
    else
      bad ping-rdma-netem "rc $rc, min ${dmin:-none} us (want >= 20000)"
    fi
  else
    bad netem "tc qdisc add dev eth0 root netem delay 20ms failed"
  fi
  barrier ping-done
else
  $W rdma responder -d rxe0 --address "$WRD_IP" --discovery "$WRD_IP:7779" --duration 200 >/tmp/resp.out 2>&1 &
  rpid=$!
  i=0
  while [ $i -lt 100 ] && ! grep -q "RDMA responder on" /tmp/resp.out; do sleep 0.1; i=$((i + 1)); done
  barrier responder
  barrier ping-done 200
  kill -INT $rpid
  wait $rpid
  cat /tmp/resp.out
fi

# 3. weft rdma bench send_lat across (the client retries until the server listens).
if client; then
  timeout 120 $W rdma bench --client "$srv" --port 47301 --op send --test lat -n 200 >/tmp/bench.out 2>&1
  rc=$?
  cat /tmp/bench.out
  row=$(awk '/#bytes/ { h = 1; next } h && $1 ~ /^[0-9]+$/ { print; exit }' /tmp/bench.out)
  # columns: bytes iters t_min t_max t_typical ...
  if [ $rc -eq 0 ] && echo "$row" | awk '{ exit !($2 == 200 && $3 > 0 && $5 >= $3) }'; then
    ok "rdma-bench-send-lat (200 iterations: $row)"
  else
    bad rdma-bench-send-lat "rc $rc, row '$row'"
  fi
else
  timeout 120 $W rdma bench --server --bind "$WRD_IP" --port 47301 --op send --test lat -n 200 >/tmp/bench.out 2>&1
  rc=$?
  if [ $rc -eq 0 ]; then ok rdma-bench-server; else bad rdma-bench-server "rc $rc: $(cat /tmp/bench.out)"; fi
fi
barrier bench-done

# 4. msg bench check mode across: random sizes 0..64 KiB, every byte compared by the server.
n=300
if client; then
  timeout 150 $W msg bench --client "$srv" --port 47302 --type send-recv --mode check --iters $n \
    --max-message 65536 --timeout-ms 20000 --json >/tmp/msg.out 2>&1
  rc=$?
  cat /tmp/msg.out
  if [ $rc -eq 0 ]; then ok msg-check-client; else bad msg-check-client "rc $rc"; fi
else
  timeout 150 $W msg bench --server --bind "$WRD_IP" --port 47302 --mode check --timeout-ms 20000 >/tmp/msg.out 2>&1
  rc=$?
  cat /tmp/msg.out
  if [ $rc -eq 0 ] && grep -q "\"verified\":$n,\"of\":$n,\"error\":\"\"" /tmp/msg.out; then
    ok "msg-check (send-recv: $n random-size messages, every byte verified)"
  else
    bad msg-check "server rc $rc"
  fi
fi
barrier msg-done

if [ -n "$failed" ]; then echo "FAILED:$failed"; exit 1; fi
echo "all passed"
