#!/usr/bin/env bash
# User-space instructions per probe in the prober's event loop, counted by callgrind: repeatable on
# a loaded machine, unlike CPU seconds (docs/BENCHMARKS.md, "Probe and agent"). The gate for changes to the
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
# CACHE=1 also simulates the caches (callgrind --cache-sim=yes; D1 32 KB 8-way as on this host's
# cores, the last level set to one core's L2 here, 1 MB 16-way) and prints, per probe and per
# wake-up of the prober, its first-level data misses (D1mr + D1mw) and last-level ones (DLmr +
# DLmw), counted like the instructions. The simulation sees only the process's own accesses:
# nothing evicts its lines while it sleeps, as the responder and the kernel do on a real core, so
# it counts the misses of the working set a wake-up walks through, not those of a cold wake-up.
# Most LL misses are first touches (a window's histogram rows when it opens on the wall clock's
# 10 s boundary, or not, within the run): read them per round, not as a steady cost.
#   CACHE=1 RATE=1000 DUR=10 ROUNDS=3 bench/probe-callgrind.sh
set -euo pipefail
cd "$(dirname "$0")/.."
WEFT=${WEFT:-build/weft}
ROUNDS=${ROUNDS:-3}
RATE=${RATE:-2000}
DUR=${DUR:-5}
FLOWS=${FLOWS:-1}  # UDP flows per target (issue 24: an agent probes over 8): FLOWS=8 bench/probe-callgrind.sh
command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 1; }
DIR=$(mktemp -d /tmp/weft-probe-cg-XXXXXX)
if [[ -n ${KEEP:-} ]]; then echo "callgrind files kept in $DIR" >&2; else trap 'rm -rf "$DIR"' EXIT; fi
# The first (self) line of a function in callgrind_annotate's inclusive listing, its count (0 if
# the function never ran); a 4th argument picks another column (CACHE=1: Ir D1mr D1mw DLmr DLmw).
inclusive() {
  { grep -m1 -E "^ *[0-9,]+ .*:weft::probe::${3:-Prober}::Impl::$2\(" "$1" || true; } |
    sed -E 's/ \( *[0-9.]+%\)//g; s/ \. / 0 /g' | awk -v c="${4:-1}" '{gsub(",", "", $c); n = $c} END {print n + 0}'
}
# Wake-ups of the process: calls of net::Epoll::wait from the coalescing wait (one per wake-up).
wakeups() {
  callgrind_annotate --tree=caller "$1" 2>/dev/null | awk '
    /< .*CoalescingWait::wait\(.*\([0-9,]+x\)/ { n = $0; sub(/.*\(/, "", n); sub(/x\).*/, "", n); gsub(",", "", n); last = n; next }
    /\* .*net::Epoll::wait\(/ && last != "" && !done { print last; done = 1 }
    !/^ *[0-9,]+ .*< / { last = "" }'
}
# Cache misses of a process's loop per probe: "D1 LL" ((r + w) / n), from an annotate file.
misses() {  # misses FILE FUNCTION CLASS N [MINUS_FUNCTION...]
  local f=$1 fn=$2 cls=$3 n=$4 c d1=0 ll=0 x
  shift 4
  for c in 2 3; do d1=$((d1 + $(inclusive "$f" "$fn" "$cls" $c))); done
  for c in 4 5; do ll=$((ll + $(inclusive "$f" "$fn" "$cls" $c))); done
  for x in "$@"; do
    for c in 2 3; do d1=$((d1 - $(inclusive "$f" "$x" "$cls" $c))); done
    for c in 4 5; do ll=$((ll - $(inclusive "$f" "$x" "$cls" $c))); done
  done
  python3 -c "print(f'{$d1 / $n:.1f} {$ll / $n:.2f}')"
}
results=()
resp_results=()
CHILDREN=no
[[ -n ${RESPONDER:-} ]] && CHILDREN=yes
SIM=()
SHOW=()
if [[ -n ${CACHE:-} ]]; then
  # shellcheck disable=SC2054  # the commas belong to valgrind's options
  SIM=(--cache-sim=yes --D1=32768,8,64 --LL=1048576,16,64)
  # shellcheck disable=SC2054
  SHOW=(--show=Ir,D1mr,D1mw,DLmr,DLmw)
fi
for r in $(seq 1 "$ROUNDS"); do
  json=$(valgrind --tool=callgrind "${SIM[@]}" --trace-children=$CHILDREN --callgrind-out-file="$DIR/cg.$r.%p" "$WEFT" \
    --log-level warn bench probe --protocol udp --rate "$RATE" --targets 100 --flows "$FLOWS" --duration "$DUR" --json 2>"$DIR/log.$r")
  resp=0
  for f in "$DIR"/cg."$r".*; do
    callgrind_annotate --inclusive=yes "${SHOW[@]}" "$f" >"$f.annotate" 2>/dev/null
    if [[ $(inclusive "$f.annotate" loop) -gt 0 ]]; then
      cp "$f.annotate" "$DIR/annotate.$r"
      cp "$f" "$DIR/prober.$r"
    else
      resp=$(inclusive "$f.annotate" loop Responder)
      if [[ $resp -gt 0 ]]; then cp "$f.annotate" "$DIR/resp-annotate.$r"; cp "$f" "$DIR/resp.$r"; fi
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
  if [[ -n ${CACHE:-} ]]; then
    read -r d1 ll < <(misses "$DIR/annotate.$r" loop Prober "$sent" apply_targets emit)
    wakes=$(wakeups "$DIR/prober.$r")
    line="round $r: prober per probe: D1 misses $d1, LL misses $ll; $wakes wake-ups"
    if [[ ${wakes:-0} -gt 0 ]]; then
      read -r wd1 wll < <(misses "$DIR/annotate.$r" loop Prober "$wakes" apply_targets emit)
      line+=" (per wake-up: D1 $wd1, LL $wll, instructions $(( (loop - setup - windows) / wakes )))"
    fi
    if [[ -n ${RESPONDER:-} ]]; then
      read -r rd1 rll < <(misses "$DIR/resp-annotate.$r" loop Responder "$((sent - lost))")
      rwakes=$(wakeups "$DIR/resp.$r")
      line+="; responder per probe: D1 $rd1, LL $rll; $rwakes wake-ups"
    fi
    echo "$line"
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
