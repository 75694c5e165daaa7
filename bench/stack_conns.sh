#!/usr/bin/env bash
# 10,000 concurrent connections and what they cost (issue 13), two ways:
#  1. in memory: two weft stacks joined by a pipe on a virtual clock
#     (stack_tests TcpTimers.TenThousandConnectionsHeldUsedAndClosed prints the figures);
#  2. against the kernel (root): a Python client in namespace K opens CONNS connections (in
#     batches of 500) through the router namespace R to `weft stack echo` on its TAP
#     (lab/stack_netns.sh), holds them, then sends one byte on each and checks it comes back.
#     weft's resident memory (VmRSS) is read before, with the connections idle, and after each
#     carried its byte (its rings are then allocated: --buffer, 4 MiB by default, is virtual
#     memory until touched).
# Usage: bench/stack_conns.sh build [conns=10000] [hold_s=5] [buffer=4194304]
set -euo pipefail
BUILD=${1:?usage: $0 build-dir [conns] [hold_s] [buffer]}
CONNS=${2:-10000}
HOLD=${3:-5}
BUFFER=${4:-4194304}
echo "# $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "## in memory"
"$BUILD"/tests/stack/stack_tests --gtest_filter='TcpTimers.TenThousand*' | grep -E '^scale:|OK|FAILED'
[[ $(id -u) == 0 ]] || { echo "against the kernel: needs root"; exit 0; }
echo "## against the kernel"
. "$(dirname "$0")/../lab/stack_netns.sh"
stack_lab_init cn
tmp=$(mktemp -d)
trap 'stack_lab_cleanup; rm -rf "$tmp"' EXIT
"$BUILD"/weft stack echo --port 7 --tap "$TAP" --ip "$STACK_IP/24" --gateway "$GW_IP" --kernel-ip "$GW_IP/24" \
  --netns "$R" --buffer "$BUFFER" 2>"$tmp/weft.err" &
WPID=$!
stack_lab_pids+=("$WPID")
for _ in $(seq 100); do rx ip link show "$TAP" 2>/dev/null | grep -q UP && break; sleep 0.1; done
sleep 0.5
rss() { awk '/VmRSS/ {print $2}' "/proc/$WPID/status"; }
mkfifo "$tmp/ctl" "$tmp/ack"
cat >"$tmp/client.py" <<'PY'
import selectors, socket, sys, time
host, n = sys.argv[1], int(sys.argv[2])
socks, t0 = [], time.time()
for start in range(0, n, 500):
    batch = []
    for _ in range(min(500, n - start)):
        s = socket.socket(); s.setblocking(False); s.connect_ex((host, 7)); batch.append(s)
    sel = selectors.DefaultSelector()
    for s in batch: sel.register(s, selectors.EVENT_WRITE)
    left, deadline = len(batch), time.time() + 60
    while left and time.time() < deadline:
        for key, _ in sel.select(1):
            sel.unregister(key.fileobj); left -= 1
    sel.close()
    bad = [s for s in batch if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) != 0]
    if left or bad: print("connect failed: %d pending %d errors at %d" % (left, len(bad), start), flush=True); sys.exit(1)
    socks += batch
print("connected %d in %.1f s" % (len(socks), time.time() - t0), flush=True)
sys.stdin.readline()  # the script read weft's memory with the connections idle
for i, s in enumerate(socks): s.send(bytes([i & 255]))
got, sel = 0, selectors.DefaultSelector()
for i, s in enumerate(socks): sel.register(s, selectors.EVENT_READ, i)
deadline = time.time() + 60
while got < len(socks) and time.time() < deadline:
    for key, _ in sel.select(1):
        b = key.fileobj.recv(16)
        if b != bytes([key.data & 255]): print("bad echo on %d: %r" % (key.data, b), flush=True); sys.exit(1)
        sel.unregister(key.fileobj); got += 1
print("echoed %d of %d" % (got, len(socks)), flush=True)
sys.stdin.readline()
for s in socks: s.close()
print("closed", flush=True)
PY
# The client reads its go-ahead lines from ctl and reports on ack.
nsx bash -c "ulimit -n $((CONNS + 1000)); exec python3 $tmp/client.py $STACK_IP $CONNS" <"$tmp/ctl" >"$tmp/ack" &
CLIENT=$!
exec 3>"$tmp/ctl" 4<"$tmp/ack"
rss0=$(rss)
read -r line <&4; echo "$line"
[[ $line == connected* ]] || exit 1
sleep "$HOLD"
rss1=$(rss)
echo >&3
read -r line <&4; echo "$line"
sleep 1
rss2=$(rss)
echo >&3
read -r line <&4; echo "$line"
wait "$CLIENT" || true
python3 - "$CONNS" "$rss0" "$rss1" "$rss2" "$BUFFER" <<'PY'
import sys
n, r0, r1, r2, buf = (int(x) for x in sys.argv[1:])
print("weft VmRSS: %d KiB before, %d KiB with %d idle connections held (%.0f B each, %.1f MiB for 10,000), "
      "%d KiB after each echoed one byte (%.0f B each, %.1f MiB for 10,000; --buffer %d)"
      % (r0, r1, n, (r1 - r0) * 1024 / n, (r1 - r0) / 1024 * 10000 / n, r2, (r2 - r0) * 1024 / n,
         (r2 - r0) / 1024 * 10000 / n, buf))
PY
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
