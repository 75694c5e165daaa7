#!/usr/bin/env bash
# Lab test (root): weft's user-space stack on a TAP against the Linux kernel's TCP. The TAP's kernel
# end sits in a router namespace R (forwarding on); the kernel peer sits in namespace K behind a
# veth pair to R, so the stack reaches it through its gateway. Checks: the stack answers ping;
# `weft stack echo` echoes UDP and a closed UDP port is refused (ICMP port unreachable); as a
# server (weft stack echo) and as a client (weft stack connect --echo-check) data comes back
# byte-exact at 0, 0.1, 1, 5 and 10% loss, made by nftables `numgen random` in R's forward chain
# in BOTH directions (silent to both senders: a drop in a sender's own output hook would be
# reported to it); malformed frames injected from R (truncated, bad checksums, a SYN flood) do not
# stop the stack answering; with a 1000-byte MTU on R's route to K the stack as client learns the
# path MTU from R's "fragmentation needed" (RFC 1191); as a server with TSO it takes the kernel's
# TCP super-frames whole (echo byte-exact, counted by serve --json), and without vnet headers MSS
# frames read in io_uring batches (the same checks). The full 100 MiB grid is bench/stack_interop.sh.
# Cleans up (processes, namespaces) on any exit. The namespaces come from lab/stack_netns.sh,
# which bench/stack_interop.sh shares.
set -euo pipefail
WEFT=${1:?usage: $0 path/to/weft}
[[ $(id -u) == 0 ]] || { echo "SKIP: needs root"; exit 0; }
. "$(dirname "$0")/../../lab/stack_netns.sh"
stack_lab_init lab
NS=$K
set_loss() { stack_lab_set_loss "$1" "$STACK_IP"; }  # percent, each direction, in R's forward chain

wait_tap() {
  for _ in $(seq 100); do rx ip link show "$TAP" >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "FAIL: $TAP never appeared in $R"; return 1
}

bytes_for() { case $1 in 0|0.1|1) echo 2097152 ;; *) echo 524288 ;; esac; }
fail=0

echo "== the stack as server (weft stack echo), kernel client in $NS"
# --no-tso: the loss below counts segments (one TSO super-frame would be one drop in R's forward
# hook; the kernel peer sends single segments, gso_max_segs 1). TSO is checked by stack_packet_lab.
stack_lab_bg "$WEFT" stack echo --tap "$TAP" --ip "$STACK_IP/24" --gateway "$GW_IP" --kernel-ip "$GW_IP/24" --netns "$R" -t 600 --no-tso
wait_tap
stack_lab_wait_ping "$STACK_IP" || fail=1
# UDP sockets: the echo answers datagrams on its port; a closed port draws ICMP port unreachable,
# which the kernel turns into ECONNREFUSED on a connected UDP socket.
nsx python3 - "$STACK_IP" <<'PY' || { echo "FAIL: UDP"; fail=1; }
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(3); s.connect((sys.argv[1], 7))
for n in (1, 1000, 1472):
    s.send((bytes(range(256)) * 6)[:n])
    assert s.recv(4096) == (bytes(range(256)) * 6)[:n], n
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.settimeout(3); u.connect((sys.argv[1], 9))
u.send(b"?")
try:
    u.recv(16); print("UDP: closed port answered?"); sys.exit(1)
except ConnectionRefusedError:
    print("UDP: echo of 1, 1000 and 1472 bytes; closed port refused (ICMP port unreachable)")
PY
for loss in 0 0.1 1 5 10; do
  set_loss "$loss"
  stack_lab_check_echo "loss $loss%" "$STACK_IP" "$(bytes_for "$loss")" || fail=1
done
set_loss 0

