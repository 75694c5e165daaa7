#!/usr/bin/env bash
# Issue 14: one controller holding 10,000 simulated agents (weft bench fleet), on a machine left to
# it. Two settings interleaved round by round:
#   plain  controller and simulator wherever the scheduler puts them (what a user runs)
#   split  --controller-cpu 0 --sim-cpu 1 (the controller's work apart from the simulator's)
# Usage: bench/fleet-quiet.sh BUILD_DIR [ROUNDS] [SECONDS]  -> one JSON line per run on stdout,
# and the medians per setting on stderr.
set -euo pipefail
build=${1:?build dir}
rounds=${2:-5}
secs=${3:-30}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for r in $(seq 1 "$rounds"); do
  for setting in plain split; do
    extra=()
    [[ $setting == split ]] && extra=(--controller-cpu 0 --sim-cpu 1)
    line=$("$build/weft" --log-level error bench fleet --agents 10000 --targets 100 --seconds "$secs" \
      "${extra[@]}" --json 2>/dev/null || true)
    [[ -n $line ]] || line='{}'
    echo "{\"round\": $r, \"setting\": \"$setting\", \"result\": $line}" | tee -a "$out"
  done
done
python3 - "$out" >&2 <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
kinds = ["api_healthz", "api_mesh_rack", "api_register", "report_health_only", "report_windows",
         "register", "pinglist"]
for setting in ("plain", "split"):
    rs = [r["result"] for r in runs if r["setting"] == setting and r["result"]]
    if not rs:
        continue
    print(f"{setting}: {len(rs)} rounds")
    for k in kinds:
        p50 = statistics.median(r["latency"][k]["p50_ms"] for r in rs)
        p99 = [round(r["latency"][k]["p99_ms"], 1) for r in rs]
        print(f"  {k:20s} median p50 {p50:8.2f} ms  median p99 {statistics.median(p99):8.2f} ms  per round {p99}")
    for f in ("registered", "agents_up", "pairs_held", "request_errors", "controller_cpu_percent",
              "controller_rss_hwm_kb", "rss_per_agent_bytes", "rss_per_connection_bytes", "register_all_s",
              "first_suspects_ms", "first_metrics_ms", "load_average_start", "load_average_end"):
        print(f"  {f:26s} {[r.get(f) for r in rs]}")
PY
