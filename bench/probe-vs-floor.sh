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
# engine/floor, and the CPU per probe (us of CPU per probe achieved: engine and floor). ROUNDS
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
cc -O2 -o "$tmp/floor" bench/udp_floor_batched.c
WEFT_REF=${WEFT_REF:-}
engine() {  # engine RATE [BIN] -> "cpu lost achieved"
  "${2:-$WEFT}" --log-level warn bench probe --protocol udp --rate "$1" --targets "$TARGETS" --duration "$DUR" --json |
    python3 -c 'import json,sys; d=json.load(sys.stdin); print(round(d["cpu_percent_prober"]+d["cpu_percent_responder"],2), d["lost"], d["rate_achieved"])'
}
floor() {  # floor RATE -> cpu
  "$tmp/floor" "$1" "$DUR" 5000 2 "$TARGETS" |
    python3 -c 'import json,sys; d=json.load(sys.stdin); print(round(d["cpu_percent_client"]+d["cpu_percent_server"],2))'
}
printf '%-8s %-6s %-6s %-8s %-6s %-7s %-6s %-8s %s\n' time load rate engine lost floor ratio achieved build
for round in $(seq "$ROUNDS"); do
  for r in $RATES; do
    # With WEFT_REF the two builds take turns going first, so neither always follows the floor.
    if [[ -n $WEFT_REF ]] && ((round % 2)); then read -r eref lostref achref < <(engine "$r" "$WEFT_REF"); fi
    read -r e lost achieved < <(engine "$r")
    if [[ -n $WEFT_REF ]] && ! ((round % 2)); then read -r eref lostref achref < <(engine "$r" "$WEFT_REF"); fi
    f=$(floor "$r")
    for b in ${WEFT_REF:+ref} new; do
      if [[ $b == ref ]]; then be=$eref bl=$lostref ba=$achref; else be=$e bl=$lost ba=$achieved; fi
      printf '%-8s %-6s %-6s %-8s %-6s %-7s %-6s %-8s %s\n' "$(date +%T)" "$(cut -d' ' -f1 /proc/loadavg)" "$r" "$be" "$bl" \
        "$f" "$(python3 -c "print(round($be / $f, 2) if $f > 0 else 'inf')")" "$ba" "$b" | tee -a "$tmp/rows"
    done
  done
done
python3 - "$tmp/rows" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
for rate, build in dict.fromkeys((r[2], r[8]) for r in rows):
    rs = [r for r in rows if r[2] == rate and r[8] == build]
    e = [float(r[3]) for r in rs]
    f = [float(r[5]) for r in rs]
    ratio = [a / b for a, b in zip(e, f) if b > 0]
    # CPU per probe: % of a core is 10,000 us of CPU per second, over the probes sent per second.
    per = [float(r[3]) * 1e4 / float(r[7]) for r in rs if float(r[7]) > 0]
    per_f = [float(r[5]) * 1e4 / float(rate) for r in rs]
    print(f"median rate {rate:>6} {build:>3}: engine {statistics.median(e):.2f}%  floor {statistics.median(f):.2f}%  "
          f"engine/floor {statistics.median(ratio):.2f} (min {min(ratio):.2f}, max {max(ratio):.2f})  "
          f"us/probe engine {statistics.median(per):.2f} floor {statistics.median(per_f):.2f}  "
          f"lost {sum(int(r[4]) for r in rs)}  rounds {len(rs)}")
PY
if [[ -n ${ROWS:-} ]]; then cp "$tmp/rows" "$ROWS"; fi
