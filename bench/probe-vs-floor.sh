#!/usr/bin/env bash
# The probe engine's CPU against the kernel's own price for the same datagrams, interleaved so that
# both see the same machine (on a shared virtual machine the price of a datagram drifts by a few
# points of a core from minute to minute; a lone run of either says little).
# For each round and each rate in RATES (default 100 1000 10000 probes/s), back to back:
#   engine  weft bench probe --protocol udp --rate R --targets 100 (prober + responder CPU), each
#           target on its own loopback address (the bench's default)
#   floor   bench/udp_floor_batched.c at the same rate to the same 100 addresses: 5 ms wake-ups on
#           both sides, kernel rx + tx stamps read back, no wire format, no follow-ups, no windows
# One line per round and rate, then per rate the medians and the median of the per-round ratios
# engine/floor, and the CPU per probe (us of CPU per probe achieved: engine and floor). CPU is read
# from each process's CPU-time clock (ns) on both sides and printed to 0.001 % of a core; the floor
# and the summary are bench/lib/floor.sh's (shared with bench/agent-vs-floor.sh). ROUNDS
# (default 5), DUR seconds (default 10), TARGETS (default 100); ROWS=FILE keeps the per-round rows
# (bench/probe-cpu-vs-rate.sh reads them). WEFT_REF=BIN (optional): each round also runs that
# binary's engine next to WEFT's (rows marked "ref"; the two take turns going first), so that a
# change is compared with its parent in the same minutes.

set -euo pipefail
cd "$(dirname "$0")/.."
WEFT=${WEFT:-build/weft}
ROUNDS=${ROUNDS:-5}
DUR=${DUR:-10}
TARGETS=${TARGETS:-100}
RATES=${RATES:-100 1000 10000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source bench/lib/floor.sh
floor_build
WEFT_REF=${WEFT_REF:-}
engine() {  # engine RATE [BIN] -> "cpu lost achieved"
  "${2:-$WEFT}" --log-level warn bench probe --protocol udp --rate "$1" --targets "$TARGETS" --duration "$DUR" --json |
    python3 -c 'import json,sys; d=json.load(sys.stdin); print(round(d["cpu_percent_prober"]+d["cpu_percent_responder"],3), d["lost"], d["rate_achieved"])'
}
echo "start $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)"
floor_header
for round in $(seq "$ROUNDS"); do
  for r in $RATES; do
    # With WEFT_REF the two builds take turns going first, so neither always follows the floor.
    if [[ -n $WEFT_REF ]] && ((round % 2)); then read -r eref lostref achref < <(engine "$r" "$WEFT_REF"); fi
    read -r e lost achieved < <(engine "$r")
    if [[ -n $WEFT_REF ]] && ! ((round % 2)); then read -r eref lostref achref < <(engine "$r" "$WEFT_REF"); fi
    f=$(floor "$r")
    if [[ -n $WEFT_REF ]]; then floor_row "$r" "$eref" "$lostref" "$f" "$achref" ref; fi
    floor_row "$r" "$e" "$lost" "$f" "$achieved" new
  done
done
echo "end $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)"
floor_summary engine
if [[ -n ${ROWS:-} ]]; then cp "$tmp/rows" "$ROWS"; fi
