#!/bin/sh
# Runs inside the Soft-RoCE guest (see run_guest.sh): the engine tests on rxe0, the CLI pair
# (weft rdma responder + weft ping rdma with discovery), the netem check across a veth link
# between two more rxe devices, and the mesh monitor on that link: a controller and two agents,
# each with its own rxe device. Exit 0 if all passed. Names: wrp*/wrm*, addresses 10.9.1.0/24.
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
  : >/tmp/step-reason
  if "$@"; then echo "--- ok $name"; else echo "--- FAILED $name: $(cat /tmp/step-reason)"; failed="$failed $name"; fi
}
# A step's one-line reason for failing, shown on its FAILED line (which the CI digest keeps).
reason() { echo "$*" >/tmp/step-reason; }

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
  [ $rc -eq 0 ] && grep -q '"received":50,' /tmp/wrp-ping.json && grep -q '"lost":0,' /tmp/wrp-ping.json ||
    { reason "weft ping rdma exited $rc or did not get 50 of 50 answers"; return 1; }
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

NETEM_ON="$TC qdisc replace dev wrpa root netem delay 5ms && $TC qdisc replace dev wrpb root netem delay 5ms"
NETEM_OFF="$TC qdisc del dev wrpa root 2>/dev/null; $TC qdisc del dev wrpb root 2>/dev/null; true"

pair() {  # prints PAIR_* lines; switches netem off/on itself (see PairAcrossTwoDevices)
  WRP_PAIR_DEV_A=wrpxa WRP_PAIR_IP_A=10.9.1.1 WRP_PAIR_DEV_B=wrpxb WRP_PAIR_IP_B=10.9.1.2 WRP_PAIR_PHASES=20 \
  WRP_PAIR_ON="$NETEM_ON" WRP_PAIR_OFF="$NETEM_OFF" \
    probe_rdma_guest_tests --gtest_filter='*PairAcrossTwoDevices*' --gtest_brief=1 >/tmp/wrp-pair.out 2>&1
  rc=$?
  grep -E '^PAIR_|Failure|Expected|Which is|rdma' /tmp/wrp-pair.out
  return $rc
}
val() { grep "^$1=" /tmp/wrp-pair.out | cut -d= -f2; }

# An independent measure of what netem really adds on this emulated CPU (its timers fire late under
# TCG): ICMP echo over the same veth and routes, netem off and on in alternating phases; prints the
# rise of the median and the rise of the minimum, in ms.
icmp_times() { ping -c 15 -i 0.05 -I 10.9.1.1 10.9.1.2 2>/dev/null | sed -n 's/.*time=\([0-9.]*\) ms.*/\1/p'; }
median() { sort -n "$1" | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print -1 }'; }
minimum() { sort -n "$1" | awk 'NR == 1 { print $1 } END { if (!NR) print -1 }'; }
icmp_rise() {
  : >/tmp/icmp-off
  : >/tmp/icmp-on
  for k in 1 2 3; do
    sh -c "$NETEM_OFF"; icmp_times >>/tmp/icmp-off
    sh -c "$NETEM_ON"; icmp_times >>/tmp/icmp-on
  done
  sh -c "$NETEM_OFF"
  awk -v a="$(median /tmp/icmp-off)" -v b="$(median /tmp/icmp-on)" -v c="$(minimum /tmp/icmp-off)" \
      -v d="$(minimum /tmp/icmp-on)" -v n="$(wc -l </tmp/icmp-on)" \
    'BEGIN { if (a < 0 || b < 0 || n < 20) print "nan nan"; else printf "%.3f %.3f\n", b - a, d - c }'
}

