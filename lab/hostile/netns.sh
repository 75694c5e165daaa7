# The hostile-network lab (sourced, root): weft in namespace W, the Linux kernel in namespace K, and
# between them namespace M holding the other ends of both veths, where lab/hostile/relay.py splices
# them together as one L2 link that drops, duplicates, delays and reorders. One subnet 10.17.x.0/24:
#   W: veth HW_W, no kernel address for weft's frames: weft server HOSTILE_WEFT_SRV (.1) and weft
#      client HOSTILE_WEFT_CLI (.4) each take it through AF_PACKET with their own MAC; the kernel of
#      W holds HOSTILE_KREF (.3) on the same veth, for the kernel-to-kernel reference on the same path.
#   K: veth HW_K with HOSTILE_KERN (.2).
# Offloads are off on all four veth ends (a super-frame read by the relay could not be sent on), and
# IPv6 is off on them (no router solicitations in the counts).
#
#   hostile_init TAG           the namespaces and veths; an EXIT trap removes them and stops
#                              what hostile_bg started
#   hostile_squeeze RMEM       K's net.ipv4.tcp_rmem (per namespace): "min default max", e.g.
#                              "4096 16384 65536": the squeezed peer that prunes and shrinks windows
#   hostile_relay_start ARGS   relay.py HW_M_W HW_M_K ARGS in M (stats to $HOSTILE_TMP/relay.json)
#   hostile_relay_stop         stops it (its counters land in relay.json)
#   hostile_bg CMD...          CMD in the background, stopped on exit
#   wx / kx / mx CMD...        run in W / K / M
HOSTILE_DIR=$(readlink -f "$(dirname "${BASH_SOURCE[0]}")")
# Debian's python3 (python3-scapy lives there; a version manager's shim in PATH may not pass
# signals on to the interpreter, and the relay must see its SIGTERM to write its counters).
HOSTILE_PY=${HOSTILE_PY:-$( [[ -x /usr/bin/python3 ]] && echo /usr/bin/python3 || command -v python3)}
hostile_pids=()
hostile_namespaces=()
HOSTILE_RELAY_PID=

hostile_cleanup() {
  local p ns
  for p in "${hostile_pids[@]}" $HOSTILE_RELAY_PID; do kill "$p" 2>/dev/null || true; done
  for ns in "${hostile_namespaces[@]}"; do
    for p in $(ip netns pids "$ns" 2>/dev/null); do kill "$p" 2>/dev/null || true; done
  done
  wait 2>/dev/null || true
  for ns in "${hostile_namespaces[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
  [[ -n ${HOSTILE_TMP:-} ]] && rm -rf "$HOSTILE_TMP"
}

wx() { ip netns exec "$HW" "$@"; }
kx() { ip netns exec "$HK" "$@"; }
mx() { ip netns exec "$HM" "$@"; }

hostile_init() {  # TAG
  local tag=$1 net
  HW=wsh-$tag-w-$$ HK=wsh-$tag-k-$$ HM=wsh-$tag-m-$$
  net=10.17.$((RANDOM % 250))
  HOSTILE_WEFT_SRV=$net.1 HOSTILE_KERN=$net.2 HOSTILE_KREF=$net.3 HOSTILE_WEFT_CLI=$net.4
  HW_W=whw$((RANDOM % 10000)) HW_K=whk$((RANDOM % 10000))
  HW_M_W=whmw$((RANDOM % 10000)) HW_M_K=whmk$((RANDOM % 10000))
  HOSTILE_TMP=$(mktemp -d)
  trap hostile_cleanup EXIT
  local ns
  for ns in "$HW" "$HK" "$HM"; do
    ip netns add "$ns"
    hostile_namespaces+=("$ns")
    ip -n "$ns" link set lo up
  done
  ip link add "$HW_W" netns "$HW" type veth peer name "$HW_M_W" netns "$HM"
  ip link add "$HW_K" netns "$HK" type veth peer name "$HW_M_K" netns "$HM"
  wx sysctl -qw "net.ipv6.conf.$HW_W.disable_ipv6=1"
  kx sysctl -qw "net.ipv6.conf.$HW_K.disable_ipv6=1"
  mx sysctl -qw "net.ipv6.conf.$HW_M_W.disable_ipv6=1" "net.ipv6.conf.$HW_M_K.disable_ipv6=1"
  ip -n "$HW" addr add "$HOSTILE_KREF/24" dev "$HW_W"
  ip -n "$HK" addr add "$HOSTILE_KERN/24" dev "$HW_K"
  for pair in "$HW $HW_W" "$HK $HW_K" "$HM $HW_M_W" "$HM $HW_M_K"; do
    set -- $pair
    ip -n "$1" link set "$2" up
    ip netns exec "$1" "$HOSTILE_PY" "$HOSTILE_DIR/../offloads.py" "$2" off >/dev/null
  done
}

hostile_squeeze() {  # "MIN DEFAULT MAX"
  kx sysctl -qw "net.ipv4.tcp_rmem=$1"
}

hostile_relay_start() {  # relay.py options
  ip netns exec "$HM" "$HOSTILE_PY" "$HOSTILE_DIR/relay.py" "$HW_M_W" "$HW_M_K" --stats "$HOSTILE_TMP/relay.json" "$@" &
  HOSTILE_RELAY_PID=$!
  local i
  for i in $(seq 50); do  # up once its sockets are bound
    mx ss -0 -a 2>/dev/null | grep -q "$HW_M_K" && return 0
    sleep 0.1
  done
}

hostile_relay_stop() {
  [[ -z $HOSTILE_RELAY_PID ]] && return 0
  kill "$HOSTILE_RELAY_PID" 2>/dev/null || true
  wait "$HOSTILE_RELAY_PID" 2>/dev/null || true
  HOSTILE_RELAY_PID=
}

hostile_bg() {
  "$@" &
  hostile_pids+=($!)
}
