#!/usr/bin/env bash
# Ingest A/B: `weft bench ingest --agents 1000 --targets 300` (bench/ingest.sh) with two builds,
# alternated round by round on the same machine so both see the same load; prints each round's
# pair-windows/s and controller CPU per window, then the medians and the median of the per-round
# ratios B/A (docs/BENCHMARKS.md "Trust").
# Usage: bench/ingest_ab.sh A_WEFT B_WEFT [ROUNDS=5]
set -euo pipefail
A=$1 B=$2 ROUNDS=${3:-5}
run() { "$1" --log-level warn bench ingest --agents 1000 --targets 300 --rounds 10 --connections 8 \
  --http-threads 10 --json 2>/dev/null | python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["windows_per_s"], j["cpu_us_per_window"])'; }
results=()
for ((r = 1; r <= ROUNDS; r++)); do
  read -r a acpu < <(run "$A")
  read -r b bcpu < <(run "$B")
  load=$(cut -d' ' -f1 /proc/loadavg)
  printf 'round %d (load %s): A %.0f/s (%.2f us CPU/window)  B %.0f/s (%.2f us)  B/A %.3f\n' \
    "$r" "$load" "$a" "$acpu" "$b" "$bcpu" "$(python3 -c "print($b/$a)")"
  results+=("$a $b $acpu $bcpu")
done
printf '%s\n' "${results[@]}" | python3 -c '
import statistics, sys
rows = [list(map(float, l.split())) for l in sys.stdin if l.strip()]
med = lambda i: statistics.median(r[i] for r in rows)
print(f"median: A {med(0):.0f}/s ({med(2):.2f} us/window)  B {med(1):.0f}/s ({med(3):.2f} us/window)  "
      f"median B/A {statistics.median(r[1] / r[0] for r in rows):.3f} over {len(rows)} rounds")'
