#!/usr/bin/env bash
# The 10,000 probes/s figure against the kernel's own price for the same work, interleaved so that
# both see the same machine (on a shared virtual machine the price of a datagram drifts by a few
# points of a core from minute to minute; a lone run of either says little).
# Each round runs, back to back:
#   engine  weft bench probe --protocol udp --rate 10000 --targets 100 (prober + responder CPU)
#   floor2  bench/udp_floor_batched.c: same datagrams and 5 ms wake-ups, kernel rx + tx stamps
#   floor1  the same with receive stamps only
#   floor0  the same without stamps
# and prints one line per round, then the medians. ROUNDS (default 7), DUR seconds (default 10).
set -euo pipefail
cd "$(dirname "$0")/.."
WEFT=${WEFT:-build/weft}
ROUNDS=${ROUNDS:-7}
DUR=${DUR:-10}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -o "$tmp/floor" bench/udp_floor_batched.c
engine() {
  "$WEFT" --log-level warn bench probe --protocol udp --rate 10000 --targets 100 --duration "$DUR" --json |
    python3 -c 'import json,sys; d=json.load(sys.stdin); print(round(d["cpu_percent_prober"]+d["cpu_percent_responder"],1), d["lost"])'
}
floor() {
  "$tmp/floor" 10000 "$DUR" 5000 "$1" |
    python3 -c 'import json,sys; d=json.load(sys.stdin); print(round(d["cpu_percent_client"]+d["cpu_percent_server"],1))'
}
printf '%-8s %-6s %-8s %-6s %-7s %-7s %-7s\n' time load engine lost floor2 floor1 floor0
for _ in $(seq "$ROUNDS"); do
  read -r e lost < <(engine)
  f2=$(floor 2)
  f1=$(floor 1)
  f0=$(floor 0)
  printf '%-8s %-6s %-8s %-6s %-7s %-7s %-7s\n' "$(date +%T)" "$(cut -d' ' -f1 /proc/loadavg)" "$e" "$lost" "$f2" "$f1" "$f0" |
    tee -a "$tmp/rows"
done
python3 - "$tmp/rows" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
col = lambda i: [float(r[i]) for r in rows]
e, f2, f1, f0 = col(2), col(4), col(5), col(6)
diff = [a - b for a, b in zip(e, f2)]
print(f"median  engine {statistics.median(e):.1f}  floor2 {statistics.median(f2):.1f}  "
      f"floor1 {statistics.median(f1):.1f}  floor0 {statistics.median(f0):.1f}  "
      f"engine-floor2 {statistics.median(diff):+.1f} (min {min(diff):+.1f}, max {max(diff):+.1f})  "
      f"engine < 10%: {sum(x < 10 for x in e)} of {len(e)}")
PY
