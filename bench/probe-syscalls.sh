#!/usr/bin/env bash
# System calls per probe, engine against the floor, per process (diagnostic, not a speed figure:
# strace slows every call it sees, but it counts them exactly). For each rate in RATES (default
# 100 1000 10000 probes/s), one after the other:
#   engine  weft bench probe --protocol udp --rate R --targets TARGETS (100 loopback addresses)
#   floor   bench/udp_floor_batched.c R ... 5000 2 TARGETS (5 ms wake-ups, kernel rx + tx stamps)
# Each is started, left to warm up WARM seconds (default 2), then `strace -c -f` attaches to every
# thread of each of its two processes (prober / responder, client / echo side) for DUR seconds
# (default 5) and detaches. Prints per process the calls per probe (calls / (R * DUR)) of every
# system call made at least 0.01 times a probe, and the total. Both sides are measured the same way.
set -euo pipefail
cd "$(dirname "$0")/.."
WEFT=${WEFT:-build/weft}
RATES=${RATES:-100 1000 10000}
TARGETS=${TARGETS:-100}
DUR=${DUR:-5}
WARM=${WARM:-2}
command -v strace >/dev/null || { echo "strace is not installed" >&2; exit 1; }
source bench/lib/scratch.sh
cc -O2 -o "$tmp/floor" bench/udp_floor_batched.c

# count NAME PID RATE: strace every thread of PID for DUR s, print calls per probe.
count() {
  local name=$1 pid=$2 rate=$3 args=()
  for t in /proc/"$pid"/task/*; do args+=(-p "${t##*/}"); done
  timeout -s INT "$DUR" strace -c -f -o "$tmp/$name.strace" "${args[@]}" 2>/dev/null || true
  python3 - "$tmp/$name.strace" "$name" "$rate" "$DUR" <<'PY'
import sys
path, name, rate, dur = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
probes = rate * dur
calls = {}
for line in open(path):
    f = line.split()
    # % time, seconds, usecs/call, calls, [errors], syscall
    if len(f) >= 5 and f[0][0].isdigit() and f[-1] != "total":
        calls[f[-1]] = int(f[3])
total = sum(calls.values())
parts = ", ".join(f"{k} {v / probes:.3f}" for k, v in sorted(calls.items(), key=lambda kv: -kv[1]) if v / probes >= 0.01)
print(f"{name:<16} rate {int(rate):>6}: {total / probes:.3f} system calls per probe ({parts})")
PY
}

# measure PARENT_LABEL CHILD_LABEL RATE OUT CMD...: start CMD with its output to OUT (a parent and
# its one child process, as both the engine and the floor are), warm up, count both processes' calls
# at once, wait for CMD.
measure() {
  local parent=$1 child=$2 r=$3 out=$4 pid cpid c1
  shift 4
  "$@" >"$out" &
  pid=$!
  pids+=("$pid")
  sleep "$WARM"
  cpid=$(pgrep -P "$pid" | head -1)
  count "$parent" "$pid" "$r" &
  c1=$!
  count "$child" "$cpid" "$r"
  wait "$c1"
  wait "$pid"
}

for r in $RATES; do
  run=$((DUR + WARM + 3))
  measure engine-prober engine-responder "$r" "$tmp/engine.json" \
    "$WEFT" --log-level warn bench probe --protocol udp --rate "$r" --targets "$TARGETS" --duration "$run" --json
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("  (engine run: sent", d["sent"], "lost", d["lost"], ")")' "$tmp/engine.json"
  measure floor-client floor-echo "$r" "$tmp/floor.json" "$tmp/floor" "$r" "$run" 5000 2 "$TARGETS"
done
