#!/usr/bin/env bash
# Single-stream throughput and CPU per GB, weft's user-space stack vs the Linux kernel's TCP, with
# offloads off and on, interleaved in rounds (root). Every sender streams for SECS seconds into the
# same kernel discard server (Python, 1 MiB recv_into, one thread per connection) in namespace B:
#   kernel, offloads on:  a Python sendall client in namespace A, veth A<->B at its defaults
#                         (tx checksum, SG, TSO, GSO on);
#   kernel, offloads off: the same client in namespace C, veth C<->B with tx/sg/tso/gso/gro off
#                         on both ends (lab/offloads.py: the ethtool -K ioctls);
#   weft tap [--no-vnet-hdr]:    `weft stack connect` on a TAP whose kernel end is in B; with
#                         IFF_VNET_HDR the kernel finishes the TCP checksums and cuts TSO
#                         super-frames, without it weft computes them and sends one MSS per frame;
#                         transmissions go in batches of 64 through io_uring (one io_uring_enter
#                         per batch) when weft was built with liburing;
#   weft tapw (off only): the TAP with --no-io-uring --no-tap-napi, one write() per frame: the
#                         reference for what the batching gives against tapx, in the same rounds;
#   weft tapx (off only): the TAP with --no-tap-napi: the kernel's side of every frame inside weft's
#                         writes (the default before session 10; tap_off now has the NAPI thread
#                         during bulk sends, where /sys allows it: see tapb);
#   weft tapn [--no-vnet-hdr]: the TAP with --tap-napi: IFF_NAPI with a NAPI thread, GRO off on
#                         the TAP, so the kernel's receive work for weft's frames runs in that thread
#                         (on the other core when the scheduler puts it there) instead of inside
#                         weft's writes; the thread's CPU (`napi_cpu_s` in weft's JSON) is added to
#                         the sender's;
#   weft tapb (on only):  the TAP with --tap-napi-bulk: IFF_NAPI, GRO off, the NAPI thread on only
#                         while weft writes full batches (TapDevice's bulk rule; with TSO it does
#                         not fire: super-frames are written alone). Without TSO that is weft's
#                         default, so tap_off has it;
#   weft tapt, tapbt (on only): the TAP with --no-tso (vnet headers, one MSS per frame, the
#                         kernel sums the checksums) with --no-tap-napi and with --tap-napi-bulk;
#   weft tapng (on only): tapn with GRO turned back on on the TAP (by this script, as soon as the
#                         TAP appears in B, before the connection starts): is GRO worth keeping
#                         with TSO super-frames?
#   weft packet [--no-vnet-hdr]: `weft stack connect --device packet` in namespace P on a veth P<->B
#                         (AF_PACKET: TPACKET_V3 receive ring, sendmmsg batches, PACKET_VNET_HDR);
#   weft packet_swgso:   `weft stack connect --device packet` (PACKET_VNET_HDR) in namespace Q on a
#                         veth Q<->B with tx/sg/tso/gso/gro off on both ends, as the kernel's off-run:
#                         the device does nothing, the kernel's software GSO cuts weft's super-frames
#                         and sums their checksums (what the kernel's own TCP gets on that veth);
#   weft packet_zc:      packet_swgso's run (same namespace, same veth) with `--zerocopy`: the client
#                         writes its pattern into the send ring in place on the ring's first lap only
#                         (as iperf3 -Z), so weft makes one copy of each byte (ring -> skb), as the
#                         kernel's sendmsg does (user buffer -> skb), instead of two;
#   kernel_zc:           the kernel's own zero-copy reference for packet_zc: the client in namespace C
#                         (the off-run's veth) sends a 16 MiB file over and over with os.sendfile (page
#                         references, no copy from the user), so "zc" is compared like with like too;
#   weft dpdk (when weft was built with DPDK): `--device dpdk` with a net_af_packet vdev in
#                         namespace D on a veth D<->B, no offloads (the PMD has none here; B's end
#                         sends full checksums), busy polling: compared with the kernel's off-run.
#   weft xdp (when weft was built with libxdp): `--device xdp` (AF_XDP copy mode, libxdp's default
#                         program in native mode) in namespace X on a veth X<->B, no offloads (B's
#                         end sends full checksums): compared with the kernel's off-run.
# Receive direction (weft as the receiver; not in the default SENDERS, as they add six runs a round:
# SENDERS="rx_kernel_on rx_kernel_off rx_tap_on rx_tap_off rx_packet_on rx_packet_swgso"). The
# sender is always the kernel: a Python client in namespace B (rx_kernel_*: in A or C) streaming
# 1 MiB sendalls for SECS seconds, then shutdown(SHUT_WR) and waiting for the receiver's FIN, so
# the throughput is the client's bytes over the client's time from connect to that FIN (every byte
# delivered and consumed), for kernel and weft receivers alike:
#   rx_kernel_on, rx_kernel_off: to the kernel discard server in B over the veth A<->B (offloads on)
#                         and C<->B (offloads off): the references;
#   rx_tap_on [rx_tap_off]: to `weft stack serve --json` on a TAP (vnet headers: the kernel's
#                         super-frames arrive whole, checksums unverified [--no-vnet-hdr: one MSS
#                         per frame, full checksums, read in io_uring batches of up to 64; with
#                         it weft's default NAPI bulk rule]);
#   rx_packet_on:         to `weft stack serve --device packet` in P on the default veth (the kernel
#                         end in B sends TSO/GSO super-frames; PACKET_VNET_HDR passes them whole);
#   rx_packet_swgso:      the same in Q on the offloads-off veth (MSS frames with full checksums).
# Receiver CPU: the kernel server thread's (RUSAGE_THREAD) or weft's whole process (/usr/bin/time,
# set-up and the wait for the client included) plus its NAPI thread's (`napi_cpu_s` in serve's
# JSON); plus the client's user+system. rx_tap_on and rx_packet_on are compared with rx_kernel_on,
# rx_tap_off and rx_packet_swgso with rx_kernel_off. REF= reruns the four weft rx senders too (a REF
# binary needs `serve --json`). The receiver's ACKs: the TCP segments the sender's namespace took
# in during the run (TcpInSegs in /proc/net/snmp; nothing else talks there then), per MiB.
# "offloads on" compares kernel-on with weft's checksum-offloaded runs, "offloads off" kernel-off
# with weft's --no-vnet-hdr runs; the ratio is taken within each round, then the median over rounds.
# CPU: the sender's user+system seconds (/usr/bin/time, the whole process, so weft's TAP set-up and
# the Python client's start-up are in it: a few tens of ms) plus the receiving thread's
# (RUSAGE_THREAD), per GB received. Softirq work done in ksoftirqd is in neither; most of it runs
# in the sender's system calls on this path (veth and tun hand frames to the receiver inline).
# Usage: bench/stack_vs_kernel.sh build/weft [rounds=5] [seconds=3]
# SENDERS="kernel_off packet_off" (environment) runs only those senders (default: all but rx_*).
# REF=path/to/another/weft (environment): each TAP sender (tap_on, tap_off, tapn_on, tapn_off) and
# the AF_PACKET senders packet_on and packet_swgso run again right after with that binary
# (ref_tap_on, ..., ref_packet_swgso), and a table gives this build / REF per round: an A/B of two
# builds interleaved in the same rounds, so the machine's load falls on both alike.
# CC=cubic (environment): the receive-direction kernel clients (rx_*) send with that congestion
# control (TCP_CONGESTION; root may pick any the kernel has); unset, the namespace's default,
# which new namespaces take from the host (on a host with bbr the kernel sender paces).
# RUNS=path (environment): the per-run lines are kept there (label, round, bytes, seconds, CPU, and
# for receive runs the ACKs and the receiving thread's id): bench/stack_cpu_split.py's input.
set -euo pipefail
WEFT=$(realpath "${1:?usage: $0 path/to/weft [rounds] [seconds]}")
ROUNDS=${2:-5}
SECS=${3:-3}
HERE=$(cd "$(dirname "$0")" && pwd)
A=wsb-a-$$ B=wsb-b-$$ C=wsb-c-$$ P=wsb-p-$$ D=wsb-d-$$ Q=wsb-q-$$ X=wsb-x-$$
OUT=/tmp/wsb-$$
mkdir -p "$OUT"
cleanup() {
  for ns in "$A" "$B" "$C" "$P" "$D" "$Q" "$X"; do
    for p in $(ip netns pids "$ns" 2>/dev/null); do kill "$p" 2>/dev/null || true; done
    ip netns del "$ns" 2>/dev/null || true
  done
  [[ -n ${RUNS:-} && -f $OUT/runs ]] && cp "$OUT/runs" "$RUNS"
  rm -rf "$OUT"
}
trap cleanup EXIT
for ns in "$A" "$B" "$C" "$P" "$D" "$Q" "$X"; do ip netns add "$ns"; ip -n "$ns" link set lo up; done
pair() {  # NS_LEFT IF_LEFT IF_B NET: veth NS_LEFT<->B, NET.1 on the left end unless NS is P, NET.2 in B
  ip link add "$2" netns "$1" type veth peer name "$3" netns "$B"
  [[ $1 == "$P" || $1 == "$D" || $1 == "$Q" || $1 == "$X" ]] || ip -n "$1" addr add "$4.1/24" dev "$2"
  ip -n "$B" addr add "$4.2/24" dev "$3"
  ip -n "$1" link set "$2" up; ip -n "$B" link set "$3" up
}
pair "$A" wsba wsbb1 10.251.1
pair "$C" wsbc wsbb2 10.254.1
pair "$P" wsbp wsbb3 10.253.1
ip netns exec "$P" sysctl -qw net.ipv6.conf.wsbp.disable_ipv6=1
pair "$Q" wsbq wsbb5 10.249.1
ip netns exec "$Q" sysctl -qw net.ipv6.conf.wsbq.disable_ipv6=1
# (the rx_* senders: the kernel end of weft's TAP is wsbr0 in B, 10.246.1.2; weft is 10.246.1.1)
# optional_link DEVICE "built without ..." NS IF IF_B NET: when weft was built with DEVICE, a veth
# NS<->B for it (no kernel address or IPv6 on NS's end; B's end sends full checksums, as these
# devices take no checksum offload); prints 1 if so, 0 if not.
optional_link() {
  if "$WEFT" stack ping 10.255.255.1 --device "$1" --ip 10.255.255.2/24 2>&1 | grep -q "$2"; then echo 0; return; fi
  pair "$3" "$4" "$5" "$6"
  ip netns exec "$3" sysctl -qw "net.ipv6.conf.$4.disable_ipv6=1"
  ip netns exec "$B" python3 "$HERE/../lab/offloads.py" "$5" off >/dev/null
  echo 1
}
DPDK=$(optional_link dpdk "built without DPDK" "$D" wsbd wsbb4 10.248.1)
XDP=$(optional_link xdp "built without AF_XDP" "$X" wsbx wsbb6 10.247.1)
echo "offloads (kernel, on):  $(ip netns exec "$A" python3 "$HERE/../lab/offloads.py" wsba) / $(ip netns exec "$B" python3 "$HERE/../lab/offloads.py" wsbb1)"
echo "offloads (kernel, off): $(ip netns exec "$C" python3 "$HERE/../lab/offloads.py" wsbc off) / $(ip netns exec "$B" python3 "$HERE/../lab/offloads.py" wsbb2 off)"
echo "offloads (weft swgso):  $(ip netns exec "$Q" python3 "$HERE/../lab/offloads.py" wsbq off) / $(ip netns exec "$B" python3 "$HERE/../lab/offloads.py" wsbb5 off)"
ip netns exec "$B" python3 -c '
import socket, threading, time, resource
ls = socket.socket(); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); ls.bind(("0.0.0.0", 9000)); ls.listen(8)
def cpu():
    r = resource.getrusage(resource.RUSAGE_THREAD); return r.ru_utime + r.ru_stime
