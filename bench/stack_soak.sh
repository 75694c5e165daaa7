#!/usr/bin/env bash
# Hostile-network soak (root): weft's stack against the Linux kernel through a user-space relay that
# drops, duplicates, delays with jitter and reorders (lab/hostile/relay.py, namespaces from
# lab/hostile/netns.sh), with the kernel peer's receive buffers squeezed, for as long as asked.
# Each round, for each loss rate, with a relay seeded afresh, four echo transfers of one size (both
# directions at once: every byte goes out and comes back, checked):
#   server  a kernel client in K -> `weft stack echo --device packet` in W (started for the
#           transfer, so its ring's copies of the other transfers' frames cost the others nothing)
#           reference: the same client -> a kernel echo server in W on the same veth (.3)
#   client  `weft stack connect --echo-check --device packet` in W -> a kernel echo server in K
#           reference: a kernel client in W (.3) -> the same server
# The kernel peers in K use SO_RCVBUF=RCVBUF and K's tcp_rmem=SQUEEZE. A transfer that moves no
# byte either way for 5 s is a stall (the kernel client, or K's server for weft's client, says so);
# a wrong byte fails it too. Prints a line per transfer and per cell (role x loss) the transfers,
# stalls, wrong bytes, failures and the median (and max) of weft's time / the kernel's time in the
# same round. Exits 1 on any weft stall, wrong byte or failed transfer.
# Usage: bench/stack_soak.sh build/weft [seconds=600]
# Environment (defaults): LOSSES="0 1 5" (percent), DUP=0.02, REORDER=0.05, REORDER_US=3000,
#   DELAY_US=300, JITTER_US=200, SQUEEZE="4096 16384 65536" ("" leaves tcp_rmem), RCVBUF=16384
#   (0: none), SIZES="262144 1048576" (one per round, in turn), SEED=1, CELL_LIMIT=120 (s),
#   WEFT_OPTS (more options for both weft processes), ROUNDS (stop after so many rounds),
#   ALLOW_CLIENT_STALLS=1 (weft-as-client stalls are printed but do not fail: issue 26's zero-window
#   deadlock, pure ACKs outside the peer's window, until its fix is in).
set -euo pipefail
WEFT=$(readlink -f "${1:?usage: $0 path/to/weft [seconds]}")
SECS=${2:-600}
[[ $(id -u) == 0 ]] || { echo "SKIP: needs root"; exit 77; }
LOSSES=${LOSSES:-0 1 5}
DUP=${DUP:-0.02} REORDER=${REORDER:-0.05} REORDER_US=${REORDER_US:-3000}
DELAY_US=${DELAY_US:-300} JITTER_US=${JITTER_US:-200}
SQUEEZE=${SQUEEZE-4096 16384 65536} RCVBUF=${RCVBUF:-16384}
read -ra SIZES <<<"${SIZES:-262144 1048576}"
SEED=${SEED:-1} CELL_LIMIT=${CELL_LIMIT:-120} ROUNDS=${ROUNDS:-0}
read -ra WOPTS <<<"${WEFT_OPTS:-}"
. "$(dirname "$0")/../lab/hostile/netns.sh"
PEER=$HOSTILE_DIR/soak_peer.py
hostile_init soak
[[ -n $SQUEEZE ]] && hostile_squeeze "$SQUEEZE"
T=$HOSTILE_TMP
echo "# $(date -u +%FT%TZ) soak ${SECS}s: loss ${LOSSES// /,} %, dup $DUP, reorder $REORDER (+0-${REORDER_US} us)," \
  "delay ${DELAY_US}+-${JITTER_US} us, K tcp_rmem '${SQUEEZE:-default}', K SO_RCVBUF $RCVBUF, sizes ${SIZES[*]}, seed $SEED," \
  "load $(cut -d' ' -f1-3 /proc/loadavg)"

# The kernel echo servers: K's squeezed (weft's client and the reference client talk to it), W's
# on .3 (the reference for weft's server). Their stall lines go to files.
hostile_bg kx "$HOSTILE_PY" "$PEER" server 7 --rcvbuf "$RCVBUF" --log "$T/k_stalls"
hostile_bg wx "$HOSTILE_PY" "$PEER" server 7 --log "$T/w_stalls"
: >"$T/k_stalls"
: >"$T/w_stalls"
start_weft_server() {  # back once K reaches it (K's old neighbour entry goes: a new MAC each time)
  ip netns exec "$HW" "$WEFT" stack echo --device packet --ifname "$HW_W" --ip "$HOSTILE_WEFT_SRV/24" \
    -t $((CELL_LIMIT * 3)) "${WOPTS[@]}" >>"$T/weft_server.log" 2>&1 &
  WEFT_SRV_PID=$!
  kx ip neigh flush dev "$HW_K" 2>/dev/null || true
  for _ in $(seq 50); do kx ping -c 1 -W 0.2 "$HOSTILE_WEFT_SRV" >/dev/null 2>&1 && return 0; done
  echo "FAIL: weft stack echo on $HOSTILE_WEFT_SRV never answered a ping"
  return 1
}
stop_weft_server() {
  kill "$WEFT_SRV_PID" 2>/dev/null || true
  wait "$WEFT_SRV_PID" 2>/dev/null || true
}

