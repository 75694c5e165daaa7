#!/usr/bin/env bash
# Issue 25: what HTTPS costs a controller holding a fleet. `weft bench fleet` (10,000 simulated agents
# on kept-open connections, each reporting every second, 100 targets' windows every 10 s, plus an
# API client) plain, then with --tls (the controller serves a throw-away self-signed certificate;
# one handshake per agent connection, before the measured run), back to back in every round. One
# line per run, then the medians and the median of the per-round ratios TLS / plain of the
# controller's CPU during the run, the API's p99 (healthz, a rack's mesh, a registration) and the
# health-only report's p99, and the RSS per connection.
# ROUNDS (default 5), AGENTS (10000), DURATION seconds (20). Loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."
WEFT=$(readlink -f "${WEFT:-build/weft}")
ROUNDS=${ROUNDS:-5}
AGENTS=${AGENTS:-10000}
DURATION=${DURATION:-20}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for r in $(seq "$ROUNDS"); do
  for mode in plain tls; do
    flag=()
    [[ $mode == tls ]] && flag=(--tls)
    load=$(cut -d' ' -f1 /proc/loadavg)
    line=$("$WEFT" --log-level warn bench fleet --agents "$AGENTS" --targets 100 --seconds "$DURATION" \
      "${flag[@]}" --json | tail -1)
    echo "$r $mode $load $line" | tee -a "$out"
  done
done
python3 "$(dirname "$0")/tls_fleet_summary.py" "$out"
