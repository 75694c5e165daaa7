#!/usr/bin/env bash
# Unmodified programs on weft's stack (`weft stack run`, libweft_preload.so) against the same
# programs on the Linux kernel's TCP, on the same veth path, interleaved in rounds (root).
#
# Topology (lab/stack_netns.sh): namespace P holds one end of a veth to the router namespace R; the
# load generators run in K behind R. Each round runs every test twice: once with the server in P on
# weft (`weft stack run --ifname PKT_IF --ip STACK_IP/24 --gateway GW_IP -- SERVER`; PKT_IF has no
# kernel address), once with the same server in P on the kernel (STACK_IP put on PKT_IF for the
# run, default route via GW_IP). Tests:
#   iperf3  -s in P, `iperf3 -c STACK_IP -t SECS` from K (P receives) and with -R (P sends), with
#           1 and 4 parallel streams (-P 4), and with offloads off (one stream each way): the
#           veth ends' tx/sg/tso/gso/gro off (lab/offloads.py) and weft with --no-tso --no-vnet-hdr
#           (weft cuts MSS frames and sums their checksums itself); and P sending once more with
#           weft's default on that veth (iperf3_tx_offloads_off_swgso: super-frames through the
#           vnet header, cut and summed by the kernel's software GSO, as the kernel's own TCP's are
#           there: Linux keeps GSO on for every route); the kernel's run is the same as before;
#   redis   redis-server in P, `redis-benchmark -t set,get -c 50 -n N` from K, pipelining 1 and 16:
#           requests/s, p50 and p99 (ms);
#   nginx   nginx in P (sendfile, epoll, one worker, no master), `wrk -t 2 -c 16 -d SECS` from K on
#           a 1 KiB file with keep-alive and with `Connection: close`, and on a 1 MiB file.
#   socat   SOCAT_MB MiB (default 1024) each way at 0 % and 1 % loss (nft in R, both directions):
#           kernel socat in K sends to socat in P (P receives) and socat in P sends to kernel socat
#           in K (P sends); the receiver pipes into sha256sum, which must match (else the figure is
#           nan and the mismatch is printed); MB/s over the whole transfer.
# Prints one table: each figure's median over the rounds for weft and kernel, and the median of the
# per-round ratios weft/kernel (latencies: a ratio below 1 is better). With REF=path/to/another/weft
# each round also runs that build ("ref", e.g. the one before a change) between weft and kernel, and
# the table gains its median and its ratio to the kernel.
#
# usage: bench/stack_apps.sh path/to/weft [ROUNDS=5] [SECS=3] [REDIS_N=50000]
#   TESTS="iperf3 redis nginx" (the default; socat too: TESTS="... socat") runs only the named tests.
#   RUNS=path keeps the per-round figures there (lines: ROUND MODE FIGURE VALUE).
set -euo pipefail
WEFT=$(readlink -f "${1:?usage: $0 path/to/weft [ROUNDS] [SECS] [REDIS_N]}")
ROUNDS=${2:-5} SECS=${3:-3} REDIS_N=${4:-50000} TESTS=${TESTS:-iperf3 redis nginx}
SOCAT_MB=${SOCAT_MB:-1024} REF=${REF:+$(readlink -f "$REF")}
[[ $(id -u) == 0 ]] || { echo "needs root"; exit 1; }
for p in iperf3 redis-server redis-benchmark nginx wrk socat sha256sum; do command -v $p >/dev/null || { echo "needs $p"; exit 1; }; done
OFFLOADS=$(readlink -f "$(dirname "$0")/../lab/offloads.py")
. "$(dirname "$0")/../lab/stack_netns.sh"
stack_lab_init apps
P=wst-apps-p-$$
stack_lab_add_packet_link "$P"
W=$(mktemp -d /tmp/stack_apps.XXXX)
trap 'stack_lab_cleanup; [[ -z ${RUNS:-} ]] || cp "$W/results" "$RUNS"; rm -rf "$W"' EXIT
mkdir -p "$W/www" "$W/tmp"
head -c 1024 /dev/urandom >"$W/www/1k"
head -c 1048576 /dev/urandom >"$W/www/1m"
stack_lab_nginx_conf "$W"
RES=$W/results  # lines: ROUND MODE FIGURE VALUE
: >"$RES"

