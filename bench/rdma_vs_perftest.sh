#!/usr/bin/env bash
# `weft rdma bench` against perftest in the Soft-RoCE qemu lab: one guest boot, every perftest
# latency and bandwidth test and the matching weft test interleaved ROUNDS times (the order
# swapped every round), then per test the median over rounds of each tool's figures and the
# median of the per-round ratios weft/perftest. Targets (docs/BENCHMARKS.md): latency t_typical
# and t_min <= 1.05x perftest's; bandwidth BW average and MsgRate >= 0.95x. Needs root.
#   bench/rdma_vs_perftest.sh [ROUNDS] [OUT_DIR]     (default 5, bench/out/rdma-vs-perftest)
# Environment: ONLY="faa_lat cas_lat ..." runs some tests only, SWEEP=0 skips the -a sweeps,
# TWO=1 runs across two guests (lab/rdma-guest --two: servers in guest 0, clients in guest 1; no sweeps),
# LAT_N / BW_N iterations, TABLE_ONLY=1 remakes table and plots from OUT_DIR/results.
# Writes OUT_DIR/results (raw), OUT_DIR/table.md, and with gnuplot OUT_DIR/latency-cdf.png and
# OUT_DIR/bw-vs-size.png.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
outdir=${2:-bench/out/rdma-vs-perftest}
weft=${WEFT:-build/weft}
[[ -x $weft ]] || { echo "build $weft first (cmake --build build --target weft)"; exit 2; }
mkdir -p "$outdir"
# TABLE_ONLY=1: only (re)make the table and plots from OUT_DIR/results.
if [[ ${TABLE_ONLY:-0} != 1 ]]; then
keep=$(mktemp -d)
trap 'rm -rf "$keep"' EXIT
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
# The lab image has ib_send_lat only: bring the other perftest programs (and their libraries).
pt_bins=()
for p in ib_write_lat ib_read_lat ib_atomic_lat ib_send_bw ib_write_bw ib_read_bw ib_atomic_bw; do
  pt_bins+=(--bin "$(command -v $p)")
done
two=(); [[ ${TWO:-0} == 1 ]] && two=(--two)
lab/rdma-guest "${two[@]}" --timeout "${TIMEOUT:-1500}" --keep "$keep" --bin "$weft" --bin bench/rdma_vs_perftest.guest "${pt_bins[@]}" \
  -- "LAT_N=${LAT_N:-1000} BW_N=${BW_N:-1000} SWEEP=${SWEEP:-1} ONLY='${ONLY:-}' sh /usr/local/bin/rdma_vs_perftest.guest $rounds"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
share=$(find "$keep" -name results -printf '%h\n' | head -1)
cp "$share"/results "$share"/cdf-*.txt "$share"/sweep-*.txt "$outdir"/ 2>/dev/null || true
fi

# Per test: medians of each tool's figures and the median of per-round ratios.
awk '
function median(list,   n, a, i, j, t) {
  n = split(list, a, " ")
  for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
  return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{
  key = $2; if (!(key in tests)) order[++ntests] = key; tests[key] = 1; size[key] = $4
  if (NF == 9) { lat[key] = 1; f[key, $3, $1, "min"] = $5; f[key, $3, $1, "typ"] = $6; f[key, $3, $1, "p99"] = $8; f[key, $3, $1, "p999"] = $9 }
  else { f[key, $3, $1, "avg"] = $6; f[key, $3, $1, "rate"] = $7; f[key, $3, $1, "peak"] = $5 }
  rounds[key, $1] = 1
}
END {
  print "| test | size | figure | perftest (median) | weft (median) | weft/perftest (median of rounds) | target | met |"
  print "|---|---|---|---|---|---|---|---|"
  for (k = 1; k <= ntests; k++) {
    key = order[k]
    split(lat[key] ? "typ min p99 p999" : "avg rate peak", figs, " ")
    for (q = 1; q in figs; q++) {
      fig = figs[q]; pl = ""; wl = ""; rl = ""
      for (r = 1; r <= 100; r++) {
        if (!((key, r) in rounds)) continue
        p = f[key, "perftest", r, fig]; w = f[key, "weft", r, fig]
        if (p == "" || w == "") continue
        pl = pl " " p; wl = wl " " w; if (p > 0) rl = rl " " (w / p)
      }
      if (rl == "") continue
      ratio = median(rl)
      target = ""; met = ""
      if (lat[key] && (fig == "typ" || fig == "min")) { target = "<= 1.05"; met = ratio <= 1.05 ? "yes" : "NO" }
      if (!lat[key] && (fig == "avg" || fig == "rate")) { target = ">= 0.95"; met = ratio >= 0.95 ? "yes" : "NO" }
      name = fig == "typ" ? "t_typical us" : fig == "min" ? "t_min us" : fig == "p99" ? "p99 us" : fig == "p999" ? "p99.9 us" : fig == "avg" ? "BW avg MB/s" : fig == "rate" ? "MsgRate Mpps" : "BW peak MB/s"
      printf "| %s | %s | %s | %.4g | %.4g | %.3f | %s | %s |\n", key, size[key], name, median(pl), median(wl), ratio, target, met
    }
  }
}' "$outdir/results" | tee "$outdir/table.md"

if command -v gnuplot >/dev/null; then
  cdfs=$(find "$outdir" -name "cdf-*.txt" -size +0 | sort)
  if [[ -n $cdfs ]]; then
    plot=""
    for f in $cdfs; do
      n=$(wc -l <"$f")
      name=$(basename "$f" .txt); name=${name#cdf-}
      plot+="${plot:+, }'$f' using 2:(\$0/$n) with lines title '$name'"
    done
    gnuplot -e "set terminal pngcairo size 900,600 noenhanced; set output '$outdir/latency-cdf.png'; set logscale x;
      set xlabel 'latency [us] (RTT/2 send/write, RTT read/atomic)'; set ylabel 'fraction'; set key bottom right;
      set title 'weft rdma bench latency CDF, Soft-RoCE in qemu TCG'; plot $plot" && echo "wrote $outdir/latency-cdf.png"
  fi
  if [[ -s $outdir/sweep-weft.txt && -s $outdir/sweep-perftest.txt ]]; then
    gnuplot -e "set terminal pngcairo size 900,600 noenhanced; set output '$outdir/bw-vs-size.png'; set logscale x 2;
      set xlabel 'message size [B]'; set ylabel 'BW average [MB/s]'; set key top left;
      set title 'RDMA WRITE bandwidth vs size, Soft-RoCE in qemu TCG';
      plot '$outdir/sweep-perftest.txt' using 1:2 with linespoints title 'ib_write_bw',
           '$outdir/sweep-weft.txt' using 1:2 with linespoints title 'weft rdma bench'" && echo "wrote $outdir/bw-vs-size.png"
  fi
fi
