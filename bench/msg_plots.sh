#!/usr/bin/env bash
# Plots of the message connections in the Soft-RoCE lab (one guest boot, one pass, busy waits):
# latency CDF per type for 64 B, 4 KiB and 64 KiB (`weft msg bench --cdf`: every sample of the
# run, RTT/2) and bandwidth against size per type. Needs root and gnuplot.
#   bench/msg_plots.sh [WEFT_BINARY] [OUT_DIR] [ITERS]   (default build/weft bench/out/msg-plots 500)
# Writes OUT_DIR/cdf.txt, OUT_DIR/bw.jsonl, OUT_DIR/latency-cdf-SIZE.png, OUT_DIR/bw-vs-size.png.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
weft=${1:-$here/../build/weft}
out=${2:-$here/out/msg-plots}
iters=${3:-500}
mkdir -p "$out"
keep=$(mktemp -d)
trap 'rm -rf "$keep"' EXIT
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg) at $(date -u +%H:%M:%S)"
"$here/../lab/rdma-guest" --timeout "${MSG_BENCH_TIMEOUT:-1800}" --keep "$keep" --bin "$weft" -- "
  port=47400
  for t in send-recv send-recv-srq read-pull simplex-ring magic-ring duplex-ring faa-ring; do
    for mode in latency bandwidth; do
      port=\$((port + 1))
      if [ \$mode = latency ]; then sizes=64,4096,65536; else sizes=64,256,1024,4096,16384,65536; fi
      weft --log-level warn msg bench --server --bind 10.9.0.1 --port \$port --timeout-ms 60000 >/dev/null 2>&1 &
      weft --log-level warn msg bench --client 10.9.0.1 --port \$port --type \$t --mode \$mode --sizes \$sizes \
        --max-message 65536 --iters $iters --warmup 50 --timeout-ms 60000 --json --cdf \$WRD_SHARE/cdf.txt \
        >>\$WRD_SHARE/bw.jsonl
      wait
    done
  done"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg) at $(date -u +%H:%M:%S)"
share=$(find "$keep" -name bw.jsonl -printf '%h\n' | head -1)  # the guest's 9p share, kept
[[ -n $share ]] || { echo "no results from the guest"; exit 1; }
cp "$share"/cdf.txt "$out/cdf.txt"
grep '"mode":"bandwidth"' "$share"/bw.jsonl >"$out/bw.jsonl"
types="send-recv send-recv-srq read-pull simplex-ring magic-ring duplex-ring faa-ring"
for size in 64 4096 65536; do
  plot=""
  for t in $types; do
    f=$out/cdf-$t-$size.txt
    awk -v t=$t -v s=$size '$1 == t && $3 == s { print $4 }' "$out/cdf.txt" >"$f"
    n=$(wc -l <"$f")
    [[ $n -gt 0 ]] && plot+="${plot:+, }'$f' using 1:((\$0+1)/$n) with lines title '$t'"
  done
  gnuplot -e "set terminal pngcairo size 900,600 noenhanced; set output '$out/latency-cdf-$size.png'; set logscale x;
    set xlabel 'latency [us] (RTT/2)'; set ylabel 'fraction'; set key bottom right;
    set title 'weft msg bench, $size B, Soft-RoCE in qemu TCG'; plot $plot" && echo "wrote $out/latency-cdf-$size.png"
done
plot=""
for t in $types; do
  f=$out/bw-$t.txt
  python3 -c "import json,sys
for l in open('$out/bw.jsonl'):
    j = json.loads(l)
    if j['type'] == '$t': print(j['bytes'], j['bw_gbps'] * 1000 / 8)" >"$f"
  plot+="${plot:+, }'$f' using 1:2 with linespoints title '$t'"
done
gnuplot -e "set terminal pngcairo size 900,600 noenhanced; set output '$out/bw-vs-size.png'; set logscale x 2;
  set xlabel 'message size [B]'; set ylabel 'bandwidth [MB/s]'; set key top left;
  set title 'weft msg bench bandwidth vs size, Soft-RoCE in qemu TCG'; plot $plot" && echo "wrote $out/bw-vs-size.png"
