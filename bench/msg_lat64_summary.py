#!/usr/bin/env python3
"""Reads bench/msg_lat64_slots.sh output on stdin: per round, each run's t_min and t_typical over
ib_send_lat's of the same round; prints the median and range of those ratios and the t_typical
values themselves (on the TCG guest they sit on a grid of scheduler ticks)."""
import statistics
import sys

rounds = []
for line in sys.stdin:
    f = line.split()
    if not f:
        continue
    if f[0] == "PT" and f[1] == "ib_send_lat":
        rounds.append({})
    if not rounds:
        continue
    if f[0] == "PT":  # PT tool bytes iters t_min t_max t_typical ...
        rounds[-1][f[1]] = (float(f[4]), float(f[6]))
    elif f[0] == "W":  # W slots=N type bytes iters t_min t_max t_typical ...
        rounds[-1][f"{f[2]} slots {f[1][6:]}"] = (float(f[5]), float(f[7]))
print(f"{len(rounds)} rounds; ratios to ib_send_lat of the same round")
for key in rounds[0]:
    rs = [r for r in rounds if key in r and "ib_send_lat" in r]
    mins = [r[key][0] / r["ib_send_lat"][0] for r in rs]
    typ = [r[key][1] / r["ib_send_lat"][1] for r in rs]
    grid = sorted(round(r[key][1] / 1000, 1) for r in rs)
    print(f"{key:24s} t_min {statistics.median(mins):.2f} ({min(mins):.2f}-{max(mins):.2f})  "
          f"t_typical {statistics.median(typ):.2f} ({min(typ):.2f}-{max(typ):.2f})  t_typical ms {grid}")