echo "== bad input from $R (truncated, bad checksums, SYN flood) must not stop the stack"
rx python3 - "$STACK_IP" "$TAP" <<'PY'
import socket, struct, random, sys
dst, ifname = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
def csum(b):
    if len(b) % 2: b += b"\0"
    t = sum(struct.unpack("!%dH" % (len(b) // 2), b)); t = (t & 0xffff) + (t >> 16); t += t >> 16
    return ~t & 0xffff
random.seed(7)
for i in range(3000):
    sport = 1024 + i
    tcp = struct.pack("!HHIIBBHHH", sport, 7, random.getrandbits(32), 0, 5 << 4, 0x02, 65535, 0, 0)
    src = socket.inet_aton(socket.gethostbyname(socket.gethostname()) if False else "0.0.0.0")
    kind = i % 3
    if kind == 1: tcp = tcp[:random.randint(1, 19)]                 # truncated header
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), i, 0, 64, 6, 0, socket.inet_aton("0.0.0.0"), socket.inet_aton(dst))
    if kind == 2: tcp = tcp[:16] + b"\xde\xad" + tcp[18:]          # wrong checksum
    try: s.sendto(ip + tcp, (dst, 0))
    except OSError: pass
print("sent 3000 crafted segments")
PY
nsx ping -c 2 -i 0.2 -W 2 "$STACK_IP" >/dev/null && echo "ping after bad input: answered" || { echo "FAIL: no ping after bad input"; fail=1; }
stack_lab_check_echo "echo after bad input" "$STACK_IP" 65536 60 || fail=1
stack_lab_stop_bg
sleep 0.5

echo "== the stack as client (weft stack connect --echo-check), kernel echo server in $NS"
stack_lab_start_echo_server || fail=1
TAP_ARGS=(--tap "$TAP" --ip "$STACK_IP/24" --gateway "$GW_IP" --kernel-ip "$GW_IP/24" --netns "$R" -t 140)
for loss in 0 0.1 1 5 10; do
  # The TAP is made anew by each run; the loss rule matches by address, so it can go in first.
  set_loss "$loss"
  stack_lab_check_connect "loss $loss%" "$WEFT" stack connect "$KERN_IP" --echo-check "$(bytes_for "$loss")" --no-tso "${TAP_ARGS[@]}" || fail=1
done
set_loss 0
# TSO on the TAP (virtio GSO_TCPV4 super-frames, cut by the kernel when R forwards them), no loss.
stack_lab_check_connect "TSO, loss 0%" "$WEFT" stack connect "$KERN_IP" --echo-check 4194304 "${TAP_ARGS[@]}" || fail=1
# Path MTU discovery (RFC 1191): R's route to K's network gets MTU 1000, so R answers the stack's
# DF segments of 1500 bytes with "fragmentation needed"; the stack lowers its MSS and resends, and
# every byte still comes back. Without PMTUD every full segment would be dropped there.
kdev=$(ip -n "$R" route show "$N2.0/24" | awk '{for (i = 1; i < NF; i++) if ($i == "dev") print $(i + 1)}')
ip -n "$R" route replace "$N2.0/24" dev "$kdev" src "$N2.1" mtu 1000
for tso in --no-tso ""; do
  if out=$(timeout 150 "$WEFT" stack connect "$KERN_IP" --echo-check 1048576 $tso --tap "$TAP" --ip "$STACK_IP/24" \
             --gateway "$GW_IP" --kernel-ip "$GW_IP/24" --netns "$R" -t 30 2>/dev/null) &&
     grep -q '"match":true' <<<"$out" && grep -Eq '"pmtu_reductions":[1-9]' <<<"$out"; then
    echo "path MTU 1000 ${tso:-(TSO)}: $out"
  else
    echo "FAIL path MTU 1000 ${tso:-(TSO)}: ${out:-timeout}"; fail=1
  fi
done
ip -n "$R" route replace "$N2.0/24" dev "$kdev" src "$N2.1"
# NAPI on the TAP (IFF_NAPI, GRO off): the runs above with --no-tso had the NAPI thread during bulk
# sends (the default without TSO); here the thread all the time, and no NAPI at all, at 1% loss.
set_loss 1
stack_lab_check_connect "NAPI thread, loss 1%" "$WEFT" stack connect "$KERN_IP" --echo-check 2097152 --no-tso --tap-napi \
  "${TAP_ARGS[@]}" || fail=1
stack_lab_check_connect "no NAPI, loss 1%" "$WEFT" stack connect "$KERN_IP" --echo-check 2097152 --no-tso --no-tap-napi \
  "${TAP_ARGS[@]}" || fail=1
set_loss 0
# The default: the NAPI thread during bulk sends without TSO, no NAPI with TSO (the banner says which).
err=$(mktemp)
for tso in --no-tso ""; do
  want=$([[ -n $tso ]] && echo "NAPI thread during bulk sends" || echo "vnet_hdr on, transmit")
  if out=$(timeout 150 "$WEFT" stack connect "$KERN_IP" --echo-check 65536 $tso "${TAP_ARGS[@]}" 2>"$err") &&
     grep -q '"match":true' <<<"$out" && grep -q "$want" "$err" && { [[ -n $tso ]] || ! grep -q NAPI "$err"; }; then
    echo "default ${tso:-(TSO)}: $(grep 'took TAP' "$err")"
  else
    echo "FAIL default ${tso:-(TSO)}: ${out:-timeout} $(cat "$err")"; fail=1
  fi
done
rm -f "$err"
# Where /sys is read-only (a mount namespace with /sys bound read-only, as in many containers) the
# default falls back to no NAPI with one line saying so, and works; --tap-napi asked for it, so fails.
# (unshare's mount namespace is private: the host's /sys stays writable.)
RO_SYS=(unshare -m sh -c 'mount -o remount,bind,ro /sys && exec "$@"' sh)
err=$(mktemp)
if out=$(timeout 150 "${RO_SYS[@]}" "$WEFT" stack connect "$KERN_IP" --echo-check 1048576 --no-tso "${TAP_ARGS[@]}" 2>"$err") &&
   grep -q '"match":true' <<<"$out" && grep -q 'no NAPI thread for bulk sends' "$err"; then
  echo "read-only /sys: $(grep 'no NAPI thread' "$err")"
else
  echo "FAIL read-only /sys: ${out:-timeout} $(cat "$err")"; fail=1
fi
if timeout 150 "${RO_SYS[@]}" "$WEFT" stack connect "$KERN_IP" --echo-check 65536 --no-tso --tap-napi "${TAP_ARGS[@]}" \
     >/dev/null 2>"$err" || ! grep -q 'threaded NAPI' "$err"; then
  echo "FAIL read-only /sys: --tap-napi should refuse to run without its NAPI thread: $(cat "$err")"; fail=1
else
  echo "read-only /sys: --tap-napi refused: $(cat "$err")"
fi
rm -f "$err"
# Receiving TCP super-frames (TUN_F_TSO4 offered): a kernel client in R, on the TAP's own kernel
# end (no forwarding, so its TCP sends TSO-sized frames), streams to the stack as server. Echo:
# 8 MiB of random bytes come back byte-exact; serve --json: every byte counted, and super-frames
# were taken whole (rx_gso_frames).
rx_tso_client='
import hashlib, os, socket, sys, threading
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=30)
data = os.urandom(8 << 20) if sys.argv[3] == "echo" else bytes(8 << 20)
got = bytearray()
def read():
    while len(got) < len(data):
        b = s.recv(1 << 20)
        if not b: break
        got.extend(b)