def serve(c, a):
    n = 0; t0 = time.time(); c0 = cpu(); buf = bytearray(1 << 20)
    while True:
        k = c.recv_into(buf)
        if not k: break
        n += k
    dt = time.time() - t0
    print("%s %d %.3f %.3f %d" % (a[0], n, dt, cpu() - c0, threading.get_native_id()), flush=True)
    c.close()  # the FIN back: the client may finish at once
while True:
    threading.Thread(target=serve, args=ls.accept(), daemon=True).start()
' >"$OUT/server" &
sleep 0.5
KCLIENT='
import socket, sys, time
s = socket.create_connection((sys.argv[1], 9000)); b = bytes(1 << 20); end = time.time() + float(sys.argv[2])
while time.time() < end: s.sendall(b)
s.close()'
KZCLIENT='
import os, socket, sys, time
f = os.open(sys.argv[3], os.O_RDONLY); size = os.fstat(f).st_size
s = socket.create_connection((sys.argv[1], 9000)); end = time.time() + float(sys.argv[2])
while time.time() < end:
    off = 0
    while off < size: off += os.sendfile(s.fileno(), f, off, size - off)
s.close()'
# The receive direction's client: bytes and seconds until the receiver's FIN came back.
KRXCLIENT='
import os, socket, sys, time
for _ in range(100):
    try:
        s = socket.create_connection((sys.argv[1], int(sys.argv[3])), timeout=5); break
    except OSError:
        time.sleep(0.05)
