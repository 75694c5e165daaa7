#!/usr/bin/env python3
"""Plot of bench/stack_apps.sh's ratios: one row per program and setting, weft against the kernel.

usage: bench/stack_apps_plot.py OUT.png RUNS [RUNS...]
  RUNS: files bench/stack_apps.sh kept with RUNS=path (lines: ROUND MODE FIGURE VALUE); several
  runs (e.g. TESTS=socat apart) are drawn together. Needs gnuplot.

Each round's ratio is taken within the round (weft's figure over the kernel's), then drawn as a
dot, and the median over the rounds as a bar. Latencies are drawn as kernel / weft, so that on
every row right of 1 means weft did better. Figures a round has no number for (nan) are left out.
"""
import math
import os
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict


def read_runs(paths):
    values = defaultdict(dict)  # (file index, round, figure) -> {mode: value}
    for i, path in enumerate(paths):
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) != 4:
                    continue
                rnd, mode, fig, val = parts
                try:
                    v = float(val)
                except ValueError:
                    continue
                if math.isfinite(v) and v > 0:
                    values[(i, rnd, fig)][mode] = v
    ratios = defaultdict(list)  # figure -> per-round ratios, higher is better for weft
    for (_, _, fig), modes in values.items():
        if "weft" not in modes or "kernel" not in modes:
            continue
        r = modes["weft"] / modes["kernel"]
        ratios[fig].append(1 / r if fig.endswith("_ms") else r)
    return ratios


def label(fig):
    if fig.endswith("_ms"):
        return fig.replace("_ms", "") + " (kernel/weft)"
    return fig.replace("_rps", "")


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out, paths = sys.argv[1], sys.argv[2:]
    ratios = read_runs(paths)
    if not ratios:
        sys.exit("no figure has both a weft and a kernel number in " + " ".join(paths))
    figs = sorted(ratios)
    with tempfile.TemporaryDirectory() as tmp:
        dots, medians = os.path.join(tmp, "dots"), os.path.join(tmp, "medians")
        with open(dots, "w") as d, open(medians, "w") as m:
            for y, fig in enumerate(figs):
                for r in ratios[fig]:
                    d.write(f"{r} {y}\n")
                m.write(f"{statistics.median(ratios[fig])} {y}\n")
        ytics = ", ".join(f'"{label(f)}" {y}' for y, f in enumerate(figs))
        lo = min(min(v) for v in ratios.values())
        hi = max(max(v) for v in ratios.values())
        script = f"""
set terminal pngcairo size 1000,{140 + 26 * len(figs)} noenhanced
set output '{out}'
set title 'weft / kernel per round (dots) and median (bar): right of 1 is weft ahead'
set logscale x 2
set xrange [{min(lo, 0.5) / 1.2}:{max(hi, 2.0) * 1.2}]
set yrange [-1:{len(figs)}]
set ytics ({ytics})
set grid xtics
set arrow from 1, graph 0 to 1, graph 1 nohead lw 2 lc rgb 'black'
set key off
plot '{medians}' using 1:($2-0.38):(0):(0.76) with vectors nohead lw 4 lc rgb '#1f77b4', \\
     '{dots}' using 1:2 with points pt 7 ps 0.8 lc rgb '#ff7f0e'
"""
        subprocess.run(["gnuplot"], input=script, text=True, check=True)
    for fig in figs:
        v = ratios[fig]
        print(f"{label(fig):40s} median {statistics.median(v):5.2f}  min {min(v):5.2f}  max {max(v):5.2f}  rounds {len(v)}")


if __name__ == "__main__":
    main()
