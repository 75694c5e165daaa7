#!/usr/bin/env bash
# SYN flood against `weft stack echo` (issue 26): the stack on an AF_PACKET veth end in namespace
# P (lab/stack_netns.sh); the router namespace R sends COUNT SYNs with spoofed sources
# (198.18.0.0/15, random ports, Linux's SYN options) from a raw socket as fast as Python goes,
# while a kernel client in K connects to the stack's echo port again and again and has 16 bytes
# echoed each time. Prints the flood's rate, the slowest and median connect+echo during the flood,
# how many completed, and weft's resident memory before and after (VmRSS, VmHWM).
# Usage (root): bench/stack_synflood.sh build/weft [COUNT=100000]
set -euo pipefail
WEFT=$(readlink -f "${1:?usage: $0 path/to/weft [count]}")
COUNT=${2:-100000}
[[ $(id -u) == 0 ]] || { echo "needs root"; exit 1; }
. "$(dirname "$0")/../lab/stack_netns.sh"
stack_lab_init syn
P=wst-syn-p-$$
stack_lab_add_packet_link "$P"
stack_lab_bg ip netns exec "$P" "$WEFT" stack echo --device packet --ifname "$PKT_IF" --ip "$STACK_IP/24" \
  --gateway "$GW_IP" -t 600
stack_lab_wait_ping "$STACK_IP" 50
pid=$(pgrep -n -f "stack echo --device packet --ifname $PKT_IF")
mem() { grep -E 'VmRSS|VmHWM' "/proc/$pid/status" | awk '{printf "%s %s kB  ", $1, $2}'; echo; }
echo "weft before: $(mem)"
out=$(mktemp)
nsx python3 - "$STACK_IP" 12 > "$out" <<'PY' &
import socket, sys, time
ip, secs = sys.argv[1], float(sys.argv[2])
t_end = time.time() + secs
times = []
while time.time() < t_end:
    t0 = time.time()
    try:
        s = socket.create_connection((ip, 7), timeout=5)
        s.sendall(b"0123456789abcdef")
        got = b""
        while len(got) < 16:
            b = s.recv(16 - len(got))
            if not b:
                break
            got += b
        s.close()
        times.append((t0, time.time() - t0, got == b"0123456789abcdef"))
    except OSError:
        times.append((t0, time.time() - t0, False))
    time.sleep(0.02)
for t0, d, ok in times:
    print(f"{t0:.6f} {d:.6f} {int(ok)}")
PY
client=$!
sleep 1
flood=$(rx python3 - "$STACK_IP" "$COUNT" <<'PY'
import random, socket, struct, sys, time
dst, n = sys.argv[1], int(sys.argv[2])
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
dst_b = socket.inet_aton(dst)
def csum(b):
    if len(b) % 2: b += b"\0"
    x = sum(struct.unpack(f"!{len(b)//2}H", b))
    while x >> 16: x = (x & 0xffff) + (x >> 16)
    return ~x & 0xffff
# MSS 1460, SACK-permitted, timestamps, NOP, window scale 7 (Linux's SYN).
opts = struct.pack("!BBHBBBBII", 2, 4, 1460, 4, 2, 8, 10, 1, 0) + struct.pack("!BBBB", 1, 3, 3, 7)
t0 = time.time()
for k in range(n):
    src = struct.pack("!I", 0xc6120000 | random.getrandbits(17))
    sport = random.randint(1024, 65535)
    tcp = struct.pack("!HHIIBBHHH", sport, 7, random.getrandbits(32), 0, (5 + len(opts) // 4) << 4, 0x02, 64240, 0, 0) + opts
    c = csum(src + dst_b + struct.pack("!BBH", 0, 6, len(tcp)) + tcp)
    tcp = tcp[:16] + struct.pack("!H", c) + tcp[18:]
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), k & 0xffff, 0, 64, 6, 0, src, dst_b) + tcp
    s.sendto(ip, (dst, 0))
t1 = time.time()
print(f"{t0:.6f} {t1:.6f} {n / (t1 - t0):.0f}")
PY
)
wait "$client" || true
read -r f0 f1 rate <<<"$flood"
echo "flood: $COUNT spoofed SYNs in $(python3 -c "print(round($f1 - $f0, 2))") s ($rate a second)"
python3 - "$f0" "$f1" "$out" <<'PY'
import sys, statistics
f0, f1 = float(sys.argv[1]), float(sys.argv[2])
rows = [tuple(map(float, l.split())) for l in open(sys.argv[3]) if l.strip()]
during = [(d, ok) for t0, d, ok in rows if f0 <= t0 <= f1]
after = [(d, ok) for t0, d, ok in rows if t0 > f1]
def show(name, xs):
    if not xs:
        print(f"{name}: no connections"); return
    ds = [d for d, _ in xs]
    print(f"{name}: {len(xs)} connect+echo, {sum(ok for _, ok in xs):.0f} echoed right, median {statistics.median(ds)*1e3:.1f} ms, max {max(ds)*1e3:.1f} ms")
show("during the flood", during)
show("after the flood", after)
PY
echo "weft after: $(mem)"
rm -f "$out"