if os.environ.get("CC"): s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, os.environ["CC"].encode())
s.settimeout(None); t0 = time.time(); end = t0 + float(sys.argv[2])
b = bytes(1 << 20); n = 0
while time.time() < end: s.sendall(b); n += len(b)
s.shutdown(socket.SHUT_WR)
while s.recv(65536): pass
print("%d %.3f" % (n, time.time() - t0), flush=True)'
head -c $((16 << 20)) /dev/zero | tr "\\0" "\\7" >"$OUT/zc-file"  # 16 MiB, read once into the page cache
TIME=(/usr/bin/time -f "%U %S" -o "$OUT/cpu")
SENDERS=${SENDERS:-kernel_on kernel_off tap_on tap_off tapx_off tapw_off tapn_on tapng_on tapb_on tapt_on tapbt_on tapn_off packet_on packet_off packet_swgso packet_zc kernel_zc dpdk_off xdp_off}
want() { [[ " $SENDERS " == *" $1 "* ]]; }
lines=0
record() {  # LABEL ROUND: waits for the server's line of the run that just ended
  for _ in $(seq 100); do (($(wc -l <"$OUT/server") > lines)) && break; sleep 0.05; done
  if (($(wc -l <"$OUT/server") == lines)); then echo "round $2: $1 reached no server (left out)"; return; fi
  lines=$(wc -l <"$OUT/server")
  echo "$1 $2 $(tail -1 "$OUT/server" | cut -d' ' -f1-4) $(tail -1 "$OUT/cpu")" >>"$OUT/runs"
}
REF=${REF:+$(realpath "$REF")}
weft_tap() {  # ROUND [options] (BIN=path: another weft binary; GRO=on: GRO back on on the TAP)
  local r=$1 pid; shift
  "${TIME[@]}" "${BIN:-$WEFT}" stack connect 10.252.1.1 --port 9000 -t "$SECS" --json --tap wsbt0 --ip 10.252.1.2/24 \
    --kernel-ip 10.252.1.1/24 --netns "$B" "$@" 2>/dev/null >"$OUT/json" &
  pid=$!
  if [[ ${GRO:-} == on ]]; then
    # weft moves the TAP into B after turning GRO off, and connects after it has configured it.
    for _ in $(seq 200); do ip -n "$B" link show wsbt0 >/dev/null 2>&1 && break; sleep 0.005; done
    ip netns exec "$B" python3 "$HERE/../lab/offloads.py" wsbt0 on gro >"$OUT/gro" 2>&1 || true
    grep -q 'gro 1' "$OUT/gro" || echo "round $r: GRO not on: $(cat "$OUT/gro")"
  fi
  wait "$pid" || true
  # A NAPI thread's CPU (--tap-napi, --tap-napi-bulk) counts as the sender's system time; how often
  # the bulk rule turned the thread on goes to napi_log.
  python3 - "$OUT/json" "$OUT/cpu" "$OUT/napi_log" "$r $*" <<'PY' || true
import json, sys
try:
    tap = json.load(open(sys.argv[1])).get("tap", {})
except ValueError:
    tap = {}
napi = tap.get("napi_cpu_s", 0)
u, s = open(sys.argv[2]).read().split()[:2]
open(sys.argv[2], "w").write("%s %.2f\n" % (u, float(s) + napi))
if "napi_on" in tap and "--tap-napi" not in sys.argv[4].split():
    open(sys.argv[3], "a").write("round %s: NAPI thread on %d times, its CPU %.2f s\n" % (sys.argv[4], tap["napi_on"], napi))
PY
}
weft_packet() {  # ROUND [options] (BIN=path: another weft binary)
  local r=$1; shift
  ip netns exec "$P" "${TIME[@]}" "${BIN:-$WEFT}" stack connect 10.253.1.2 --port 9000 -t "$SECS" --json --device packet \
    --ifname wsbp --ip 10.253.1.1/24 "$@" 2>/dev/null >"$OUT/json" || true
}
weft_swgso() {  # ROUND [options] (BIN=path: another weft binary)
  local r=$1; shift
  ip netns exec "$Q" "${TIME[@]}" "${BIN:-$WEFT}" stack connect 10.249.1.2 --port 9000 -t "$SECS" --json --device packet \
    --ifname wsbq --ip 10.249.1.1/24 "$@" 2>/dev/null >"$OUT/json" || true
}
# in_segs NS: the TCP segments NS's kernel has received so far (TcpInSegs). Around a receive run, in
# the sender's namespace (which holds no other connection then): the ACKs the receiver sent.
in_segs() { ip netns exec "$1" awk '/^Tcp:/ && !h {for (i = 1; i <= NF; i++) if ($i == "InSegs") c = i; h = 1; next} /^Tcp:/ {print $c}' /proc/net/snmp; }
# rx_record LABEL ROUND RECEIVER_CPU ACKS [TID]: one line of runs from the client's output (rx_client), CPU,
# the segments the sender received (the receiver's ACKs) and the receiving thread's id (for
# bench/stack_cpu_split.py).
rx_record() {
  local n dt
  read -r n dt <"$OUT/rx_client" || { echo "round $2: $1: the client failed (left out)"; return; }
  ((n > 0)) || { echo "round $2: $1: the client sent nothing (left out)"; return; }
  echo "$1 $2 client $n $dt $3 $(tail -1 "$OUT/cpu") ${4:-0} ${5:-}" >>"$OUT/runs"
}
rx_kernel() {  # LABEL ROUND NS SERVER_IP: the client to the kernel discard server in B
  local s0
  : >"$OUT/rx_client"
  s0=$(in_segs "$3")
  ip netns exec "$3" "${TIME[@]}" python3 -c "$KRXCLIENT" "$4" "$SECS" 9000 >"$OUT/rx_client" || true
  s0=$(($(in_segs "$3") - s0))
  for _ in $(seq 100); do (($(wc -l <"$OUT/server") > lines)) && break; sleep 0.05; done
  if (($(wc -l <"$OUT/server") == lines)); then echo "round $2: $1 reached no server (left out)"; return; fi
  lines=$(wc -l <"$OUT/server")
  rx_record "$1" "$2" "$(tail -1 "$OUT/server" | cut -d' ' -f4)" "$s0" "$(tail -1 "$OUT/server" | cut -d' ' -f5)"
}
# rx_weft LABEL ROUND IP NS weft-options...: `weft stack serve --json` (NS: run it there; "" for the
# TAP, which weft moves into B itself), the client in B; weft leaves on SIGTERM after the client's
# FIN came back. PERF=path (environment): `perf record -g` on weft for the client's run.
rx_weft() {
  local label=$1 r=$2 ip=$3 ns=$4 tpid wpid ppid="" s0; shift 4
  : >"$OUT/rx_client"; : >"$OUT/rx_err"
  # weft's MAC is new every run: B must not send to the last run's (no ARP until its entry is stale).
  ip -n "$B" neigh flush to "$ip" 2>/dev/null || true
  ${ns:+ip netns exec "$ns"} /usr/bin/time -f "%U %S" -o "$OUT/rx_cpu" "${BIN:-$WEFT}" stack serve --port 9000 --json \
    "$@" >"$OUT/json" 2>"$OUT/rx_err" &
  tpid=$!
  for _ in $(seq 200); do grep -q "serving on" "$OUT/rx_err" && break; sleep 0.025; done
  wpid=$(pgrep -P "$tpid" | head -1 || true)
  if [[ -n ${PERF:-} && -n $wpid ]]; then perf record -q -g -e cpu-clock -p "$wpid" -o "$PERF.$label.$r" 2>/dev/null & ppid=$!; fi
  s0=$(in_segs "$B")
  ip netns exec "$B" "${TIME[@]}" python3 -c "$KRXCLIENT" "$ip" "$SECS" 9000 >"$OUT/rx_client" || true
  s0=$(($(in_segs "$B") - s0))
  [[ -n $ppid ]] && { kill -INT "$ppid" 2>/dev/null || true; wait "$ppid" 2>/dev/null || true; }
  [[ -n $wpid ]] && kill -TERM "$wpid" 2>/dev/null
  wait "$tpid" || true
  grep -q "serving on" "$OUT/rx_err" || { echo "round $r: $label: weft did not serve: $(head -3 "$OUT/rx_err")"; return; }
  rx_record "$label" "$r" "$(python3 - "$OUT/json" "$OUT/rx_cpu" <<'PY'
import json, sys
try:
    tap = json.load(open(sys.argv[1])).get("tap", {})
except ValueError:
    tap = {}
u, s = open(sys.argv[2]).read().split()[:2]
print("%.2f" % (float(u) + float(s) + tap.get("napi_cpu_s", 0)))
PY
)" "$s0" "$wpid"
}
rx_tap() { rx_weft "$1" "$2" 10.246.1.1 "" --tap wsbr0 --ip 10.246.1.1/24 --kernel-ip 10.246.1.2/24 --netns "$B" "${@:3}"; }
rx_pkt() { rx_weft "$1" "$2" "$3" "$4" --device packet --ifname "$5" --ip "$3/24" "${@:6}"; }
echo "# $(date -u +%FT%TZ), $ROUNDS rounds of ${SECS} s, load $(cut -d' ' -f1-3 /proc/loadavg), kernel congestion control ${CC:-$(ip netns exec "$B" sysctl -n net.ipv4.tcp_congestion_control)}"
: >"$OUT/runs"
for r in $(seq "$ROUNDS"); do
  if want kernel_on; then ip netns exec "$A" "${TIME[@]}" python3 -c "$KCLIENT" 10.251.1.2 "$SECS"; record kernel_on "$r"; fi
  if want kernel_off; then ip netns exec "$C" "${TIME[@]}" python3 -c "$KCLIENT" 10.254.1.2 "$SECS"; record kernel_off "$r"; fi
  if want tap_on; then weft_tap "$r"; record tap_on "$r"; fi
  if want tap_on && [[ -n $REF ]]; then BIN=$REF weft_tap "$r"; record ref_tap_on "$r"; fi
  if want tap_off; then weft_tap "$r" --no-vnet-hdr; record tap_off "$r"; fi
  if want tap_off && [[ -n $REF ]]; then BIN=$REF weft_tap "$r" --no-vnet-hdr; record ref_tap_off "$r"; fi
  if want tapx_off; then weft_tap "$r" --no-vnet-hdr --no-tap-napi; record tapx_off "$r"; fi
  if want tapw_off; then weft_tap "$r" --no-vnet-hdr --no-io-uring --no-tap-napi; record tapw_off "$r"; fi
  if want tapn_on; then weft_tap "$r" --tap-napi; record tapn_on "$r"; fi
  if want tapn_on && [[ -n $REF ]]; then BIN=$REF weft_tap "$r" --tap-napi; record ref_tapn_on "$r"; fi
  if want tapng_on; then GRO=on weft_tap "$r" --tap-napi; record tapng_on "$r"; fi
  if want tapb_on; then weft_tap "$r" --tap-napi-bulk; record tapb_on "$r"; fi
  if want tapt_on; then weft_tap "$r" --no-tso --no-tap-napi; record tapt_on "$r"; fi
  if want tapbt_on; then weft_tap "$r" --no-tso --tap-napi-bulk; record tapbt_on "$r"; fi
  if want tapn_off; then weft_tap "$r" --no-vnet-hdr --tap-napi; record tapn_off "$r"; fi
  if want tapn_off && [[ -n $REF ]]; then BIN=$REF weft_tap "$r" --no-vnet-hdr --tap-napi; record ref_tapn_off "$r"; fi
  if want packet_on; then weft_packet "$r"; record packet_on "$r"; fi
  if want packet_on && [[ -n $REF ]]; then BIN=$REF weft_packet "$r"; record ref_packet_on "$r"; fi
  if want packet_off; then weft_packet "$r" --no-vnet-hdr; record packet_off "$r"; fi
  if want packet_swgso; then weft_swgso "$r"; record packet_swgso "$r"; fi
  if want packet_swgso && [[ -n $REF ]]; then BIN=$REF weft_swgso "$r"; record ref_packet_swgso "$r"; fi
  if want packet_zc; then weft_swgso "$r" --zerocopy; record packet_zc "$r"; fi
  if want kernel_zc; then ip netns exec "$C" "${TIME[@]}" python3 -c "$KZCLIENT" 10.254.1.2 "$SECS" "$OUT/zc-file"; record kernel_zc "$r"; fi
  if want rx_kernel_on; then rx_kernel rx_kernel_on "$r" "$A" 10.251.1.2; fi
  if want rx_kernel_off; then rx_kernel rx_kernel_off "$r" "$C" 10.254.1.2; fi
  if want rx_tap_on; then rx_tap rx_tap_on "$r"; fi
  if want rx_tap_on && [[ -n $REF ]]; then BIN=$REF rx_tap ref_rx_tap_on "$r"; fi
  if want rx_tap_off; then rx_tap rx_tap_off "$r" --no-vnet-hdr; fi
  if want rx_tap_off && [[ -n $REF ]]; then BIN=$REF rx_tap ref_rx_tap_off "$r" --no-vnet-hdr; fi
  if want rx_packet_on; then rx_pkt rx_packet_on "$r" 10.253.1.1 "$P" wsbp; fi
  if want rx_packet_on && [[ -n $REF ]]; then BIN=$REF rx_pkt ref_rx_packet_on "$r" 10.253.1.1 "$P" wsbp; fi
  if want rx_packet_swgso; then rx_pkt rx_packet_swgso "$r" 10.249.1.1 "$Q" wsbq; fi
  if want rx_packet_swgso && [[ -n $REF ]]; then BIN=$REF rx_pkt ref_rx_packet_swgso "$r" 10.249.1.1 "$Q" wsbq; fi
  if ((DPDK)) && want dpdk_off; then
    ip netns exec "$D" "${TIME[@]}" "$WEFT" stack connect 10.248.1.2 --port 9000 -t "$SECS" --json --device dpdk \
      --dpdk-vdev net_af_packet0,iface=wsbd --ip 10.248.1.1/24 2>/dev/null >"$OUT/json" || true
    record dpdk_off "$r"
  fi
  if ((XDP)) && want xdp_off; then
    ip netns exec "$X" "${TIME[@]}" "$WEFT" stack connect 10.247.1.2 --port 9000 -t "$SECS" --json --device xdp \
      --ifname wsbx --ip 10.247.1.1/24 2>/dev/null >"$OUT/json" || true
    record xdp_off "$r"
  fi