WEFT_OPTS=()  # extra `weft stack run` options (offloads off: --no-tso --no-vnet-hdr)
in_p() {  # MODE CMD...: the server in P, on weft (or ref) or on the kernel; called with & (it
  # execs, so the background pid is the server's and kill reaches it)
  local mode=$1 bin=$WEFT
  shift
  [[ $mode == ref ]] && bin=$REF
  if [[ $mode != kernel ]]; then
    exec ip netns exec "$P" "$bin" stack run "${WEFT_OPTS[@]}" --ifname "$PKT_IF" --ip "$STACK_IP/24" --gateway "$GW_IP" -- "$@"
  else
    exec ip netns exec "$P" "$@"
  fi
}
kernel_addr() {  # on|off
  # The kernel answers with the veth's own MAC, weft with its own: R must ask again (a stale entry
  # keeps its frames going to the other MAC until it fails, seconds later).
  ip -n "$R" neigh flush dev "$PKT_PEER"
  if [[ $1 == on ]]; then
    ip -n "$P" addr add "$STACK_IP/24" dev "$PKT_IF"
    ip -n "$P" route add default via "$GW_IP"
  else
    ip -n "$P" addr flush dev "$PKT_IF"
  fi
}
wait_port() {  # PORT
  for _ in $(seq 100); do nsx bash -c "exec 3<>/dev/tcp/$STACK_IP/$1" 2>/dev/null && return 0; sleep 0.1; done
  echo "server on port $1 never answered" >&2; return 1
}
rec() { echo "$1 $2 $3 $4" >>"$RES"; }

offloads() {  # on|off: both ends of P's veth
  ip netns exec "$P" python3 "$OFFLOADS" "$PKT_IF" "$1" >/dev/null
  ip netns exec "$R" python3 "$OFFLOADS" "$PKT_PEER" "$1" >/dev/null
}

