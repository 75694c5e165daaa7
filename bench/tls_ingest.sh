#!/usr/bin/env bash
# Issue 25: what HTTPS costs the controller's ingest. `weft bench ingest` (1,000 agents x 300
# targets x 10 rounds of binary reports over 8 kept-open connections, the embedded SQLite store)
# plain, then with --tls (the controller serves a throw-away self-signed P-256 certificate; TLS 1.3),
# back to back in every round. One line per run, then the medians and the median of the per-round
# ratios TLS / plain of pair-windows/s and of the controller's CPU time per window.
# ROUNDS (default 5), AGENTS (1000), TARGETS (300). Loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."
WEFT=$(readlink -f "${WEFT:-build/weft}")
ROUNDS=${ROUNDS:-5}
AGENTS=${AGENTS:-1000}
TARGETS=${TARGETS:-300}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for r in $(seq "$ROUNDS"); do
  for mode in plain tls; do
    flag=()
    [[ $mode == tls ]] && flag=(--tls)
    load=$(cut -d' ' -f1 /proc/loadavg)
    line=$("$WEFT" --log-level warn bench ingest --agents "$AGENTS" --targets "$TARGETS" "${flag[@]}" --json | tail -1)
    echo "$r $mode $load $line" | tee -a "$out"
  done
done
python3 - "$out" <<'PY'
import json, statistics as st, sys
runs = {}
for line in open(sys.argv[1]):
    r, mode, load, js = line.split(" ", 3)
    runs.setdefault(r, {})[mode] = json.loads(js)
rounds = [d for d in runs.values() if "plain" in d and "tls" in d]
med = lambda xs: st.median(xs)
for key, name in (("windows_per_s", "pair-windows/s"), ("cpu_us_per_window", "controller CPU us/window")):
    p = [d["plain"][key] for d in rounds]
    t = [d["tls"][key] for d in rounds]
    ratio = [d["tls"][key] / d["plain"][key] for d in rounds]
    print(f"{name}: plain {med(p):.4g}, tls {med(t):.4g}, tls/plain {med(ratio):.3f} "
          f"(per round {', '.join(f'{x:.3f}' for x in ratio)}; {len(rounds)} rounds)")
PY
