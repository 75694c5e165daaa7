#!/usr/bin/env bash
# Request/response latency (root): weft's user-space stack against the Linux kernel's TCP on the
# same routed path, interleaved. Path (lab/stack_netns.sh): a kernel client in namespace K sends
# SIZE-byte requests through the router namespace R, either to `weft stack echo` on its TAP (whose
# kernel end is in R) or to a kernel echo server (bench/tcp_echo_lat.c, blocking, TCP_NODELAY) in
# a namespace S behind its own veth to R. Both answers come from a user-space process that woke up.
# Each round runs the kernel reference then each weft variant, N round trips each (after 200
# warm-up ones). The variants (VARIANTS, environment; default "weft") are `weft stack echo`
# processes side by side, each on its own TAP and subnet routed through R:
#   weft       the defaults (vnet headers on)         weft_napi      --tap-napi
#   weft_off   --no-vnet-hdr                         weft_off_napi  --no-vnet-hdr --tap-napi
#   weft_bulk  --tap-napi-bulk                       weft_off_bulk  --no-vnet-hdr --tap-napi-bulk
#   weft_nonapi --no-tap-napi                        weft_off_nonapi --no-vnet-hdr --no-tap-napi
# (Since session 10 weft_off is weft_off_bulk where /sys allows it: the NAPI thread during bulk
# sends is the default without TSO.)
# AF_PACKET variants: `weft stack echo --device packet` in its own namespace on a veth to R (the
# kernel reference's path has the same shape: a veth to R):
#   packet     the defaults (TPACKET_V2 receive ring)   packet_v3  --packet-ring v3 (1 ms blocks)
#   packet_nosyn  --syn-ring-blocks 0 (bare SYNs in the main ring)
# Usage: bench/stack_latency.sh build/weft [rounds=7] [n=5000] [size=64]
# Prints a table per round and, per variant, the medians over rounds of its median and p99 and of
# the per-round ratio weft median / kernel median.
set -euo pipefail
WEFT=${1:?usage: $0 path/to/weft [rounds] [n] [size]}
ROUNDS=${2:-7}
N=${3:-5000}
SIZE=${4:-64}
[[ $(id -u) == 0 ]] || { echo "needs root"; exit 1; }
. "$(dirname "$0")/../lab/stack_netns.sh"
stack_lab_init lt
S=wst-lt-s-$$
N3=10.$((210 + RANDOM % 40)).$((RANDOM % 250))
REF_IP=$N3.2
stack_lab_add_peer "$S" "$N3" "$REF_IP"
tmp=$(mktemp -d)
trap 'stack_lab_cleanup; rm -rf "$tmp"' EXIT
cc -O2 -o "$tmp/lat" "$(dirname "$0")/tcp_echo_lat.c"
PORT=7007
ip netns exec "$S" "$tmp/lat" server "$PORT" &
stack_lab_pids+=($!)
VARIANTS=${VARIANTS:-weft}
declare -A OPTS=([weft]="" [weft_napi]="--tap-napi" [weft_off]="--no-vnet-hdr" [weft_off_napi]="--no-vnet-hdr --tap-napi"
  [weft_bulk]="--tap-napi-bulk" [weft_off_bulk]="--no-vnet-hdr --tap-napi-bulk"
  [weft_nonapi]="--no-tap-napi" [weft_off_nonapi]="--no-vnet-hdr --no-tap-napi"
  [packet]="" [packet_v3]="--packet-ring v3" [packet_nosyn]="--syn-ring-blocks 0")
declare -A IPS
i=0
for v in $VARIANTS; do
  [[ -v OPTS[$v] ]] || { echo "unknown variant $v"; exit 1; }
  # Variant i: TAP "$TAP$i" on 10.(30+10i..39+10i).x, clear of lab/stack_netns.sh's subnets (90-249).
  net=10.$((30 + 10 * i + RANDOM % 10)).$((RANDOM % 250))
  IPS[$v]=$net.2
  if [[ $v == packet* ]]; then
    pns=wst-lt-p$i-$$ pr=wstq$((RANDOM % 10000)) pif=wstk$((RANDOM % 10000))
    ip netns add "$pns"
    stack_lab_namespaces+=("$pns")
    ip link add "$pr" netns "$R" type veth peer name "$pif" netns "$pns"
    ip -n "$R" addr add "$net.1/24" dev "$pr"
    ip -n "$R" link set "$pr" up
    ip netns exec "$pns" sysctl -qw "net.ipv6.conf.$pif.disable_ipv6=1"
    ip -n "$pns" link set "$pif" up
    # shellcheck disable=SC2086  # the options are words
    ip netns exec "$pns" "$WEFT" stack echo --port "$PORT" --device packet --ifname "$pif" --ip "$net.2/24" \
      --gateway "$net.1" ${OPTS[$v]} 2>"$tmp/$v.err" &
    stack_lab_pids+=($!)
    for _ in $(seq 100); do nsx ping -c 1 -W 0.2 "$net.2" >/dev/null 2>&1 && break; done
    sed -n 1p "$tmp/$v.err"
    i=$((i + 1))
    continue
  fi
  # shellcheck disable=SC2086  # the options are words
  "$WEFT" stack echo --port "$PORT" --tap "$TAP$i" --ip "$net.2/24" --gateway "$net.1" --kernel-ip "$net.1/24" \
    --netns "$R" ${OPTS[$v]} 2>"$tmp/$v.err" &
  stack_lab_pids+=($!)
  for _ in $(seq 100); do rx ip link show "$TAP$i" 2>/dev/null | grep -q UP && break; sleep 0.1; done
  sed -n 1p "$tmp/$v.err"
  i=$((i + 1))
done
sleep 0.5
echo "# $(date -u +%FT%TZ) $N round trips of $SIZE B per run, $ROUNDS rounds, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| round | variant | kernel median us | kernel p99 us | weft median us | weft p99 us | weft/kernel median |"
echo "|---|---|---|---|---|---|---|"
: >"$tmp/runs"
for r in $(seq "$ROUNDS"); do
  k=$(nsx "$tmp/lat" client "$REF_IP" "$PORT" "$N" "$SIZE")
  for v in $VARIANTS; do
    w=$(nsx "$tmp/lat" client "${IPS[$v]}" "$PORT" "$N" "$SIZE")
    python3 - "$r" "$k" "$w" "$tmp/runs" "$v" <<'PY'
import json, sys
k, w = json.loads(sys.argv[2]), json.loads(sys.argv[3])
print("| %s | %s | %.1f | %.1f | %.1f | %.1f | %.3f |" % (sys.argv[1], sys.argv[5], k["median_us"], k["p99_us"],
      w["median_us"], w["p99_us"], w["median_us"] / k["median_us"]))
open(sys.argv[4], "a").write("%s %s %f %f %f %f\n" % (sys.argv[5], sys.argv[1], k["median_us"], k["p99_us"], w["median_us"], w["p99_us"]))
PY
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$tmp/runs" $VARIANTS <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
for v in sys.argv[2:]:
    vr = [list(map(float, r[2:])) for r in rows if r[0] == v]
    km, kp, wm, wp = (st.median(c) for c in zip(*vr))
    ratios = [r[2] / r[0] for r in vr]
    print("%s, median over rounds: kernel median %.1f us p99 %.1f us; weft median %.1f us p99 %.1f us; "
          "weft/kernel median ratio %.3f (min %.3f max %.3f); p99 ratio %.3f"
          % (v, km, kp, wm, wp, st.median(ratios), min(ratios), max(ratios), st.median([r[3] / r[1] for r in vr])))
PY