run_iperf3() {  # ROUND MODE FIGURE IPERF3-CLIENT-OPTIONS...: one one-off server, one client run
  local r=$1 m=$2 fig=$3 pid out
  shift 3
  in_p "$m" iperf3 -s -4 -1 -p 5201 >/dev/null 2>&1 &
  pid=$!
  # No probe connection: the one-off server would take it for its client. Retry the real one.
  for _ in $(seq 50); do
    out=$(nsx iperf3 -c "$STACK_IP" -p 5201 -t "$SECS" -J "$@" 2>/dev/null) && break
    sleep 0.2
  done
  # A one-off server whose client never got through would wait for ever: give it 5 s to finish.
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  rec "$r" "$m" "$fig" "$(python3 -c 'import json,sys
try: print(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"] / 1e9)
except Exception: print("nan")' <<<"$out")"
}

run_round() {  # ROUND MODE
  local r=$1 m=$2
  if [[ " $TESTS " == *" iperf3 "* ]]; then  # P receives, then P sends
    run_iperf3 "$r" "$m" iperf3_rx
    run_iperf3 "$r" "$m" iperf3_tx -R
    run_iperf3 "$r" "$m" iperf3_rx_P4 -P 4
    run_iperf3 "$r" "$m" iperf3_tx_P4 -P 4 -R
    offloads off
    WEFT_OPTS=(--no-tso --no-vnet-hdr)
    run_iperf3 "$r" "$m" iperf3_rx_offloads_off
    run_iperf3 "$r" "$m" iperf3_tx_offloads_off -R
    WEFT_OPTS=()
    run_iperf3 "$r" "$m" iperf3_tx_offloads_off_swgso -R
    offloads on
  fi
  if [[ " $TESTS " == *" redis "* ]]; then run_redis "$r" "$m"; fi
  if [[ " $TESTS " == *" nginx "* ]]; then run_nginx "$r" "$m"; fi
  if [[ " $TESTS " == *" socat "* ]]; then run_socat "$r" "$m"; fi
}

run_socat() {  # ROUND MODE: SOCAT_MB each way at 0 % and 1 % loss, SHA-256 checked
  local r=$1 m=$2 pid loss dir t0 t1 got
  for loss in 0 1; do
    stack_lab_set_loss "$loss" "$STACK_IP"
    for dir in rx tx; do
      rm -f "$W/sock.sum"
      t0=$(date +%s.%N)
      if [[ $dir == rx ]]; then  # P receives from kernel socat in K
        (in_p "$m" socat -u TCP-LISTEN:9000,reuseaddr STDOUT | sha256sum | cut -d' ' -f1 >"$W/sock.sum") &
        pid=$!
        wait_port_quiet 9000
        t0=$(date +%s.%N)
        nsx timeout 600 socat -u "FILE:$W/big" "TCP:$STACK_IP:9000" 2>/dev/null || true
      else  # P sends to kernel socat in K
        (nsx timeout 600 socat -u TCP-LISTEN:9001,reuseaddr STDOUT | sha256sum | cut -d' ' -f1 >"$W/sock.sum") &
        pid=$!
        for _ in $(seq 100); do nsx ss -ltn | grep -q ':9001 ' && break; sleep 0.05; done
        t0=$(date +%s.%N)
        # (no `timeout` in front of socat: its child would not be the process that owns the stack)
        in_p "$m" socat -u "FILE:$W/big" "TCP:$KERN_IP:9001" >/dev/null 2>&1 &
        local spid=$!
        for _ in $(seq 6000); do kill -0 "$spid" 2>/dev/null || break; sleep 0.1; done
        kill "$spid" 2>/dev/null || true
        wait "$spid" 2>/dev/null || true
      fi
      wait "$pid" 2>/dev/null || true
      t1=$(date +%s.%N)
      got=$(cat "$W/sock.sum" 2>/dev/null || true)
      if [[ $got == "$BIG_SUM" ]]; then
        rec "$r" "$m" "socat_${dir}_loss${loss}_MBps" "$(python3 -c "print($SOCAT_MB / ($t1 - $t0))")"
      else
        echo "socat $m $dir loss $loss: SHA-256 '$got', want $BIG_SUM" >&2
        rec "$r" "$m" "socat_${dir}_loss${loss}_MBps" nan
      fi
    done
  done
  stack_lab_set_loss 0
}
wait_port_quiet() {  # PORT: a one-shot socat server in P listens (it would take a probe for its client)
  for _ in $(seq 100); do
    ip netns exec "$P" ss -ltn 2>/dev/null | grep -q ":$1 " && return 0  # the kernel's listener
    sleep 0.05
  done
  sleep 0.5  # weft's listener is not in ss: give it the time to start
}

run_redis() {  # ROUND MODE
  local r=$1 m=$2 pid out
  in_p "$m" redis-server --bind "$STACK_IP" --port 6390 --save '' --appendonly no --protected-mode no >/dev/null 2>&1 &
  pid=$!
  # A server that never listens (a REF without its libweft_preload.so, say) would leave
  # redis-benchmark reconnecting for ever: the round's redis figures are left out instead.
  if ! wait_port 6390; then
    echo "round $r: $m: redis-server never listened (left out)" >&2
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    return
  fi
  for pl in 1 16; do
    out=$(nsx redis-benchmark -h "$STACK_IP" -p 6390 -t set,get -n "$REDIS_N" -c 50 -P "$pl" --csv 2>/dev/null || true)
    while IFS=, read -r test rps _avg _min p50 _p95 p99 _max; do
      test=${test//\"/}
      [[ $test == SET || $test == GET ]] || continue
      rec "$r" "$m" "redis_${test}_P${pl}_rps" "${rps//\"/}"
      rec "$r" "$m" "redis_${test}_P${pl}_p50_ms" "${p50//\"/}"
      rec "$r" "$m" "redis_${test}_P${pl}_p99_ms" "${p99//\"/}"
    done <<<"$out"
  done
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

run_nginx() {  # ROUND MODE
  local r=$1 m=$2 pid out
  in_p "$m" nginx -c "$W/nginx.conf" -e "$W/nginx.err" >/dev/null 2>&1 &
  pid=$!
  if ! wait_port 8080; then
    echo "round $r: $m: nginx never listened (left out)" >&2
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    return
  fi
  for t in 1k_keepalive 1k_close 1m_keepalive; do
    local hdr=() f=${t%%_*}
    [[ $t == *close ]] && hdr=(-H "Connection: close")
    out=$(nsx wrk -t 2 -c 16 -d "${SECS}s" "${hdr[@]}" "http://$STACK_IP:8080/$f" 2>/dev/null || true)
    rec "$r" "$m" "nginx_${t}_rps" "$(awk '/Requests\/sec/ {print $2}' <<<"$out")"
  done
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

if [[ " $TESTS " == *" socat "* ]]; then
  head -c $((SOCAT_MB << 20)) /dev/urandom >"$W/big"
  BIG_SUM=$(sha256sum <"$W/big" | cut -d' ' -f1)
fi
MODES="weft${REF:+ ref} kernel"
for r in $(seq "$ROUNDS"); do
  for m in $MODES; do  # interleaved: each round runs each
    [[ $m == kernel ]] && kernel_addr on
    run_round "$r" "$m"
    [[ $m == kernel ]] && kernel_addr off
    sleep 0.5
  done
  echo "round $r done ($(date -u +%H:%M:%S), load $(cut -d' ' -f1 /proc/loadavg))" >&2
done

python3 - "$RES" <<'EOP'
import statistics, sys, collections
rows = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    r, m, fig, v = line.split()
    try:
        rows[fig].setdefault(m, {})[int(r)] = float(v)
    except ValueError:
        pass
ref = any("ref" in v for v in rows.values())
med = lambda d: statistics.median(d.values()) if d else float("nan")
def ratio(a, k):
    rs = [a[r] / k[r] for r in a if r in k and k[r] > 0 and a[r] == a[r]]
    return (statistics.median(rs) if rs else float("nan")), len(rs)
head = f"{'figure':28} {'weft':>12} {'kernel':>12} {'ratio w/k':>10}"
if ref:
    head += f" {'ref':>12} {'ratio r/k':>10}"
print(head + "  rounds")
for fig in rows:
    w, k, f = rows[fig].get("weft", {}), rows[fig].get("kernel", {}), rows[fig].get("ref", {})
    rw, n = ratio(w, k)
    line = f"{fig:28} {med(w):12.3f} {med(k):12.3f} {rw:10.2f}"
    if ref:
        line += f" {med(f):12.3f} {ratio(f, k)[0]:10.2f}"
    print(f"{line}  {n}")
EOP
