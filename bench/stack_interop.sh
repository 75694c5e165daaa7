#!/usr/bin/env bash
# Interop grid (root): weft's user-space stack against the Linux kernel's TCP, SIZE bytes each way
# (an echo: every byte sent comes back) at each loss rate, weft as server (`weft stack echo`, a
# Python kernel client in the namespace) and as client (`weft stack connect --echo-check`, a Python
# kernel echo server in the namespace). Kernel client: random bytes, SHA-256 of what was sent and
# what came back compared. weft client: every byte checked against a non-repeating pattern.
# Path (lab/stack_netns.sh, shared with the lab test): the stack's TAP has its kernel end in a
# router namespace R (forwarding on); the kernel peer sits in namespace K behind a veth pair to R.
# Loss: nftables `numgen random` in R's forward chain, each direction at the given rate, so both
# senders lose segments without being told.
# Reference (KERNEL_REF=1, the default): the same echo between two kernels through the same router
# and loss, the client in K and the server in a third namespace S behind its own veth to R.
# Retransmissions: weft's own counters; the kernel's from `nstat TcpRetransSegs` in the namespace.
# Usage: bench/stack_interop.sh build/weft [bytes=104857600] [losses="0 0.1 1 5 10"] [limit_s=900] [rounds=1]
# ends with a summary: per role and loss, the median seconds and the median over rounds of the
# kernel reference's seconds / weft's seconds in the same round (throughput relative to the kernel).
# WEFT_ARGS="..." adds options to both weft commands (--buffer, --cc, --no-sack, --no-rack).
set -euo pipefail
WEFT=${1:?usage: $0 path/to/weft [bytes] [losses] [limit_s]}
SIZE=${2:-104857600}
LOSSES=${3:-0 0.1 1 5 10}
LIMIT=${4:-900}
ROUNDS=${5:-1}
WEFT_ARGS=${WEFT_ARGS:-}  # more options for both weft commands, e.g. "--buffer 1048576 --cc reno"
# --no-tso: R's loss rule sees a TSO super-frame as one packet (it is cut after the forward hook),
# so one drop would take up to 45 segments; the kernel senders here send single segments
# (gso_max_segs 1), so weft does too and the loss counts segments for both.
WEFT_ARGS="--no-tso $WEFT_ARGS"
[[ $(id -u) == 0 ]] || { echo "needs root"; exit 1; }
. "$(dirname "$0")/../lab/stack_netns.sh"  # R, K and the TAP's addresses; cleans up on exit
stack_lab_init io
S=wst-io-s-$$
N3=10.$((210 + RANDOM % 40)).$((RANDOM % 250))  # R <-> S over a second veth
REF_IP=$N3.2
stack_lab_add_peer "$S" "$N3" "$REF_IP"
pids=()
trap 'stack_lab_pids=("${pids[@]}"); stack_lab_cleanup; rm -f "/tmp/$R.err" "/tmp/$R.runs"' EXIT
set_loss() { stack_lab_set_loss "$1" "$STACK_IP" "$REF_IP"; }
drops() { stack_lab_drops; }
kretrans() { nsx nstat -az TcpRetransSegs | awk '/TcpRetransSegs/ {print $2}'; }
sretrans() { ip netns exec "$S" nstat -az TcpRetransSegs | awk '/TcpRetransSegs/ {print $2}'; }
ECHO_CLIENT=$(readlink -f "$(dirname "$0")/../lab/stack_echo_client.py")
ECHO_SERVER=$STACK_LAB_ECHO_SERVER
echo "# $(date -u +%FT%TZ) size $SIZE bytes each way, $ROUNDS round(s), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| round | weft as | loss % | result | bytes back | seconds | Mb/s each way | weft retransmits (timeouts) | kernel retransmits | frames dropped |"
echo "|---|---|---|---|---|---|---|---|---|---|"
fail=0
RUNS=/tmp/$R.runs  # role loss round seconds ok, for the summary
: >"$RUNS"
mbps() { python3 -c "print(f'{$1*8/max($2,1e-9)/1e6:.0f}')"; }
run_kernel() {  # $1 loss $2 round: kernel client in K -> kernel echo server in S
  local k0 out res got secs; set_loss "$1"; k0=$(($(kretrans) + $(sretrans)))
  if out=$(timeout $((LIMIT + 30)) ip netns exec "$K" python3 "$ECHO_CLIENT" "$REF_IP" "$SIZE" "$LIMIT" --brief); then :; else fail=1; fi
  read -r res got secs <<<"${out:-timeout 0 0}"
  echo "| $2 | kernel (reference) | $1 | $res | $got | $secs | $(mbps "$got" "$secs") | – | $(($(kretrans) + $(sretrans) - k0)) | $(drops) |"
  echo "kernel $1 $2 $secs $([[ $res == match ]] && echo 1 || echo 0)" >>"$RUNS"
}
run_server() {  # weft stack echo on the TAP <- kernel client in K
  local k0 out res got secs w p; set_loss 0
  "$WEFT" stack echo --tap "$TAP" --ip "$STACK_IP/24" --gateway "$GW_IP" --kernel-ip "$GW_IP/24" --netns "$R" \
    $WEFT_ARGS 2>"/tmp/$R.err" &
  p=$!; pids+=("$p")
  for _ in $(seq 100); do rx ip link show "$TAP" 2>/dev/null | grep -q UP && break; sleep 0.1; done
  set_loss "$1"; k0=$(kretrans)
  if out=$(timeout $((LIMIT + 30)) ip netns exec "$K" python3 "$ECHO_CLIENT" "$STACK_IP" "$SIZE" "$LIMIT" --brief); then :; else fail=1; fi
  read -r res got secs <<<"${out:-timeout 0 0}"
  sleep 0.3
  [[ -n ${STACK_JSON:-} ]] && cat "/tmp/$R.err" >>"$STACK_JSON"
  w=$(grep -o '[0-9]* retransmits ([0-9]* timeouts)' "/tmp/$R.err" | head -1 | sed 's/ retransmits / /; s/ timeouts//')
  echo "| $2 | server | $1 | $res | $got | $secs | $(mbps "$got" "$secs") | ${w:-?} | $(($(kretrans) - k0)) | $(drops) |"
  echo "server $1 $2 $secs $([[ $res == match ]] && echo 1 || echo 0)" >>"$RUNS"
  kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true
  for _ in $(seq 50); do rx ip link show "$TAP" >/dev/null 2>&1 || break; sleep 0.1; done
}
run_client() {  # weft stack connect --echo-check -> kernel echo server in K
  local k0 out; set_loss "$1"; k0=$(kretrans)
  out=$(timeout $((LIMIT + 30)) "$WEFT" stack connect "$KERN_IP" --echo-check "$SIZE" --tap "$TAP" \
        --ip "$STACK_IP/24" --gateway "$GW_IP" --kernel-ip "$GW_IP/24" --netns "$R" -t "$LIMIT" $WEFT_ARGS 2>/dev/null) || fail=1
  [[ -n ${STACK_JSON:-} ]] && echo "$out" >>"$STACK_JSON"
  python3 - "${out:-{\}}" "$1" "$(($(kretrans) - k0))" "$(drops)" "$2" "$RUNS" <<'PY'
import json, sys
j = json.loads(sys.argv[1]) if sys.argv[1] != "{}" else {}
secs = j.get("seconds", 0) or 1e-9
ok = bool(j.get("match"))
print("| %s | client | %s | %s | %s | %.2f | %.0f | %s (%s) | %s | %s |" % (sys.argv[5], sys.argv[2],
      "match" if ok else "MISMATCH/timeout", j.get("echoed", 0), secs,
      j.get("echoed", 0) * 8 / secs / 1e6, j.get("retransmits", "?"), j.get("timeouts", "?"), sys.argv[3], sys.argv[4]))
open(sys.argv[6], "a").write("client %s %s %.3f %d\n" % (sys.argv[2], sys.argv[5], secs, ok))
PY
}
# Every server stays up for the whole run: the kernel reference's in S, the kernel echo server
# for weft's client in K; weft's own echo server is started per run (it shares the TAP with the
# client).
ip netns exec "$S" python3 -c "$ECHO_SERVER" &
pids+=($!)
nsx python3 -c "$ECHO_SERVER" &
pids+=($!)
for _ in $(seq 50); do
  ip netns exec "$S" ss -ltn 2>/dev/null | grep -q ':7 ' && nsx ss -ltn 2>/dev/null | grep -q ':7 ' && break
  sleep 0.1