done
echo "# load at the end $(cut -d' ' -f1-3 /proc/loadavg)"
[[ -f $OUT/napi_log ]] && cat "$OUT/napi_log"
python3 - "$OUT/runs" <<'PY'
import sys, statistics as st
runs, acks = {}, {}
for line in open(sys.argv[1]):
    label, rnd, src, n, dt, srv_cpu, cu, cs = line.split()[:8]
    n, dt = int(n), float(dt)
    if len(line.split()) > 8 and n:  # receive runs: the receiver's ACKs per MiB received
        acks[(label, int(rnd))] = int(line.split()[8]) / (n / 2**20)
    runs[(label, int(rnd))] = (n * 8 / dt / 1e9, (float(srv_cpu) + float(cu) + float(cs)) / (n / 1e9) if n else float("nan"),
                               float(cu) + float(cs), float(srv_cpu))
rounds = sorted({r for _, r in runs})
labels = [l for l in ["kernel_on", "kernel_off", "tap_on", "ref_tap_on", "tap_off", "ref_tap_off", "tapx_off", "tapw_off",
                     "tapn_on", "ref_tapn_on", "tapng_on", "tapb_on", "tapt_on", "tapbt_on", "tapn_off", "ref_tapn_off",
                     "packet_on", "ref_packet_on", "packet_off", "packet_swgso", "ref_packet_swgso", "packet_zc", "kernel_zc", "dpdk_off",
                     "xdp_off", "rx_kernel_on", "rx_kernel_off", "rx_tap_on", "ref_rx_tap_on", "rx_tap_off", "ref_rx_tap_off",
                     "rx_packet_on", "ref_rx_packet_on", "rx_packet_swgso", "ref_rx_packet_swgso"]
          if any(k == l for k, _ in runs)]
