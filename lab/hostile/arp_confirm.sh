#!/usr/bin/env bash
# ARP against Linux past weft's 60 s entry lifetime (root, ~75 s): a kernel in namespace K pings
# `weft stack echo --device packet` in W five times a second for 70 s, with K's neighbour entry
# for weft kept reachable for 10 minutes (base_reachable_time_ms), so K sends no ARP of its own
# that would refresh weft's entry. After 60 s weft must keep answering at once and confirm K by a
# unicast ARP request that K answers. Prints the ARP frames K saw and the ping loss; exits 1 if a
# ping was lost or no unicast request from weft was answered.
# Usage: lab/hostile/arp_confirm.sh path/to/weft [seconds=70]
set -euo pipefail
WEFT=$(readlink -f "${1:?usage: $0 path/to/weft [seconds]}")
SECS=${2:-70}
[[ $(id -u) == 0 ]] || { echo "SKIP: needs root"; exit 77; }
W=warp-w-$$ K=warp-k-$$ IW=wap$((RANDOM % 10000)) IK=wak$((RANDOM % 10000))
NET=10.19.$((RANDOM % 250))
cleanup() {
  local ns p
  for ns in "$W" "$K"; do
    for p in $(ip netns pids "$ns" 2>/dev/null); do kill "$p" 2>/dev/null || true; done
  done
  wait 2>/dev/null || true
  for ns in "$W" "$K"; do ip netns del "$ns" 2>/dev/null || true; done
}
trap cleanup EXIT
for ns in "$W" "$K"; do ip netns add "$ns"; ip -n "$ns" link set lo up; done
ip link add "$IW" netns "$W" type veth peer name "$IK" netns "$K"
ip netns exec "$W" sysctl -qw "net.ipv6.conf.$IW.disable_ipv6=1"
ip netns exec "$K" sysctl -qw "net.ipv6.conf.$IK.disable_ipv6=1" "net.ipv4.neigh.$IK.base_reachable_time_ms=600000"
ip -n "$K" addr add "$NET.1/24" dev "$IK"
ip -n "$W" link set "$IW" up
ip -n "$K" link set "$IK" up
ip netns exec "$W" "$WEFT" stack echo --device packet --ifname "$IW" --ip "$NET.2/24" -t $((SECS + 10)) >/dev/null 2>&1 &
for _ in $(seq 50); do ip netns exec "$K" ping -c 1 -W 0.2 "$NET.2" >/dev/null 2>&1 && break; done
# K's view of the ARP frames on its veth: weft's requests (broadcast or unicast to K) and K's replies.
ip netns exec "$K" python3 - "$IK" "$SECS" >"/tmp/arp_confirm.$$" <<'PY' &
import socket, struct, sys, time
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))  # ETH_P_ALL: K's own frames too
s.bind((sys.argv[1], 3))
s.settimeout(0.5)
mine = open("/sys/class/net/%s/address" % sys.argv[1]).read().strip()
end, seen = time.monotonic() + float(sys.argv[2]) + 2, []
t0 = time.monotonic()
while time.monotonic() < end:
    try:
        b, addr = s.recvfrom(2048)
    except socket.timeout:
        continue
    if b[12:14] != b"\x08\x06":
        continue
    dst = ":".join("%02x" % x for x in b[0:6])
    op = struct.unpack("!H", b[20:22])[0]
    kind = "reply" if op == 2 else ("unicast request" if dst == mine else "broadcast request")
    who = "K" if addr[2] == socket.PACKET_OUTGOING else "weft"
    seen.append("%.1f s %s %s" % (time.monotonic() - t0, who, kind))
print("\n".join(seen))
PY
cap=$!
loss=$(ip netns exec "$K" ping -i 0.2 -W 1 -c $((SECS * 5)) "$NET.2" | grep -oE '[0-9.]+% packet loss' || echo "no ping summary")
wait "$cap" || true
echo "ARP frames on K's veth (time from the start of the capture):"
sed 's/^/  /' "/tmp/arp_confirm.$$"
echo "pings: $loss"
rc=0
[[ $loss == "0% packet loss" ]] || { echo "FAIL: pings lost"; rc=1; }
if ! grep -q 'weft unicast request' "/tmp/arp_confirm.$$" || ! grep -A1 'weft unicast request' "/tmp/arp_confirm.$$" | grep -q 'K reply'; then
  echo "FAIL: no unicast request from weft that K answered"
  rc=1
fi
rm -f "/tmp/arp_confirm.$$"
exit "$rc"