done
# Interleaved: each round runs every loss rate, each the kernel reference then weft as server
# then as client, so a ratio compares runs minutes apart under the same load.
for round in $(seq "$ROUNDS"); do
  for loss in $LOSSES; do
    [[ ${KERNEL_REF:-1} == 1 ]] && run_kernel "$loss" "$round"
    run_server "$loss" "$round"
    run_client "$loss" "$round"
  done
done
set_loss 0
echo
echo "Summary: median seconds over rounds; ratio = kernel seconds / weft seconds in the same round"
echo "(throughput relative to the kernel), median over rounds. Failed runs are left out."
python3 - "$RUNS" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
t = {}
for role, loss, rnd, secs, ok in rows:
    if ok == "1": t[(role, loss, rnd)] = float(secs)
losses = sorted({r[1] for r in rows}, key=float)
rounds = sorted({r[2] for r in rows}, key=int)
print("| weft as | loss % | runs ok | median s | kernel median s | throughput / kernel (median of rounds) | min | max |")
print("|---|---|---|---|---|---|---|---|")
for role in ("server", "client"):
    for loss in losses:
        ws = [t[(role, loss, r)] for r in rounds if (role, loss, r) in t]
        ks = [t[("kernel", loss, r)] for r in rounds if ("kernel", loss, r) in t]
        ratios = [t[("kernel", loss, r)] / t[(role, loss, r)] for r in rounds
                  if (role, loss, r) in t and ("kernel", loss, r) in t]
        f = lambda xs: "%.2f" % st.median(xs) if xs else "–"
        print("| %s | %s | %d/%d | %s | %s | %s | %s | %s |" % (role, loss, len(ws), len(rounds), f(ws), f(ks),
              f(ratios), "%.2f" % min(ratios) if ratios else "–", "%.2f" % max(ratios) if ratios else "–"))
PY
exit $fail
