#!/usr/bin/env bash
# CPU per probe against the probe rate (issue 17), weft's UDP engine against the kernel floor,
# interleaved: bench/probe-vs-floor.sh at RATES (default 100 300 1000 3000 10000 30000 100000
# probes/s; ROUNDS, DUR and TARGETS as there), then per rate the medians over the rounds as a
# Markdown table (OUT/table.md) and a log-log plot of us of CPU per probe against the rate
# (OUT/probe-cpu-vs-rate.png, gnuplot). OUT defaults to bench/out/probe-cpu-vs-rate.
set -euo pipefail
cd "$(dirname "$0")/.."
export RATES=${RATES:-100 300 1000 3000 10000 30000 100000}
OUT=${OUT:-bench/out/probe-cpu-vs-rate}
mkdir -p "$OUT"
echo "start $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)"
ROWS="$OUT/rows" bench/probe-vs-floor.sh
echo "end $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$OUT/rows" "$OUT/table.md" "$OUT/points.dat" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip() and l.split()[8] == "new"]
out = ["| rate/s | rounds | load | engine % core | floor % core | engine/floor (min-max) | "
       "us CPU per probe: engine | floor | achieved/s (engine) | lost |",
       "|---|---|---|---|---|---|---|---|---|---|"]
pts = []
for rate in sorted({int(r[2]) for r in rows}):
    rs = [r for r in rows if int(r[2]) == rate]
    e = statistics.median(float(r[3]) for r in rs)
    f = statistics.median(float(r[5]) for r in rs)
    ratio = [float(r[3]) / float(r[5]) for r in rs if float(r[5]) > 0]
    ach = statistics.median(float(r[7]) for r in rs)
    per_e = statistics.median(float(r[3]) * 1e4 / float(r[7]) for r in rs if float(r[7]) > 0)
    per_f = statistics.median(float(r[5]) * 1e4 / rate for r in rs)
    loads = [float(r[1]) for r in rs]
    out.append(f"| {rate:,} | {len(rs)} | {min(loads):.1f}-{max(loads):.1f} | {e:.3f} | {f:.3f} | "
               f"{statistics.median(ratio):.2f} ({min(ratio):.2f}-{max(ratio):.2f}) | {per_e:.2f} | {per_f:.2f} | "
               f"{ach:,.0f} | {sum(int(r[4]) for r in rs):,} |")
    pts.append(f"{rate} {per_e:.3f} {per_f:.3f}")
open(sys.argv[2], "w").write("\n".join(out) + "\n")
open(sys.argv[3], "w").write("\n".join(pts) + "\n")
print("\n".join(out))
PY
gnuplot -e "set terminal pngcairo size 900,600 noenhanced; set output '$OUT/probe-cpu-vs-rate.png';
  set logscale xy; set grid; set key top right; set xlabel 'probes per second (100 targets, 100 loopback addresses)';
  set ylabel 'us of CPU per probe (prober + responder)';
  set title 'CPU per probe against rate: weft bench probe (UDP) vs the kernel floor, interleaved, median of rounds';
  plot '$OUT/points.dat' using 1:2 with linespoints lw 2 title 'weft', '' using 1:3 with linespoints lw 2 title 'floor (udp_floor_batched, 5 ms ticks)'" &&
  echo "wrote $OUT/probe-cpu-vs-rate.png"