med = lambda xs: st.median(xs) if xs else float("nan")
def ratios(a, b):  # per round, a's throughput and CPU per GB over b's, rounds where both ran
    both = [r for r in rounds if (a, r) in runs and (b, r) in runs]
    return ([runs[(a, r)][0] / runs[(b, r)][0] for r in both if runs[(b, r)][0] > 0],
            [runs[(a, r)][1] / runs[(b, r)][1] for r in both])
print("| sender | Gb/s per round | median Gb/s | CPU s/GB per round (sender + receiver) | median CPU s/GB |")
print("|---|---|---|---|---|")
for l in labels:
    g = [runs[(l, r)][0] for r in rounds if (l, r) in runs]
    c = [runs[(l, r)][1] for r in rounds if (l, r) in runs]
    print("| %s | %s | %.3f | %s | %.2f |" % (l, " ".join("%.2f" % x for x in g), med(g), " ".join("%.2f" % x for x in c), med(c)))
if any(k.startswith("kernel_") for k, _ in runs):  # the sending table (an rx-only run has none)
    print()
    print("| weft / kernel | offloads | throughput ratio per round | median | min | max | CPU/GB ratio (median of rounds) |")
    print("|---|---|---|---|---|---|---|")
for dev, mode in [(d, m) for d in ("tap", "ref_tap", "tapx", "tapw", "tapn", "ref_tapn", "tapng", "tapb", "tapt", "tapbt",
                                    "packet", "ref_packet", "dpdk", "xdp")
                                  for m in ("off", "on")] + [("packet", "swgso"), ("ref_packet", "swgso"), ("packet", "zc")]:
    k, w = "kernel_" + ("on" if mode == "on" else "off"), dev + "_" + mode
    rs, cs = ratios(w, k)
    if rs:
        print("| %s | %s | %s | %.2f | %.2f | %.2f | %.2f |" % (dev, mode, " ".join("%.2f" % x for x in rs), med(rs), min(rs), max(rs), med(cs)))