t = threading.Thread(target=read)
if sys.argv[3] == "echo": t.start()
s.sendall(data)
if sys.argv[3] == "echo":
    t.join(); print("match" if hashlib.sha256(got).digest() == hashlib.sha256(data).digest() else "MISMATCH %d" % len(got))
s.shutdown(socket.SHUT_WR)
while s.recv(65536): pass
'
# The same without vnet headers (`plain`): the kernel cuts its frames to the MTU and the stack reads
# runs of them in io_uring batches (TapDevice's reader): echo byte-exact, serve counts every byte
# and frames read in batches (rx_batch_frames).
for run in echo serve echo_plain serve_plain; do
  mode=${run%_plain}
  plain=()
  [[ $run == *_plain ]] && plain=(--no-vnet-hdr)
  out=$(mktemp)
  err=$(mktemp)
  port=$([[ $mode == echo ]] && echo 7 || echo 5201)
  "$WEFT" stack "$mode" $([[ $mode == serve ]] && echo --json) --tap "$TAP" --ip "$STACK_IP/24" --kernel-ip "$GW_IP/24" \
    --netns "$R" -t 60 "${plain[@]}" >"$out" 2>"$err" &
  pid=$!
  for _ in $(seq 200); do grep -q -E "(echo|serving) on" "$err" && break; sleep 0.05; done
  res=$(rx timeout 60 python3 -c "$rx_tso_client" "$STACK_IP" "$port" "$mode" 2>&1) || res="client failed: $res"
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  what=$([[ $run == *_plain ]] && echo "plain receive (io_uring batches)" || echo "TSO receive")
  if [[ $mode == echo ]]; then
    [[ $res == match ]] && echo "$what, echo 8 MiB: match" || { echo "FAIL $what, echo: $res $(cat "$err")"; fail=1; }
  elif python3 - "$out" "$run" <<'PY'; then
import json, sys
j = json.load(open(sys.argv[1]))
got = [c["bytes"] for c in j["connections"]]
if sys.argv[2] == "serve":
    ok = got == [8 << 20] and j["tap"]["rx_gso_frames"] > 0
    print("TSO receive, serve: %s bytes, %d super-frames taken: %s" % (got, j["tap"]["rx_gso_frames"], "ok" if ok else "FAIL"))
else:
    # Where io_uring is refused (rx_io_uring false) the frames come by readv: still every byte.
    batched = j["tap"]["rx_batch_frames"] > 0 or not j["tap"]["rx_io_uring"]
    ok = got == [8 << 20] and j["tap"]["rx_gso_frames"] == 0 and batched
    print("plain receive, serve: %s bytes, %d frames in %d io_uring batches: %s" % (got, j["tap"]["rx_batch_frames"], j["tap"]["rx_batches"], "ok" if ok else "FAIL"))
sys.exit(0 if ok else 1)
PY
    :
  else
    echo "FAIL $what, serve: $res $(cat "$out" "$err")"; fail=1
  fi
  rm -f "$out" "$err"
done
exit $fail
