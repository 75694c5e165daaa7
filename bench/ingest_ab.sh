#!/usr/bin/env bash
# Ingest A/B: `weft bench ingest --agents 1000 --targets 300` (bench/ingest.sh) with two builds,
# alternated round by round on the same machine so both see the same load (the order within a
# round alternates too); prints each round's pair-windows/s and controller CPU per window, then the
# medians and the median of the per-round ratios B/A (docs/BENCHMARKS.md, "Ingest with per-agent
# identity"). Both builds must accept the same options (targets < agents: they are other agents).
# Usage: bench/ingest_ab.sh A_WEFT B_WEFT [ROUNDS=5]    env: PORT (first port, 18400), ARGS (extra
# bench options, both), ARGS_A / ARGS_B (one build's only: the same build twice, with and without
# an option, measures what the option costs)
set -euo pipefail
A=$1 B=$2 ROUNDS=${3:-5} PORT=${PORT:-18400} ARGS=${ARGS:-} ARGS_A=${ARGS_A:-} ARGS_B=${ARGS_B:-}
run() {  # run WEFT PORT EXTRA_ARGS
  local port=$2 extra=$3
  # shellcheck disable=SC2086
  "$1" --log-level warn bench ingest --agents 1000 --targets 300 --rounds 10 --connections 8 \
    --http-threads 10 --port "$port" $ARGS $extra --json 2>/dev/null |
    python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["windows_per_s"], j["cpu_us_per_window"])'
}
results=()
for ((r = 1; r <= ROUNDS; r++)); do
  # A port of its own per run: the previous run's connections may still hold its port.
  pa=$((PORT + 2 * r)) pb=$((PORT + 2 * r + 1))
  if ((r % 2)); then
    read -r a acpu < <(run "$A" $pa "$ARGS_A")
    read -r b bcpu < <(run "$B" $pb "$ARGS_B")
  else
    read -r b bcpu < <(run "$B" $pb "$ARGS_B")
    read -r a acpu < <(run "$A" $pa "$ARGS_A")
  fi
  load=$(cut -d' ' -f1 /proc/loadavg)
  printf 'round %d (load %s): A %.0f/s (%.2f us CPU/window)  B %.0f/s (%.2f us)  B/A %.3f\n' \
    "$r" "$load" "$a" "$acpu" "$b" "$bcpu" "$(python3 -c "print($b/$a)")"
  results+=("$a $b $acpu $bcpu")
done
printf '%s\n' "${results[@]}" | python3 -c '
import statistics, sys
rows = [list(map(float, l.split())) for l in sys.stdin if l.strip()]
med = lambda i: statistics.median(r[i] for r in rows)
ratios = sorted(r[1] / r[0] for r in rows)
print(f"median: A {med(0):.0f}/s ({med(2):.2f} us/window)  B {med(1):.0f}/s ({med(3):.2f} us/window)  "
      f"median B/A {statistics.median(ratios):.3f} (range {ratios[0]:.3f}-{ratios[-1]:.3f}) over {len(rows)} rounds")'