# Zero-copy against zero-copy: weft's --zerocopy against the kernel's sendfile on the same veth.
rs, cs = ratios("packet_zc", "kernel_zc")
if rs:
    print("| packet | zc / kernel_zc | %s | %.2f | %.2f | %.2f | %.2f |" % (" ".join("%.2f" % x for x in rs), med(rs), min(rs), max(rs), med(cs)))
# Weft receiving, against the kernel receiving over the same kind of path in the same round.
rx = [(w, k) for w, k in (("rx_tap_on", "rx_kernel_on"), ("ref_rx_tap_on", "rx_kernel_on"), ("rx_packet_on", "rx_kernel_on"),
                          ("ref_rx_packet_on", "rx_kernel_on"), ("rx_tap_off", "rx_kernel_off"), ("ref_rx_tap_off", "rx_kernel_off"),
                          ("rx_packet_swgso", "rx_kernel_off"), ("ref_rx_packet_swgso", "rx_kernel_off"))
      if any(l == w for l, _ in runs) and any(l == k for l, _ in runs)]
if rx:
    print()
    print("| weft receiving / kernel receiving | throughput ratio per round | median | min | max | CPU/GB ratio per round | median |")
    print("|---|---|---|---|---|---|---|")
    for w, k in rx:
        rs, cs = ratios(w, k)
        if rs:
            print("| %s / %s | %s | %.2f | %.2f | %.2f | %s | %.2f |" % (w, k, " ".join("%.2f" % x for x in rs), med(rs), min(rs), max(rs),
                                                                  " ".join("%.2f" % x for x in cs), med(cs)))
    print()
    print("| receiver | ACKs (segments the sender got) per MiB, per round | median |")
    print("|---|---|---|")
    for l in labels:
        a = [acks[(l, r)] for r in rounds if (l, r) in acks]
        if a:
            print("| %s | %s | %.1f |" % (l, " ".join("%.1f" % x for x in a), med(a)))
