#!/usr/bin/env bash
# Issue 14: one controller holding 10,000 simulated agents (weft bench fleet). Settings, interleaved
# round by round so that all see the same load from the rest of the machine:
#   plain  controller and simulator wherever the scheduler puts them (what a user runs)
#   split  --controller-cpu 0 --sim-cpu 1 (the controller's work apart from the simulator's)
#   nice   split, and the controller's threads at nice -10 (what a controller with cores of its
#          own gets; this machine's 2 cores are shared with other work)
# Usage: [SETTINGS="split nice"] bench/fleet-split.sh BUILD_DIR [ROUNDS] [SECONDS]
#   -> one JSON line per run on stdout, and the medians per setting (with each round's p99) on stderr.
# On an idle machine: SETTINGS="plain split" bench/fleet-split.sh build 5 30
set -euo pipefail
build=${1:?build dir}
rounds=${2:-5}
secs=${3:-30}
settings=${SETTINGS:-split nice}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for r in $(seq 1 "$rounds"); do
  for setting in $settings; do
    case $setting in
      plain) extra=() ;;
      split) extra=(--controller-cpu 0 --sim-cpu 1) ;;
      nice) extra=(--controller-cpu 0 --sim-cpu 1 --controller-nice -10) ;;
      *) echo "unknown setting '$setting' (plain, split, nice)" >&2; exit 2 ;;
    esac
    line=$("$build/weft" --log-level error bench fleet --agents 10000 --targets 100 --seconds "$secs" \
      "${extra[@]}" --json 2>/dev/null || true)
    [[ -n $line ]] || line='{}'
    echo "{\"round\": $r, \"setting\": \"$setting\", \"result\": $line}" | tee -a "$out"
  done
done
python3 - "$out" "$settings" >&2 <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
kinds = ["api_healthz", "api_mesh_rack", "api_register", "report_health_only", "report_windows",
         "register", "pinglist"]
for setting in sys.argv[2].split():
    rs = [r["result"] for r in runs if r["setting"] == setting and r["result"]]
    if not rs:
        continue
    print(f"{setting}: {len(rs)} rounds")
    for k in kinds:
        p50 = statistics.median(r["latency"][k]["p50_ms"] for r in rs)
        p99 = [round(r["latency"][k]["p99_ms"], 1) for r in rs]
        print(f"  {k:20s} median p50 {p50:8.1f} ms  median p99 {statistics.median(p99):8.1f} ms  per round {p99}")
    for f in ("controller_cpu_percent", "controller_rss_hwm_kb", "rss_per_agent_bytes", "register_all_s",
              "first_suspects_ms", "first_metrics_ms", "load_average_start", "load_average_end"):
        print(f"  {f:28s} median {statistics.median(r[f] for r in rs):10.1f}")
    for f in ("registered", "agents_up", "pairs_held", "request_errors"):
        print(f"  {f:28s} per round {[r.get(f) for r in rs]}")
    answered = [r["latency"]["report_health_only"]["count"] + r["latency"]["report_windows"]["count"] for r in rs]
    print(f"  reports answered per round (agents x seconds scheduled): {answered}")
PY