: >"$T/runs"
fail=0
k_client() {  # NS HOST BYTES SEED: a kernel client's JSON line
  ip netns exec "$1" "$HOSTILE_PY" "$PEER" client "$2" 7 "$3" --seed "$4" --rcvbuf "$( [[ $1 == "$HK" ]] && echo "$RCVBUF" || echo 0)" \
    --limit "$CELL_LIMIT" || true
}
field() { "$HOSTILE_PY" -c 'import json,sys; d=json.loads(sys.argv[1]); print(d.get(sys.argv[2], ""))' "$1" "$2" 2>/dev/null || true; }
record() {  # ROUND LOSS ROLE BYTES KSECS WSECS RESULT
  echo "$*" >>"$T/runs"
  printf '| %s | %s %% | %s | %s | %s | %s | %s |\n' "$@"
}
echo "| round | loss | role | bytes | kernel s | weft s | weft result |"
echo "|---|---|---|---|---|---|---|"
t_end=$(($(date +%s) + SECS))
round=0
while :; do
  round=$((round + 1))
  size=${SIZES[$(((round - 1) % ${#SIZES[@]}))]}
  li=0
  for loss in $LOSSES; do
    li=$((li + 1))
    rseed=$((SEED * 100000 + round * 10 + li))
    p=$("$HOSTILE_PY" -c "print($loss / 100)")
    hostile_relay_start --seed "$rseed" --loss "$p" --dup "$DUP" --reorder "$REORDER" --reorder-us "$REORDER_US" \
      --delay-us "$DELAY_US" --jitter-us "$JITTER_US"
    # weft as server, and its reference.
    kr=$(k_client "$HK" "$HOSTILE_KREF" "$size" "$rseed")
    start_weft_server || fail=1
    wr=$(k_client "$HK" "$HOSTILE_WEFT_SRV" "$size" "$rseed")
    kill -0 "$WEFT_SRV_PID" 2>/dev/null || { wr="{\"ok\": false, \"error\": \"weft stack echo died\"}"; }
    stop_weft_server
    res=ok
    if [[ $(field "$wr" ok) != True ]]; then
      res="FAIL $wr"
      [[ $(field "$wr" stall) == True ]] && res="STALL $wr"
      [[ $(field "$wr" wrong_at) != -1 && -n $(field "$wr" wrong_at) ]] && res="WRONG $wr"
      fail=1
    fi
    record "$round" "$loss" server "$size" "$(field "$kr" seconds)" "$(field "$wr" seconds)" "$res"
    # weft as client, and its reference.
    kr=$(k_client "$HW" "$HOSTILE_KERN" "$size" "$rseed")
    before=$(grep -c "peer=$HOSTILE_WEFT_CLI:" "$T/k_stalls" || true)
    wr=$(wx timeout $((CELL_LIMIT + 30)) "$WEFT" stack connect "$HOSTILE_KERN" --echo-check "$size" --device packet \
      --ifname "$HW_W" --ip "$HOSTILE_WEFT_CLI/24" -t "$CELL_LIMIT" "${WOPTS[@]}" 2>>"$T/weft_client.log" || true)
    after=$(grep -c "peer=$HOSTILE_WEFT_CLI:" "$T/k_stalls" || true)
    res=ok
    if ((after > before)); then
      res="STALL (K's server saw none of its bytes move for 5 s) ${wr:-nothing}"
      [[ ${ALLOW_CLIENT_STALLS:-0} == 1 ]] && res="$res (allowed: ALLOW_CLIENT_STALLS)" || fail=1
    elif ! grep -q '"match":true' <<<"$wr"; then
      res="FAIL ${wr:-nothing}"
      grep -q '"echoed":[0-9]' <<<"$wr" && [[ $(field "$wr" echoed) == "$size" ]] && res="WRONG $wr"
      fail=1
    fi
    record "$round" "$loss" client "$size" "$(field "$kr" seconds)" "$(field "$wr" seconds)" "$res"
    hostile_relay_stop
    cat "$T/relay.json" >>"$T/relay_all" 2>/dev/null || true
  done
  (($(date +%s) >= t_end)) && break
  ((ROUNDS > 0 && round >= ROUNDS)) && break
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg); $round rounds"
"$HOSTILE_PY" - "$T/runs" "$T/relay_all" "$T/k_stalls" "$T/w_stalls" <<'PY'
import json, statistics as st, sys
cells = {}
for line in open(sys.argv[1]):
    r, loss, role, size, ks, ws, res = line.split(" ", 6)
    c = cells.setdefault((role, float(loss)), {"n": 0, "stall": 0, "wrong": 0, "fail": 0, "ratios": []})
    c["n"] += 1
    res = res.strip()
    if res.startswith("STALL"): c["stall"] += 1
    elif res.startswith("WRONG"): c["wrong"] += 1
    elif res != "ok": c["fail"] += 1
    try:
        if res == "ok": c["ratios"].append(float(ws) / float(ks))
    except ValueError:
        pass
print("| weft as | loss | transfers | stalls | wrong bytes | other failures | weft/kernel time, median | max |")
print("|---|---|---|---|---|---|---|---|")
for (role, loss), c in sorted(cells.items()):
    rs = c["ratios"]
    print("| %s | %g %% | %d | %d | %d | %d | %s | %s |" % (role, loss, c["n"], c["stall"], c["wrong"], c["fail"],
          "%.2f" % st.median(rs) if rs else "-", "%.2f" % max(rs) if rs else "-"))
tot = {}
try:
    for line in open(sys.argv[2]):
        d = json.loads(line)
        for dirn in ("a_to_b", "b_to_a"):
            for k, v in d[dirn].items():
                tot[k] = tot.get(k, 0) + v
        tot["socket_drops"] = tot.get("socket_drops", 0) + d["socket_drops"]
except FileNotFoundError:
    pass
print("relay, all rounds: " + ", ".join("%s %d" % kv for kv in sorted(tot.items())))
ks = sum(1 for _ in open(sys.argv[3])); ws = sum(1 for _ in open(sys.argv[4]))
print("kernel echo servers' stall lines: K %d (weft's client or the reference client), W %d (reference)" % (ks, ws))
PY
grep -h STALL "$T/k_stalls" "$T/w_stalls" | head -5 || true
exit $fail