netem_check() {
  veth_lab || { reason "veth lab set-up failed"; return 1; }
  tx1=$(cat /sys/class/net/wrpa/statistics/tx_packets)
  pair || { reason "the PairAcrossTwoDevices test failed (its lines above)"; return 1; }
  tx2=$(cat /sys/class/net/wrpa/statistics/tx_packets)
  echo "veth wrpa carried $((tx2 - tx1)) packets"
  set -- $(icmp_rise)
  icmp=$1 icmp_min=$2
  echo "ICMP echo over the same link: RTT rise $icmp ms median, $icmp_min ms minimum (netem as the emulated kernel delivers it)"
  # 5 ms on each direction of the link: the round trip gains 10 ms; the responder's own delay not.
  # The issue's check is a rise of 10 ms +/- 1. Netem's timers run late on this emulated CPU, the more
  # so the busier the host, and the ICMP reference is taken after weft's phases, not during them: a
  # busy minute moves the medians apart while the minima (what netem delivered at best) stay. So the
  # rise is judged on the medians and on the minima, each literally (10 +/- 1) or against the same
  # statistic of the ICMP reference (which may read up to 20 ms: 12.76 ms was seen at load 9) within
  # 1 ms; either statistic agreeing passes. A weft that measured something other than the network
  # round trip (the responder's delay in it, a wrong clock) fails both.
  awk -v icmp="$icmp" -v icmp_min="$icmp_min" -v n1="$(val PAIR_P50_NETWORK_OFF_NS)" -v n2="$(val PAIR_P50_NETWORK_ON_NS)" \
      -v m1="$(val PAIR_MIN_NETWORK_OFF_NS)" -v m2="$(val PAIR_MIN_NETWORK_ON_NS)" \
      -v d1="$(val PAIR_P50_DELAY_OFF_NS)" -v d2="$(val PAIR_P50_DELAY_ON_NS)" -v tx="$((tx2 - tx1))" 'BEGIN {
    rise = (n2 - n1) / 1e6; mrise = (m2 - m1) / 1e6; drise = (d2 - d1) / 1e6
    printf "network RTT p50 %.3f -> %.3f ms (%+.3f ms), min %.3f -> %.3f ms (%+.3f ms); responder delay p50 %.3f -> %.3f ms (%+.3f ms)\n",
           n1 / 1e6, n2 / 1e6, rise, m1 / 1e6, m2 / 1e6, mrise, d1 / 1e6, d2 / 1e6, drise
    p50_ok = (rise >= 9 && rise <= 11) || (icmp != "nan" && icmp + 0 >= 9 && icmp + 0 <= 20 && rise - icmp <= 1 && icmp - rise <= 1)
    min_ok = (mrise >= 9 && mrise <= 11) ||
             (icmp_min != "nan" && icmp_min + 0 >= 9 && icmp_min + 0 <= 20 && mrise - icmp_min <= 1 && icmp_min - mrise <= 1)
    if (p50_ok && !(rise >= 9 && rise <= 11))
      printf "median rise %+.3f ms is outside 10 +/- 1, but netem delivered %+.3f ms (ICMP): weft agrees within 1 ms\n", rise, icmp
    if (!p50_ok && min_ok)
      printf "median rise %+.3f ms disagrees with ICMP %+.3f ms; the minima agree: weft %+.3f ms, ICMP %+.3f ms\n", rise, icmp, mrise, icmp_min
    why = ""
    if (tx <= 100) why = why sprintf(" the veth carried only %d packets;", tx)
    if (!p50_ok && !min_ok)
      why = why sprintf(" RTT rise p50 %+.3f ms / min %+.3f ms, ICMP %s / %s ms;", rise, mrise, icmp, icmp_min)
    if (!(drise < 1 && drise > -1)) why = why sprintf(" responder delay moved %+.3f ms;", drise)
    if (why != "") { print why > "/tmp/step-reason"; exit 1 }
    exit 0 }'
}

# The mesh monitor with RDMA: a controller on loopback (sqlite store in /tmp) and two agents, wrma
# on rxe device wrpxa (10.9.1.1) and wrmb on wrpxb (10.9.1.2), each with --rdma. Both RDMA pairs
# must reach /api/v1/mesh?protocol=rdma with zero loss in two successive windows; then wrmb is
# stopped: wrma's pair to it goes to 100% loss, wrmb is marked down, wrma keeps running.
WRM_URL=http://127.0.0.1:7790
mesh_lines() { weft mesh --controller $WRM_URL --protocol rdma --agents >/tmp/wrm-mesh.txt 2>&1; }
# Field NAME of the pair line "pair SRC DST ...": pair_field SRC DST NAME
pair_field() {
  awk -v s="$1" -v d="$2" -v k="$3" '$1 == "pair" && $2 == s && $3 == d {
    for (i = 4; i <= NF; i++) { split($i, kv, "="); if (kv[1] == k) print kv[2] } }' /tmp/wrm-mesh.txt
}
agent_state() { awk -v n="$1" '$1 == "agent" && $2 == n { sub("state=", "", $3); print $3 }' /tmp/wrm-mesh.txt; }
# Waits (at most $1 tenths of a second) until the shell condition $2 holds on a fresh mesh_lines.
wait_for() {
  n=0
  while [ $n -lt "$1" ]; do
    mesh_lines && eval "$2" && return 0
    sleep 0.5; n=$((n + 5))
  done
  return 1
}
# Both pairs have a latest window that starts after $1 (Unix seconds), with probes and no loss.
both_clean_after() {
  for sd in "wrma wrmb" "wrmb wrma"; do
    set -- "$1" $sd
    st=$(pair_field "$2" "$3" window_start); sent=$(pair_field "$2" "$3" sent); lost=$(pair_field "$2" "$3" lost)
    [ -n "$st" ] && [ "${sent:-0}" -gt 0 ] && [ "$lost" = 0 ] && awk -v a="$st" -v b="$1" 'BEGIN { exit !(a > b) }' || return 1
  done
}
newest_start() { { pair_field wrma wrmb window_start; pair_field wrmb wrma window_start; } | sort -n | tail -n 1; }

