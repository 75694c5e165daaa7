#!/usr/bin/env bash
# SYN flood against `weft stack serve` (root): N spoofed SYNs (bench/syn_flood.c: random sources in
# 198.18.0.0/15, sendmmsg batches of 64, as fast as the veth takes them, or RATE a second) while a
# real kernel client connects every EVERY seconds (3 s limit each); prints the real client's connect
# times during the flood and after it, weft's resident memory (VmRSS before, the largest sampled
# every 100 ms, VmHWM), and what the listener did with the flood (weft: frames taken from its ring,
# frames the kernel dropped because the ring was full, cookies sent; the kernel: SYNs its TCP took,
# cookies sent).
# Namespaces: W holds weft on a veth end (AF_PACKET, gateway = C), C the kernel client and the
# flooder on the other end. The SYN-ACKs to the spoofed sources are dropped at C's ingress (an
# nftables netdev rule; a real network would carry them away on the wire): on a veth the receiving
# side's IP layer runs inside the sender's system call, and without the rule each SYN-ACK cost the
# listener C's route lookup and drop too (weft took 51 % of a 1,000,000-SYN flood without it, 70 %
# with it, ad hoc). PEER_DROP=0 leaves them to C's IP layer (no forwarding: they die there).
# With KERNEL=1 the same flood goes to a kernel listener in W instead (the reference). On a veth the
# flood's rate is set by the receiver: the kernel's TCP runs inside the flooder's system calls (so a
# kernel listener slows the flood to its own pace), weft reads its ring in its own thread (so the
# flood runs at the flooder's pace and what weft cannot keep up with is dropped in the ring, the
# real client's SYN among them). RATE= offers both the same load.
# Usage: bench/stack_synflood.sh build/weft [N=100000]
# Environment: KERNEL=1, RATE=SYNs/s (0: as fast as it goes), EVERY=0.1 (s between connects),
#   PEER_DROP=1, WEFT_OPTS (more `weft stack serve` options, e.g. --syn-ring-blocks 0).
set -euo pipefail
WEFT=$(readlink -f "${1:?usage: $0 path/to/weft [N]}")
N=${2:-100000}
RATE=${RATE:-0} EVERY=${EVERY:-0.1} PEER_DROP=${PEER_DROP:-1}
[[ $(id -u) == 0 ]] || { echo "SKIP: needs root"; exit 77; }
PY=$([[ -x /usr/bin/python3 ]] && echo /usr/bin/python3 || command -v python3)
W=wsh-fl-w-$$ C=wsh-fl-c-$$
NET=10.19.$((RANDOM % 250))
IFW=wfw$((RANDOM % 10000)) IFC=wfc$((RANDOM % 10000))
tmp=$(mktemp -d)
cleanup() {
  local ns p
  for ns in "$W" "$C"; do for p in $(ip netns pids "$ns" 2>/dev/null); do kill "$p" 2>/dev/null || true; done; done
  wait 2>/dev/null || true
  for ns in "$W" "$C"; do ip netns del "$ns" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
cc -O2 -o "$tmp/flood" "$(dirname "$0")/syn_flood.c"
for ns in "$W" "$C"; do ip netns add "$ns"; ip -n "$ns" link set lo up; done
ip link add "$IFW" netns "$W" type veth peer name "$IFC" netns "$C"
ip netns exec "$W" sysctl -qw "net.ipv6.conf.$IFW.disable_ipv6=1"
ip netns exec "$C" sysctl -qw "net.ipv6.conf.$IFC.disable_ipv6=1" net.ipv4.ip_forward=0
ip -n "$C" addr add "$NET.2/24" dev "$IFC"
ip -n "$W" link set "$IFW" up
ip -n "$C" link set "$IFC" up
peer_drop=""
if [[ $PEER_DROP == 1 ]]; then
  if ip netns exec "$C" nft add table netdev flood 2>/dev/null &&
    ip netns exec "$C" nft add chain netdev flood in "{ type filter hook ingress device $IFC priority 0; policy accept; }" &&
    ip netns exec "$C" nft add rule netdev flood in ip daddr 198.18.0.0/15 counter drop; then
    peer_drop=", SYN-ACKs to the spoofed sources dropped at C's ingress"
  else
    peer_drop=", no nftables: SYN-ACKs to the spoofed sources go through C's IP layer"
  fi
fi
if [[ ${KERNEL:-0} == 1 ]]; then
  ip -n "$W" addr add "$NET.1/24" dev "$IFW"
  ip -n "$W" route add default via "$NET.2"
  ip netns exec "$W" "$PY" -c '
import socket
ls = socket.socket(); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); ls.bind(("0.0.0.0", 5201)); ls.listen(128)
while True: ls.accept()[0].close()' &
  who="the kernel (tcp_syncookies=$(ip netns exec "$W" sysctl -n net.ipv4.tcp_syncookies), listen backlog 128)"
else
  ip netns exec "$W" "$WEFT" stack serve --device packet --ifname "$IFW" --ip "$NET.1/24" --gateway "$NET.2" -t 600 ${WEFT_OPTS:-} \
    --json 2>"$tmp/weft.err" >"$tmp/weft.json" &
  who="weft stack serve"
