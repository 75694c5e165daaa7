#!/usr/bin/env bash
# Probe engine: a prober and a `weft responder` on loopback (docs/BENCHMARKS.md, "Probe and agent").
# Prints one JSON object per run: UDP at 10,000 probes/s to 100 targets (with and without the
# responder's follow-ups), UDP at 100,000 probes/s, TCP connect probes at 1,000/s, and the
# cheapest UDP echoes for calibration: per packet (bench/udp_floor.c) and batched with the engine's
# kernel timestamps and wake-up rate (bench/udp_floor_batched.c).
set -euo pipefail
cd "$(dirname "$0")/.."
WEFT=${WEFT:-build/weft}
DUR=${DUR:-10}
run() { "$WEFT" --log-level warn bench probe "$@" --duration "$DUR" --json; }
run --protocol udp --rate 10000 --targets 100
run --protocol udp --rate 10000 --targets 100 --no-followups
run --protocol udp --rate 100000 --targets 100
run --protocol tcp --rate 1000 --targets 100
if command -v cc >/dev/null; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  cc -O2 -o "$tmp/udp_floor" bench/udp_floor.c && "$tmp/udp_floor" 10000 "$DUR"
  # The same datagrams, stamps, wake-up rate (5 ms) and 100 target addresses as the engine at
  # 10,000/s, nothing else.
  cc -O2 -o "$tmp/udp_floor_batched" bench/udp_floor_batched.c && "$tmp/udp_floor_batched" 10000 "$DUR" 5000 2 100
fi
