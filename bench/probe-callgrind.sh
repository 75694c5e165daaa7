#!/usr/bin/env bash
# User-space instructions per probe in the prober's event loop, counted by callgrind: repeatable on
# a loaded machine, unlike CPU seconds (docs/BENCHMARKS.md, "Probe"). The gate for changes to the
# engine's layout (issue 16: the prober split must not cost more than 1 %): inclusive cost of
# Prober::Impl::loop minus the one-off Prober::Impl::apply_targets (target set-up, table growth)
# and minus Prober::Impl::emit (closing windows: 10 s windows on the wall clock's boundaries close
# in some rounds and not in others), divided by probes sent. 2,000 probes/s by default: at
# 10,000/s a prober slowed down by valgrind falls behind on a loaded machine, its batches grow and
# the count drops with the load. The responder is a child process and not traced. System calls are not in
# the count. Prints one line per round and the median; with LIMIT=N exits 1 when the median is
# above N. ~10 s a round. RESPONDER=1 also traces the responder (valgrind follows its exec) and
# prints its instructions per probe: inclusive cost of Responder::Impl::loop divided by probes
# answered (sent - lost; replies and follow-ups included). Valgrind's start-up of the responder
# outlasts the bench's 300 ms wait, so the first seconds' probes are lost, and the prober, with fewer
# replies to match, counts less than without RESPONDER: take the prober's figure from a run without.
#   ROUNDS=5 bench/probe-callgrind.sh                  # WEFT=build/weft by default
#   LIMIT=1412 WEFT=/tmp/weft-new bench/probe-callgrind.sh
#   RESPONDER=1 ROUNDS=5 bench/probe-callgrind.sh
set -euo pipefail
cd "$(dirname "$0")/.."
WEFT=${WEFT:-build/weft}
ROUNDS=${ROUNDS:-3}
RATE=${RATE:-2000}
DUR=${DUR:-5}
command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 1; }
DIR=$(mktemp -d /tmp/weft-probe-cg-XXXXXX)
if [[ -n ${KEEP:-} ]]; then echo "callgrind files kept in $DIR" >&2; else trap 'rm -rf "$DIR"' EXIT; fi
# The first (self) line of a function in callgrind_annotate's inclusive listing, its count (0 if
# the function never ran).
inclusive() {
  { grep -m1 -E "^ *[0-9,]+ .*:weft::probe::${3:-Prober}::Impl::$2\(" "$1" || true; } | awk '{gsub(",", "", $1); n = $1} END {print n + 0}'
}
results=()
resp_results=()
CHILDREN=no
[[ -n ${RESPONDER:-} ]] && CHILDREN=yes
for r in $(seq 1 "$ROUNDS"); do
  json=$(valgrind --tool=callgrind --trace-children=$CHILDREN --callgrind-out-file="$DIR/cg.$r.%p" "$WEFT" \
    --log-level warn bench probe --protocol udp --rate "$RATE" --targets 100 --duration "$DUR" --json 2>"$DIR/log.$r")
  resp=0
  for f in "$DIR"/cg."$r".*; do
    callgrind_annotate --inclusive=yes "$f" >"$f.annotate" 2>/dev/null
    if [[ $(inclusive "$f.annotate" loop) -gt 0 ]]; then
      cp "$f.annotate" "$DIR/annotate.$r"
    else
      resp=$(inclusive "$f.annotate" loop Responder)
    fi
  done
  sent=$(sed -E 's/.*"sent":([0-9]+).*/\1/' <<<"$json")
  lost=$(sed -E 's/.*"lost":([0-9]+).*/\1/' <<<"$json")
  loop=$(inclusive "$DIR/annotate.$r" 'loop')
  setup=$(inclusive "$DIR/annotate.$r" 'apply_targets')
  windows=$(inclusive "$DIR/annotate.$r" 'emit')
  [[ $loop -gt 0 && $setup -gt 0 && $sent -gt 0 ]] || { echo "round $r: no count (see $DIR)" >&2; KEEP=1; exit 1; }
  per=$(( (loop - setup - windows) / sent ))
  results+=("$per")
  if [[ -n ${RESPONDER:-} ]]; then
    [[ $resp -gt 0 && $sent -gt $lost ]] || { echo "round $r: no responder count (see $DIR)" >&2; KEEP=1; exit 1; }
    echo "round $r: $per instructions per probe, responder $((resp / (sent - lost))) (sent $sent, lost $lost)"
    resp_results+=("$((resp / (sent - lost)))")
  else
    echo "round $r: $per instructions per probe (sent $sent, lost $lost)"
  fi
done
med() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
median=$(med "${results[@]}")
if [[ -n ${RESPONDER:-} ]]; then
  echo "{\"instructions_per_probe_median\": $median, \"responder_instructions_per_probe_median\": $(med "${resp_results[@]}"), \"rounds\": $ROUNDS, \"rate\": $RATE}"
else
  echo "{\"instructions_per_probe_median\": $median, \"rounds\": $ROUNDS, \"rate\": $RATE}"
fi
if [[ -n ${LIMIT:-} && $median -gt $LIMIT ]]; then
  echo "FAIL: $median instructions per probe > limit $LIMIT" >&2
  exit 1
fi