fi
SRV=$!
for _ in $(seq 100); do ip netns exec "$C" ping -c 1 -W 0.2 "$NET.1" >/dev/null 2>&1 && break; done
MAC=$(ip -n "$C" neigh show "$NET.1" | awk '{print $5}')
[[ -n $MAC ]] || { echo "FAIL: $NET.1 never answered"; exit 1; }
PID=$(ip netns pids "$W" | head -1)
rss() { awk '/^'"$1"':/ {print $2}' "/proc/$PID/status" 2>/dev/null || echo 0; }
echo "# $(date -u +%FT%TZ) $N spoofed SYNs at $who ($NET.1:5201), $([[ $RATE == 0 ]] && echo "as fast as they go" || echo "paced to $RATE/s")$peer_drop, a connect every $EVERY s, load $(cut -d' ' -f1-3 /proc/loadavg)"
rss_before=$(rss VmRSS)
# The real client: a connect every 100 ms until told to stop, its time (or "timeout") per line.
ip netns exec "$C" "$PY" -c '
import socket, sys, time, os
host = sys.argv[1]; stop = sys.argv[2]
while not os.path.exists(stop):
    t0 = time.monotonic()
    try:
        s = socket.create_connection((host, 5201), timeout=3); s.close()
        print("%.4f" % (time.monotonic() - t0), flush=True)
    except OSError:
        print("timeout", flush=True)
    time.sleep(float(sys.argv[3]))
' "$NET.1" "$tmp/stop" "$EVERY" >"$tmp/during" &
CLI=$!
(while [[ ! -e $tmp/stop ]]; do rss VmRSS >>"$tmp/rss"; sleep 0.1; done) &
sleep 0.5
: >"$tmp/mark"
wc -l <"$tmp/during" >"$tmp/mark"
ip netns exec "$C" "$tmp/flood" "$IFC" "$MAC" "$NET.1" 5201 "$N" 1 "$RATE" | tee "$tmp/flood.out"
flood_end=$(wc -l <"$tmp/during")
sleep 3  # connects right after the flood
touch "$tmp/stop"
wait "$CLI" 2>/dev/null || true
"$PY" - "$tmp/during" "$(cat "$tmp/mark")" "$flood_end" "$tmp/rss" "$rss_before" "$(rss VmHWM)" <<'PY'
import statistics as st, sys
lines = [l.strip() for l in open(sys.argv[1])]
a, b = int(sys.argv[2]), int(sys.argv[3])
def show(name, xs):
    ok = [float(x) for x in xs if x != "timeout"]
    to = sum(1 for x in xs if x == "timeout")
    if not xs:
        print("%s: no connects" % name); return
    print("%s: %d connects, %d timed out (3 s), within 1 s: %d; median %s ms, max %s ms" % (
        name, len(xs), to, sum(1 for x in ok if x <= 1.0),
        "%.2f" % (st.median(ok) * 1e3) if ok else "-", "%.2f" % (max(ok) * 1e3) if ok else "-"))
show("before the flood", lines[:a])
show("during the flood", lines[a:b + 1])
show("after the flood (3 s)", lines[b + 1:])
rss = [int(x) for x in open(sys.argv[4]) if x.strip().isdigit()]
print("server RSS: before %s KiB, largest sampled %d KiB, VmHWM %s KiB" % (sys.argv[5], max(rss or [0]), sys.argv[6]))
PY
kill -0 "$SRV" 2>/dev/null && echo "server alive after the flood" || echo "server DIED during the flood"
if [[ ${KERNEL:-0} == 1 ]]; then
  ip netns exec "$W" nstat -az TcpInSegs TcpExtSyncookiesSent TcpExtListenDrops |
    awk '/^Tcp/ {v[$1] = $2} END {printf "kernel listener: %d segments in, %d cookies sent, %d listen drops\n", v["TcpInSegs"], v["TcpExtSyncookiesSent"], v["TcpExtListenDrops"]}'
else
  kill "$SRV" 2>/dev/null || true  # weft leaves on SIGTERM and prints its counters
  wait "$SRV" 2>/dev/null || true
  "$PY" -c '
import json, sys
j = json.load(open(sys.argv[1])); p = j["packet"]; t = j["tcp"]
print("weft: %d frames taken from the rings (%d from the SYN ring), dropped by the kernel (ring full): %d main, %d SYN ring; %d cookies sent, %d connections made" % (
    p["rx_frames"], p.get("rx_syn_frames", 0), p["rx_ring_drops"], p.get("rx_syn_ring_drops", 0), t["cookies_sent"], t["connections_made"]))' "$tmp/weft.json" || true
fi
if [[ $PEER_DROP == 1 ]]; then
  ip netns exec "$C" nft list chain netdev flood in 2>/dev/null |
    awk '/counter/ {print "C dropped " $(NF-3) " SYN-ACKs to spoofed sources at its ingress"}' || true
fi
