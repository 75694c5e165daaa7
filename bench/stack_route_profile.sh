#!/usr/bin/env bash
# One program run across stack_apps.sh's routed path (lab/stack_netns.sh: P -> router R -> K),
# on weft or on the kernel, with what is needed to see where the time goes (root). The figures of
# docs/BENCHMARKS.md "Programs and stack cells, pooled rounds (2026-12-03)", "Read".
#
# usage: bench/stack_route_profile.sh path/to/weft TEST MODE [SECS=5]
#   TEST  iperf3-tx: `iperf3 -s` in P, `iperf3 -c -R` from K (P sends); prints Gb/s
#         socat-rx:  `socat -u TCP-LISTEN STDOUT | sha256sum` in P, kernel socat in K sending
#                    SOCAT_MB MiB (default 256) of random bytes; prints MB/s and K's TCP segments
#         socat-tx:  socat in P sending SOCAT_MB MiB (default 256) of random bytes to kernel socat
#                    in K; prints MB/s
#         nginx-1m:  nginx in P (sendfile, one worker, as stack_apps.sh runs it) serving a 1 MiB
#                    file to `wrk -t 2 -c 16` from K; prints requests/s, and PERF profiles nginx
#   MODE  weft | kernel; WOPTS (environment): more `weft stack run` options, e.g. --drive-in-waits
# Environment, each optional (all start 2 s into the run and last 3 s):
#   PERF=path    perf record -g of P's program (iperf3-tx, nginx-1m) or of K's sender (socat-rx)
#   STAT=path    perf stat of wake-ups, context switches and IPIs, the whole machine, to path
#   FRAMES=1     sizes of the data frames P sends, read with a packet socket on R's end
#                (lab/frame_sizes.py)
set -euo pipefail
WEFT=$(readlink -f "${1:?usage: $0 path/to/weft iperf3-tx|socat-rx|socat-tx|nginx-1m weft|kernel [SECS]}")
TEST=${2:?test} MODE=${3:?mode} SECS=${4:-5}
HERE=$(cd "$(dirname "$0")" && pwd)
[[ $(id -u) == 0 ]] || { echo "needs root"; exit 1; }
. "$HERE/../lab/stack_netns.sh"
stack_lab_init prof
P=wst-prof-p-$$
stack_lab_add_packet_link "$P"
W=$(mktemp -d /tmp/stack_route_profile.XXXX)
trap 'stack_lab_cleanup; rm -rf "$W"' EXIT
in_p() {  # CMD...: in P, on weft or on the kernel
  case $MODE in
    kernel) ip netns exec "$P" "$@" ;;
    # shellcheck disable=SC2086  # WOPTS: options, split on purpose
    weft) ip netns exec "$P" "$WEFT" stack run ${WOPTS:-} --ifname "$PKT_IF" --ip "$STACK_IP/24" --gateway "$GW_IP" -- "$@" ;;
    *) echo "MODE: weft or kernel" >&2; exit 2 ;;
  esac
}
if [[ $MODE == kernel ]]; then
  ip -n "$P" addr add "$STACK_IP/24" dev "$PKT_IF"
  ip -n "$P" route add default via "$GW_IP"