if any(k == "packet_zc" for k, _ in runs) and any(k == "packet_swgso" for k, _ in runs):
    rs, cs = ratios("packet_zc", "packet_swgso")
    print()
    print("| packet_zc / packet_swgso | throughput ratio per round | median | CPU/GB ratio per round | median |")
    print("|---|---|---|---|---|")
    print("| --zerocopy / default | %s | %.3f | %s | %.3f |" % (" ".join("%.2f" % x for x in rs), med(rs),
                                                          " ".join("%.2f" % x for x in cs), med(cs)))
pairs = [(w, b) for w, b in (("tapn_on", "tap_on"), ("tapng_on", "tap_on"), ("tapng_on", "tapn_on"), ("tapb_on", "tap_on"), ("tapbt_on", "tapt_on"),
                                  ("tap_off", "tapx_off"), ("tapn_off", "tapx_off"), ("tap_off", "tapn_off"))
         if any(k == w for k, _ in runs) and any(k == b for k, _ in runs)]
if pairs:  # what the NAPI thread changes, within each round
    print()
    print("| TAP A / B | throughput ratio per round | median | CPU/GB ratio per round | median |")
    print("|---|---|---|---|---|")
    for w, b in pairs:
        rs, cs = ratios(w, b)
        if rs:
            print("| %s / %s | %s | %.2f | %s | %.2f |" % (w, b, " ".join("%.2f" % x for x in rs), med(rs),
                                                          " ".join("%.2f" % x for x in cs), med(cs)))
if any(k.startswith("ref_") for k, _ in runs):
    print()
    print("| this build / REF | throughput ratio per round | median | min | max | CPU/GB ratio per round | median |")
    print("|---|---|---|---|---|---|---|")
    for w in ("tap_on", "tap_off", "tapn_on", "tapn_off", "packet_on", "packet_swgso", "rx_tap_on", "rx_tap_off", "rx_packet_on",
              "rx_packet_swgso"):
        k = "ref_" + w
        rs, cs = ratios(w, k)
        if rs:
            print("| %s | %s | %.3f | %.2f | %.2f | %s | %.3f |" % (w, " ".join("%.2f" % x for x in rs), med(rs), min(rs), max(rs),
                                                                " ".join("%.2f" % x for x in cs), med(cs)))
PY