agents_mesh() {
  [ -e /sys/class/infiniband/wrpxa ] || veth_lab || { reason "veth lab set-up failed"; return 1; }
  printf '%s\n' 'listen: [127.0.0.1:7790]' 'store: sqlite:/tmp/wrm-history.db' 'window: 2s' 'report_interval: 500ms' \
    'pinglist_sync: 1s' 'agent_down_after: 4s' 'protocols:' '  rdma: {interval: 20ms, timeout: 500ms}' 'groups:' \
    "  - {name: rdma-mesh, protocols: [rdma], members: ['*']}" >/tmp/wrm.yaml
  t0=$(date +%s)
  weft --log-level warn controller -c /tmp/wrm.yaml >/tmp/wrm-ctl.out 2>&1 &
  cpid=$!
  wait_for 100 true || { reason "controller did not answer"; cat /tmp/wrm-ctl.out; kill $cpid; wait $cpid; return 1; }
  weft agent --controller $WRM_URL --name wrma --address 10.9.1.1 --protocols rdma --rdma wrpxa:10.9.1.1 >/tmp/wrma.out 2>&1 &
  apid=$!
  weft agent --controller $WRM_URL --name wrmb --address 10.9.1.2 --protocols rdma --rdma wrpxb:10.9.1.2 >/tmp/wrmb.out 2>&1 &
  bpid=$!
  rc=0
  if wait_for 300 'both_clean_after 0'; then
    first=$(newest_start)
    echo "both RDMA pairs in the mesh after $(( $(date +%s) - t0 )) s:"; grep '^pair' /tmp/wrm-mesh.txt
    # The following windows too: no loss while both agents run.
    wait_for 150 "both_clean_after $first" || { echo "no later loss-free windows of both pairs:"; reason "no later loss-free windows of both RDMA pairs"; rc=1; }
    grep -E '^(pair|agent)' /tmp/wrm-mesh.txt
  else
    reason "the RDMA pairs did not both appear with zero loss"; echo "the RDMA pairs did not both appear with zero loss:"; cat /tmp/wrm-mesh.txt; rc=1
  fi
  if [ $rc -eq 0 ]; then
    kill -TERM $bpid; wait $bpid
    t1=$(date +%s)
    # wrma -> wrmb: every probe lost; wrmb down (no report for agent_down_after); wrma still up.
    if wait_for 300 '[ "$(pair_field wrma wrmb loss)" = 1.0000 ] && [ "$(agent_state wrmb)" = down ] && [ "$(agent_state wrma)" = up ]'; then
      echo "wrmb stopped: its pair at 100% loss and it is marked down after $(( $(date +%s) - t1 )) s"
    else
      reason "after stopping wrmb its pair did not reach 100% loss or it was not marked down"; echo "after stopping wrmb:"; rc=1
    fi
    grep -E '^(pair|agent)' /tmp/wrm-mesh.txt
    kill -0 $apid 2>/dev/null || { reason "wrma is gone"; echo "wrma is gone"; rc=1; }
  fi
  kill -TERM $apid $bpid 2>/dev/null; wait $apid 2>/dev/null; wait $bpid 2>/dev/null
  kill -TERM $cpid; wait $cpid
  if [ $rc -ne 0 ]; then
    for f in wrma wrmb wrm-ctl; do echo "--- $f"; tail -n 30 /tmp/$f.out; done
  else
    grep -h -E 'rdma rail|registered|alarm' /tmp/wrma.out /tmp/wrmb.out | head -n 12
  fi
  echo "mesh step: $(( $(date +%s) - t0 )) s"
  return $rc
}

step engine probe_rdma_guest_tests --gtest_brief=1
step cli-pair cli_pair
step netem netem_check
step agents-mesh agents_mesh
if [ -n "$failed" ]; then echo "probe_rdma guest suite FAILED:$failed"; exit 1; fi
echo "probe_rdma guest suite passed"