fi
observe() {  # PID: the optional observers, 2 s in, for 3 s
  sleep 2
  [[ -z ${PERF:-} ]] || perf record -q -g -e cpu-clock -F 999 -p "$1" -o "$PERF" -- sleep 3 2>/dev/null &
  [[ -z ${STAT:-} ]] || perf stat -a -e sched:sched_wakeup,sched:sched_switch,ipi:ipi_send_cpu,irq_vectors:reschedule_entry,irq_vectors:call_function_single_entry \
    -o "$STAT" -- sleep 3 >/dev/null 2>&1 &
  [[ -z ${FRAMES:-} ]] || rx python3 "$HERE/../lab/frame_sizes.py" "$PKT_PEER" "$STACK_IP" 3 &
  wait
}
case $TEST in
  iperf3-tx)
    in_p iperf3 -s -4 -1 -p 5201 >/dev/null 2>&1 &
    sleep 1
    observe "$(pgrep -n -x iperf3)" &
    nsx iperf3 -c "$STACK_IP" -p 5201 -t "$SECS" -R -J >"$W/out"
    wait
    python3 -c 'import json, sys; print(sys.argv[1], "%.2f Gb/s" % (json.load(open(sys.argv[2]))["end"]["sum_received"]["bits_per_second"] / 1e9))' "$MODE" "$W/out"
    ;;
  socat-rx)
    MB=${SOCAT_MB:-256}
    head -c $((MB << 20)) /dev/urandom >"$W/big"
    (in_p socat -u TCP-LISTEN:9000,reuseaddr STDOUT | sha256sum | cut -d' ' -f1 >"$W/got") &
    sleep 1
    segs() { nsx awk '/^Tcp:/ && !h {for (i = 1; i <= NF; i++) {if ($i == "InSegs") c = i; if ($i == "OutSegs") d = i}; h = 1; next} /^Tcp:/ {print $c, $d}' /proc/net/snmp; }
    read -r i0 o0 < <(segs)
    t0=$(date +%s.%N)
    if [[ -n ${PERF:-} ]]; then
      nsx perf record -q -g -e cpu-clock -F 999 -o "$PERF" -- socat -u "FILE:$W/big" "TCP:$STACK_IP:9000" 2>/dev/null
    else
      nsx socat -u "FILE:$W/big" "TCP:$STACK_IP:9000"
    fi
    wait
    t1=$(date +%s.%N)
    read -r i1 o1 < <(segs)
    [[ $(cat "$W/got") == $(sha256sum "$W/big" | cut -d' ' -f1) ]] || { echo "SHA-256 differs"; exit 1; }
    python3 -c "print('$MODE', round($MB / ($t1 - $t0), 1), 'MB/s, SHA-256 exact; K took in $((i1 - i0)) and sent $((o1 - o0)) segments')"
    ;;
  socat-tx)
    MB=${SOCAT_MB:-256}
    head -c $((MB << 20)) /dev/urandom >"$W/big"
    (nsx socat -u TCP-LISTEN:9001,reuseaddr STDOUT | sha256sum | cut -d' ' -f1 >"$W/got") &
    sleep 1
    t0=$(date +%s.%N)
    in_p socat -u "FILE:$W/big" "TCP:$KERN_IP:9001" &
    sender=$!
    (sleep 0.5; observe "$(pgrep -n -f "FILE:$W/big")") &
    wait "$sender"
    wait
    t1=$(date +%s.%N)
    [[ $(cat "$W/got") == $(sha256sum "$W/big" | cut -d' ' -f1) ]] || { echo "SHA-256 differs"; exit 1; }
    python3 -c "print('$MODE', round($MB / ($t1 - $t0), 1), 'MB/s, SHA-256 exact')"
    ;;
  nginx-1m)
    mkdir -p "$W/www" "$W/tmp"
    head -c 1048576 /dev/urandom >"$W/www/1m"
    stack_lab_nginx_conf "$W"
    in_p nginx -c "$W/nginx.conf" -e "$W/nginx.err" >/dev/null 2>&1 &
    ng=$!
    for _ in $(seq 100); do nsx bash -c "exec 3<>/dev/tcp/$STACK_IP/8080" 2>/dev/null && break; sleep 0.1; done
    observe "$(pgrep -n -x nginx)" &
    obs=$!
    nsx wrk -t 2 -c 16 -d "${SECS}s" "http://$STACK_IP:8080/1m" >"$W/out"
    wait "$obs" || true
    kill "$ng" 2>/dev/null || true
    wait "$ng" 2>/dev/null || true
    echo "$MODE $(awk '/Requests\/sec/ {print $2}' "$W/out") requests/s"
    ;;
  *) echo "TEST: iperf3-tx, socat-rx, socat-tx or nginx-1m" >&2; exit 2 ;;
esac
