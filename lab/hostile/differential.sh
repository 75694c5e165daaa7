#!/usr/bin/env bash
# Differential runner (root): the same crafted frames to weft and to the Linux kernel, answers
# compared (lab/hostile/differential.py, scapy). Namespaces: DW holds weft (`weft stack echo
# --device packet` on a veth end, no kernel address), DK the kernel (an echo server on port 7 on
# its veth end), both with the address T, and both with the same two servers that close first
# (the TIME-WAIT cases): port 13 echoes the first data and closes, port 14 echoes it and
# half-closes, keeping the socket; DP, the prober, holds the other two ends, each with the
# address P (the kernel of DP answers ARP for it; an nft rule drops every IPv4 packet DP's kernel
# would receive, so it never answers the targets' segments with resets of its own). Offloads off
# on all four ends (segment sizes are compared). Differences listed in
# lab/hostile/expected_differences.txt do not fail the run.
# Usage: lab/hostile/differential.sh path/to/weft [differential.py options, e.g. --only syn_plain]
# SELF_CHECK=1: a second kernel in DW instead of weft (the runner against itself: all must be same).
set -euo pipefail
WEFT=$(readlink -f "${1:?usage: $0 path/to/weft [options]}")
shift
EXTRA=("$@")
[[ $(id -u) == 0 ]] || { echo "SKIP: needs root"; exit 77; }
DIR=$(readlink -f "$(dirname "$0")")
PY=${HOSTILE_PY:-$([[ -x /usr/bin/python3 ]] && echo /usr/bin/python3 || command -v python3)}
"$PY" -c 'import scapy' 2>/dev/null || { echo "SKIP: needs scapy (Debian python3-scapy)"; exit 77; }
DW=wsh-dw-$$ DK=wsh-dk-$$ DP=wsh-dp-$$
NET=10.18.$((RANDOM % 250))
T=$NET.2 P=$NET.1
IFW=wdw$((RANDOM % 10000)) IFK=wdk$((RANDOM % 10000)) PW=wdpw$((RANDOM % 10000)) PK=wdpk$((RANDOM % 10000))
cleanup() {
  local ns p
  for ns in "$DW" "$DK" "$DP"; do
    for p in $(ip netns pids "$ns" 2>/dev/null); do kill "$p" 2>/dev/null || true; done
  done
  wait 2>/dev/null || true
  for ns in "$DW" "$DK" "$DP"; do ip netns del "$ns" 2>/dev/null || true; done
}
trap cleanup EXIT
for ns in "$DW" "$DK" "$DP"; do ip netns add "$ns"; ip -n "$ns" link set lo up; done
ip link add "$IFW" netns "$DW" type veth peer name "$PW" netns "$DP"
ip link add "$IFK" netns "$DK" type veth peer name "$PK" netns "$DP"
ip netns exec "$DW" sysctl -qw "net.ipv6.conf.$IFW.disable_ipv6=1"
ip netns exec "$DK" sysctl -qw "net.ipv6.conf.$IFK.disable_ipv6=1"
ip netns exec "$DP" sysctl -qw "net.ipv6.conf.$PW.disable_ipv6=1" "net.ipv6.conf.$PK.disable_ipv6=1"
ip -n "$DK" addr add "$T/24" dev "$IFK"
ip -n "$DP" addr add "$P/32" dev "$PW"
ip -n "$DP" addr add "$P/32" dev "$PK"
ip netns exec "$DP" nft add table inet prober
ip netns exec "$DP" nft add chain inet prober in '{ type filter hook input priority 0; policy drop; }'
ip netns exec "$DP" nft add chain inet prober out '{ type filter hook output priority 0; policy drop; }'
for pair in "$DW $IFW" "$DK $IFK" "$DP $PW" "$DP $PK"; do
  set -- $pair
  ip -n "$1" link set "$2" up
  ip netns exec "$1" "$PY" "$DIR/../offloads.py" "$2" off >/dev/null
done
log=$(mktemp)
if [[ ${SELF_CHECK:-0} == 1 ]]; then
  ip -n "$DW" addr add "$T/24" dev "$IFW"
  ip netns exec "$DW" "$PY" "$DIR/soak_peer.py" server 7 --close-port 13 --hold-port 14 &
  echo "a kernel in place of weft (SELF_CHECK)" >"$log"
else
  ip netns exec "$DW" "$WEFT" stack echo --device packet --ifname "$IFW" --ip "$T/24" -t 600 \
    --close-port 13 --hold-port 14 2>"$log" &
  weft_pid=$!
fi
ip netns exec "$DK" "$PY" "$DIR/soak_peer.py" server 7 --close-port 13 --hold-port 14 &
for _ in $(seq 50); do ip netns exec "$DK" ss -ltn | grep -q ':14 ' && break; sleep 0.1; done
sleep 0.5
echo "# $(date -u +%FT%TZ) weft: $(head -1 "$log" | cut -c1-100)..."
rc=0
ip netns exec "$DP" "$PY" "$DIR/differential.py" --weft "$PW" --kernel "$PK" --target "$T" --me "$P" \
  --expected "$DIR/expected_differences.txt" "${EXTRA[@]}" || rc=$?
# A weft built with ASan/UBSan (./run's sanitised tree) reports into its stderr, at the bad access
# or at exit (leaks): it leaves on SIGTERM, and any report fails the run.
if [[ -n ${weft_pid:-} ]]; then
  kill -TERM "$weft_pid" 2>/dev/null || true
  for _ in $(seq 100); do kill -0 "$weft_pid" 2>/dev/null || break; sleep 0.1; done
  if grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$log"; then
    echo "FAIL: weft's sanitizer report:"; grep -E -A20 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$log" | head -60
    rc=1
  fi
fi
rm -f "$log"
exit "$rc"
