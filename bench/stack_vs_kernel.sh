#!/usr/bin/env bash
# Rough single-stream throughput, weft's stack vs the Linux kernel's TCP, interleaved (root).
# Both send to the same kernel discard server (Python, 1 MiB recv) in namespace B:
#   kernel: a Python client (sendall of 1 MiB buffers) in namespace A over a veth pair, MTU 1500;
#   stack:  `weft stack connect` on a TAP (vnet_hdr, transmit checksum offload) whose kernel end is in B.
# Offloads on the veth are left at their defaults (no ethtool on this host), so the kernel side
# has TSO/GSO/GRO and the stack (no TSO yet) has per-1448-byte frames: expect the ratio to be low.
# Usage: bench/stack_vs_kernel.sh build/weft [rounds=5] [seconds=3]
set -euo pipefail
WEFT=${1:?usage: $0 path/to/weft [rounds] [seconds]}
ROUNDS=${2:-5}
SECS=${3:-3}
A=wsb-a-$$ B=wsb-b-$$
cleanup() {
  for ns in "$A" "$B"; do
    for p in $(ip netns pids "$ns" 2>/dev/null); do kill "$p" 2>/dev/null || true; done
    ip netns del "$ns" 2>/dev/null || true
  done
}
trap cleanup EXIT
ip netns add "$A"; ip netns add "$B"
ip link add wsbva netns "$A" type veth peer name wsbvb netns "$B"
ip -n "$A" addr add 10.251.1.1/24 dev wsbva; ip -n "$A" link set wsbva up
ip -n "$B" addr add 10.251.1.2/24 dev wsbvb; ip -n "$B" link set wsbvb up
ip netns exec "$B" python3 -c '
import socket, threading, time, sys
ls = socket.socket(); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); ls.bind(("0.0.0.0", 9000)); ls.listen(8)
def serve(c, a):
    n = 0; t0 = time.time(); buf = bytearray(1 << 20)
    while True:
        k = c.recv_into(buf)
        if not k: break
        n += k
    dt = time.time() - t0
    print("%s %d %.3f %.3f" % (a[0], n, dt, n * 8 / dt / 1e9), flush=True)
while True:
    c, a = ls.accept(); threading.Thread(target=serve, args=(c, a), daemon=True).start()
' > /tmp/wsb-server.$$ &
sleep 0.5
KCLIENT='
import socket, sys, time
s = socket.create_connection(("10.251.1.2", 9000)); b = bytes(1 << 20); end = time.time() + float(sys.argv[1])
while time.time() < end: s.sendall(b)
s.close()'
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$ROUNDS"); do
  ip netns exec "$A" python3 -c "$KCLIENT" "$SECS"
  sleep 0.3
  "$WEFT" stack connect 10.252.1.1 --port 9000 -t "$SECS" --json --tap wsbt0 --ip 10.252.1.2/24 \
    --kernel-ip 10.252.1.1/24 --netns "$B" 2>/dev/null > /tmp/wsb-stack.$$ || true
  sleep 0.3
done
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - /tmp/wsb-server.$$ <<'PY'
import sys, statistics
k, s = [], []
for line in open(sys.argv[1]):
    src, n, dt, gbps = line.split()
    (k if src.startswith("10.251.") else s).append(float(gbps))
print("kernel Gb/s per round:", " ".join("%.3f" % x for x in k))
print("stack  Gb/s per round:", " ".join("%.3f" % x for x in s))
if k and s:
    ratios = [a / b for a, b in zip(s, k)]
    print("median kernel %.3f Gb/s, median stack %.3f Gb/s, median per-round ratio stack/kernel %.3f (min %.3f max %.3f)"
          % (statistics.median(k), statistics.median(s), statistics.median(ratios), min(ratios), max(ratios)))
PY
rm -f /tmp/wsb-server.$$ /tmp/wsb-stack.$$
