#!/usr/bin/env bash
# Where the CPU of a new connection per request goes: nginx on weft (`weft stack run`) and on the
# kernel, on the lab of bench/stack_apps.sh (P on a veth to R, wrk in K behind R), rounds
# interleaved. For each run of `wrk -t 2 -c 16 -d SECS -H "Connection: close"` on a 1 KiB file it
# counts, per request: the CPU of nginx (all its threads, weft's stack thread included) and of wrk
# (the time their threads ran, /proc/PID/task/*/schedstat: a softirq is part of the task it
# interrupted, so a veth delivery done in wrk's send is wrk's time), the ksoftirqd
# threads, the softirq time of both cores (/proc/stat, every process's), and the frames on P's
# veth end (both directions). With PERF_TRACE=1 a last run per mode counts nginx's system calls
# (`perf trace -s`, all threads) for a fixed number of requests.
#
# usage: bench/stack_conn_cpu.sh path/to/weft [ROUNDS=3] [SECS=6]
#   REF=path/to/another/weft adds that build as a third mode ("ref").
set -euo pipefail
WEFT=$(readlink -f "${1:?usage: $0 path/to/weft [ROUNDS] [SECS]}")
ROUNDS=${2:-3} SECS=${3:-6} REF=${REF:+$(readlink -f "$REF")}
[[ $(id -u) == 0 ]] || { echo "needs root"; exit 1; }
for p in nginx wrk; do command -v $p >/dev/null || { echo "needs $p"; exit 1; }; done
. "$(dirname "$0")/../lab/stack_netns.sh"
stack_lab_init ccpu
P=wst-ccpu-p-$$
stack_lab_add_packet_link "$P"
W=$(mktemp -d /tmp/stack_conn_cpu.XXXX)
trap 'stack_lab_cleanup; rm -rf "$W"' EXIT
mkdir -p "$W/www" "$W/tmp"
head -c 1024 /dev/urandom >"$W/www/1k"
stack_lab_nginx_conf "$W"
HZ=$(getconf CLK_TCK)

