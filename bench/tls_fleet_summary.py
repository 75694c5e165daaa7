#!/usr/bin/env python3
"""Summary of bench/tls_fleet.sh's lines ("ROUND plain|tls LOAD JSON"): medians and the median of the
per-round ratios TLS / plain."""
import json
import statistics as st
import sys

def cpu_us_per_report(j):
    """Controller CPU time over the run per report answered: unlike the CPU %, it does not drop when a
    loaded machine gives the controller less time (the agents then send fewer reports, late)."""
    reports = j["latency"]["report_health_only"]["count"] + j["latency"]["report_windows"]["count"]
    return j["controller_cpu_percent"] / 100 * j["seconds"] * 1e6 / reports


FIGURES = [
    ("controller CPU us per report", cpu_us_per_report),
    ("controller CPU %", lambda j: j["controller_cpu_percent"]),
    ("API p99 ms (healthz, rack mesh, register)",
     lambda j: max(j["latency"][k]["p99_ms"] for k in ("api_healthz", "api_mesh_rack", "api_register"))),
    ("health-only report p99 ms", lambda j: j["latency"]["report_health_only"]["p99_ms"]),
    ("RSS per connection bytes", lambda j: j["rss_per_connection_bytes"]),
]

runs = {}
for line in open(sys.argv[1]):
    r, mode, load, js = line.split(" ", 3)
    if js.strip():
        runs.setdefault(r, {})[mode] = json.loads(js)
rounds = [d for d in runs.values() if "plain" in d and "tls" in d]
for name, f in FIGURES:
    p = [f(d["plain"]) for d in rounds]
    t = [f(d["tls"]) for d in rounds]
    ratio = [f(d["tls"]) / f(d["plain"]) for d in rounds if f(d["plain"])]
    print(f"{name}: plain {st.median(p):.4g}, tls {st.median(t):.4g}, tls/plain {st.median(ratio):.3f} "
          f"(per round {', '.join(f'{x:.2f}' for x in ratio)}; {len(rounds)} rounds)")
errors = sum(d[m]["request_errors"] for d in rounds for m in ("plain", "tls"))
print(f"request errors over all runs: {errors}")
