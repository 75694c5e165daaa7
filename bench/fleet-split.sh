#!/usr/bin/env bash
# Issue 14: one controller holding 10,000 simulated agents (weft bench fleet), with the controller and
# the simulator on separate CPUs. Two settings, interleaved round by round so that both see the same
# load from the rest of the machine:
#   split  --controller-cpu 0 --sim-cpu 1
#   nice   the same, and the controller's threads at nice -10 (what a controller with cores of its
#          own gets; this machine's 2 cores are shared with other work)
# Usage: bench/fleet-split.sh BUILD_DIR [ROUNDS] [SECONDS]  -> one JSON line per run on stdout,
# and a summary (median per setting) on stderr.
set -euo pipefail
build=${1:?build dir}
rounds=${2:-5}
secs=${3:-30}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for r in $(seq 1 "$rounds"); do
  for setting in split nice; do
    extra=()
    [[ $setting == nice ]] && extra=(--controller-nice -10)
    line=$("$build/weft" --log-level error bench fleet --agents 10000 --targets 100 --seconds "$secs" \
      --controller-cpu 0 --sim-cpu 1 "${extra[@]}" --json 2>/dev/null || true)
    [[ -n $line ]] || line='{}'
    echo "{\"round\": $r, \"setting\": \"$setting\", \"result\": $line}" | tee -a "$out"
  done
done
python3 - "$out" >&2 <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
kinds = ["api_healthz", "api_mesh_rack", "api_register", "report_health_only", "report_windows"]
for setting in ("split", "nice"):
    rs = [r["result"] for r in runs if r["setting"] == setting and r["result"]]
    if not rs:
        continue
    print(f"{setting}: {len(rs)} rounds")
    for k in kinds:
        p50 = statistics.median(r["latency"][k]["p50_ms"] for r in rs)
        p99 = statistics.median(r["latency"][k]["p99_ms"] for r in rs)
        print(f"  {k:20s} median p50 {p50:8.1f} ms  median p99 {p99:8.1f} ms")
    for f in ("controller_cpu_percent", "controller_rss_hwm_kb", "rss_per_agent_bytes", "register_all_s",
              "first_suspects_ms", "first_metrics_ms", "load_average_start", "load_average_end"):
        print(f"  {f:28s} median {statistics.median(r[f] for r in rs):10.1f}")
    answered = [r["latency"]["report_health_only"]["count"] + r["latency"]["report_windows"]["count"] for r in rs]
    print(f"  reports answered per round (agents x seconds scheduled): {answered}")
PY