run_ns() {  # PID...: the time their threads ran (ns, /proc/PID/task/*/schedstat; softirqs run in
  # their context included), summed
  local p
  for p in "$@"; do cat /proc/"$p"/task/*/schedstat 2>/dev/null || true; done | awk '{s += $1} END {printf "%.0f\n", s}'
}
softirq() { awk '/^cpu / {print $8}' /proc/stat; }  # ticks, all cores
ksoftirqd() { pgrep -d' ' '^ksoftirqd/' || true; }
frames() { ip -n "$R" -s -j link show "$PKT_PEER" | python3 -c 'import json,sys
s=json.load(sys.stdin)[0]["stats64"]; print(s["rx"]["packets"] + s["tx"]["packets"])'; }

start_nginx() {  # MODE
  local bin=$WEFT
  [[ $1 == ref ]] && bin=$REF
  if [[ $1 == kernel ]]; then
    ip -n "$R" neigh flush dev "$PKT_PEER"
    ip -n "$P" addr add "$STACK_IP/24" dev "$PKT_IF"
    ip -n "$P" route add default via "$GW_IP"
    ip netns exec "$P" nginx -c "$W/nginx.conf" -e "$W/nginx.err" >/dev/null 2>&1 &
  else
    ip netns exec "$P" "$bin" stack run --ifname "$PKT_IF" --ip "$STACK_IP/24" --gateway "$GW_IP" -- \
      nginx -c "$W/nginx.conf" -e "$W/nginx.err" >/dev/null 2>&1 &
  fi
  NGINX=$!
  for _ in $(seq 100); do nsx bash -c "exec 3<>/dev/tcp/$STACK_IP/8080" 2>/dev/null && return 0; sleep 0.1; done
  echo "nginx ($1) never answered" >&2
  return 1
}
stop_nginx() {  # MODE
  kill "$NGINX" 2>/dev/null || true
  wait "$NGINX" 2>/dev/null || true
  if [[ $1 == kernel ]]; then
    ip -n "$P" addr flush dev "$PKT_IF"
    ip -n "$R" neigh flush dev "$PKT_PEER"
  fi
}

printf '%-7s %5s %9s %9s %9s %9s %9s %9s %8s\n' mode round req/s nginx_us wrk_us ksirq_us sirq_us sum_us frames
for r in $(seq "$ROUNDS"); do
  for m in weft ${REF:+ref} kernel; do
    start_nginx "$m"
    sleep 0.3
    # wrk runs 3 s longer than the counted window (which starts 0.5 s in), so all of it is inside
    # wrk's CPU is counted over its whole run (perf stat), per request it made
    ip netns exec "$K" perf stat -x, -e task-clock -o "$W/wrk.stat" \
      wrk -t 2 -c 16 -d "$((SECS + 3))s" -H "Connection: close" "http://$STACK_IP:8080/1k" >"$W/wrk.out" 2>&1 &
    wbg=$!
    sleep 0.5
    n0=$(run_ns "$NGINX") k0=$(run_ns $(ksoftirqd)) s0=$(softirq) f0=$(frames) t0=$(date +%s.%N)
    sleep "$SECS"
    n1=$(run_ns "$NGINX") k1=$(run_ns $(ksoftirqd)) s1=$(softirq) f1=$(frames) t1=$(date +%s.%N)
    wait "$wbg" || true
    rps=$(awk '/Requests\/sec/ {print $2}' "$W/wrk.out")
    stop_nginx "$m"
    python3 - "$m" "$r" "$W" "$t0" "$t1" "$HZ" $((n1 - n0)) $((k1 - k0)) $((s1 - s0)) $((f1 - f0)) <<'EOP'
import re, sys
m, r, w, t0, t1, hz, n, k, s, f = sys.argv[1:]
out = open(f"{w}/wrk.out").read()
rps = float(re.search(r"Requests/sec:\s*([0-9.]+)", out).group(1))
total = int(re.search(r"([0-9]+) requests in", out).group(1))
wrk_ms = next(float(l.split(",")[0]) for l in open(f"{w}/wrk.stat") if "task-clock" in l)
req = rps * (float(t1) - float(t0)); us = lambda ns: int(ns) / 1e3 / req
wk = wrk_ms * 1e3 / total
sq = int(s) / int(hz) * 1e6 / req
print(f"{m:7} {r:>5} {rps:9.0f} {us(n):9.1f} {wk:9.1f} {us(k):9.1f} {sq:9.1f} {us(n)+wk+us(k):9.1f} {int(f)/req:8.2f}")
EOP
    sleep 0.5
  done
  echo "round $r done ($(date -u +%H:%M:%S), load $(cut -d' ' -f1 /proc/loadavg))" >&2
done

if [[ ${PERF_TRACE:-0} == 1 ]]; then
  for m in weft kernel; do
    start_nginx "$m"
    timeout -s INT 8 perf trace -s -p "$NGINX" -o "$W/trace.$m" &
    tp=$!
    sleep 1
    nsx wrk -t 2 -c 16 -d 4s -H "Connection: close" "http://$STACK_IP:8080/1k" >"$W/wrk.out" 2>&1 || true
    wait "$tp" || true
    echo "== $m: $(awk '/requests in/ {print $1}' "$W/wrk.out") requests; nginx's system calls:"
    grep -E '^\s+[a-z_0-9]+\s+[0-9]+' "$W/trace.$m" | awk '{c[$1] += $2} END {for (k in c) print c[k], k}' | sort -rn | head -20
    [[ -n ${KEEP_TRACE:-} ]] && cp "$W/trace.$m" "$KEEP_TRACE.$m"
    stop_nginx "$m"
  done
fi

if [[ -n ${PERF_RECORD:-} ]]; then  # PERF_RECORD=FILE: `perf record -g` of nginx (FILE.weft, FILE.kernel) under the same load
  for m in ${PERF_RECORD_MODES:-weft kernel}; do
    start_nginx "$m"
    ip netns exec "$K" wrk -t 2 -c 16 -d 5s -H "Connection: close" "http://$STACK_IP:8080/1k" >"$W/wrk.out" 2>&1 &
    wbg=$!
    sleep 0.5
    perf record ${PERF_RECORD_OPTS:--g} -o "$PERF_RECORD.$m" -p "$NGINX" -- sleep 4 2>/dev/null
    wait "$wbg" || true
    echo "== perf record $m: $(awk '/requests in/ {print $1}' "$W/wrk.out") requests in 5 s"
    stop_nginx "$m"
  done
fi
