#!/bin/sh
# Runs inside the Soft-RoCE guest (see run_guest.sh): the engine tests on rxe0, the CLI pair
# (weft rdma responder + weft ping rdma with discovery), and the netem check across a veth link
# between two more rxe devices. Exit 0 if all passed. Names: wrp*, addresses 10.9.1.0/24.
set -u
ip=${WRD_IP:-10.9.0.1}
# The guest's busybox sh runs its own ip/tc applets before anything on PATH, and they know neither
# veth peers nor netem: use the iproute2 binaries run_guest.sh put into /usr/local/bin.
IP=/usr/local/bin/ip
TC=/usr/local/bin/tc
failed=""
step() {
  name=$1; shift
  echo "=== $name"
  if "$@"; then echo "--- ok $name"; else echo "--- FAILED $name"; failed="$failed $name"; fi
}

cli_pair() {
  weft --log-level warn rdma responder -d rxe0 --address "$ip" --discovery "$ip:7779" --duration 60 >/tmp/wrp-resp.out 2>&1 &
  rpid=$!
  i=0
  while [ $i -lt 50 ] && ! grep -q "RDMA responder on" /tmp/wrp-resp.out 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
  cat /tmp/wrp-resp.out
  weft --log-level warn ping rdma "rxe0:$ip" -c 50 -i 0.02 --json >/tmp/wrp-ping.json
  rc=$?
  kill -INT $rpid; wait $rpid
  cat /tmp/wrp-ping.json /tmp/wrp-resp.out
  [ $rc -eq 0 ] && grep -q '"received":50,' /tmp/wrp-ping.json && grep -q '"lost":0,' /tmp/wrp-ping.json
}

# Two rxe devices on the two ends of a veth pair. Both addresses are local, so by default the
# kernel would deliver between them through lo; policy routing sends them over the veth instead
# (and receives them locally on the far end), so that netem on the veths delays RDMA traffic.
veth_lab() {
  $IP link add wrpa type veth peer name wrpb || return 1
  $IP addr add 10.9.1.1/24 dev wrpa && $IP addr add 10.9.1.2/24 dev wrpb || return 1
  $IP link set wrpa up && $IP link set wrpb up || return 1
  for d in all wrpa wrpb; do
    echo 1 >/proc/sys/net/ipv4/conf/$d/accept_local
    echo 0 >/proc/sys/net/ipv4/conf/$d/rp_filter
  done
  $IP rule add pref 10 iif wrpa lookup local && $IP rule add pref 11 iif wrpb lookup local || return 1
  $IP rule add pref 20 to 10.9.1.2 lookup 101 && $IP rule add pref 21 to 10.9.1.1 lookup 102 || return 1
  $IP route add 10.9.1.2 dev wrpa src 10.9.1.1 table 101 || return 1
  $IP route add 10.9.1.1 dev wrpb src 10.9.1.2 table 102 || return 1
  $IP rule add pref 100 lookup local && $IP rule del pref 0 || return 1
  rdma link add wrpxa type rxe netdev wrpa && rdma link add wrpxb type rxe netdev wrpb || return 1
  i=0
  while [ $i -lt 50 ] && ! grep -q ACTIVE /sys/class/infiniband/wrpxb/ports/1/state; do sleep 0.1; i=$((i + 1)); done
  grep -q ACTIVE /sys/class/infiniband/wrpxa/ports/1/state
}

pair() {  # prints PAIR_* lines; switches netem off/on itself (see PairAcrossTwoDevices)
  WRP_PAIR_DEV_A=wrpxa WRP_PAIR_IP_A=10.9.1.1 WRP_PAIR_DEV_B=wrpxb WRP_PAIR_IP_B=10.9.1.2 WRP_PAIR_PHASES=10 \
  WRP_PAIR_ON="$TC qdisc replace dev wrpa root netem delay 5ms && $TC qdisc replace dev wrpb root netem delay 5ms" \
  WRP_PAIR_OFF="$TC qdisc del dev wrpa root 2>/dev/null; $TC qdisc del dev wrpb root 2>/dev/null; true" \
    probe_rdma_guest_tests --gtest_filter='*PairAcrossTwoDevices*' --gtest_brief=1 >/tmp/wrp-pair.out 2>&1
  rc=$?
  grep -E '^PAIR_|Failure|Expected|Which is|rdma' /tmp/wrp-pair.out
  return $rc
}
val() { grep "^$1=" /tmp/wrp-pair.out | cut -d= -f2; }

netem_check() {
  veth_lab || { echo "veth lab set-up failed"; return 1; }
  tx1=$(cat /sys/class/net/wrpa/statistics/tx_packets)
  pair || return 1
  tx2=$(cat /sys/class/net/wrpa/statistics/tx_packets)
  echo "veth wrpa carried $((tx2 - tx1)) packets"
  # 5 ms on each direction of the link: the round trip gains 10 ms; the responder's own delay not.
  awk -v n1="$(val PAIR_P50_NETWORK_OFF_NS)" -v n2="$(val PAIR_P50_NETWORK_ON_NS)" \
      -v m1="$(val PAIR_MIN_NETWORK_OFF_NS)" -v m2="$(val PAIR_MIN_NETWORK_ON_NS)" \
      -v d1="$(val PAIR_P50_DELAY_OFF_NS)" -v d2="$(val PAIR_P50_DELAY_ON_NS)" -v tx="$((tx2 - tx1))" 'BEGIN {
    rise = (n2 - n1) / 1e6; drise = (d2 - d1) / 1e6
    printf "network RTT p50 %.3f -> %.3f ms (%+.3f ms), min %.3f -> %.3f ms (%+.3f ms); responder delay p50 %.3f -> %.3f ms (%+.3f ms)\n",
           n1 / 1e6, n2 / 1e6, rise, m1 / 1e6, m2 / 1e6, (m2 - m1) / 1e6, d1 / 1e6, d2 / 1e6, drise
    ok = tx > 100 && (rise >= 9 && rise <= 11) && (drise < 1 && drise > -1)
    exit ok ? 0 : 1 }'
}

step engine probe_rdma_guest_tests --gtest_brief=1
step cli-pair cli_pair
step netem netem_check
if [ -n "$failed" ]; then echo "probe_rdma guest suite FAILED:$failed"; exit 1; fi
echo "probe_rdma guest suite passed"
