#!/usr/bin/env bash
# Memory of a responder and a prober process (issue 17: "RSS per process stated"), the full `weft`
# executable against the lean `weft-probe`, at each rate in RATES (default 1000 10000 probes/s).
# For each build and rate: a responder on 0.0.0.0 (ephemeral ports), and `ping udp` (or PROTO=tcp)
# to TARGETS (default 100) targets on their own loopback addresses 127.1.0.x, interval TARGETS/rate,
# -q; after SETTLE seconds (default 5) VmRSS and VmHWM (/proc/PID/status) and Pss, Rss_Anon and
# Rss_File (/proc/PID/smaps_rollup) of both, then SIGINT and the prober's total received/lost.
# `weft ping` keeps a summary per target besides its windows (3 histograms, 256 B per power of two
# sampled); an agent does not. One line per build and rate; in kB. BEFORE=WEFT_BINARY adds a third build
# ("before": e.g. the parent commit's weft) run first at each rate.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
RATES=${RATES:-1000 10000}
TARGETS=${TARGETS:-100}
SETTLE=${SETTLE:-5}
PROTO=${PROTO:-udp}
source bench/lib/scratch.sh
mem() {  # mem PID -> "VmRSS VmHWM Pss Rss_Anon Rss_File" (kB)
  local st=/proc/$1/status sm=/proc/$1/smaps_rollup
  echo "$(awk '/^VmRSS/{print $2}' "$st") $(awk '/^VmHWM/{print $2}' "$st") $(awk '/^Pss:/{print $2}' "$sm")" \
    "$(awk '/^RssAnon/{print $2}' "$st") $(awk '/^RssFile/{print $2}' "$st")"
}
printf '%-6s %-6s %-6s | %-34s | %-34s | %s\n' build proto rate "responder VmRSS HWM Pss anon file" \
  "prober VmRSS HWM Pss anon file" "received lost load"
for rate in $RATES; do
  for build in ${BEFORE:+before} full lean; do
    case $build in
      before) exe=("$BEFORE") ;;
      full) exe=("$BUILD/weft") ;;
      lean) exe=("$BUILD/weft-probe") ;;
    esac
    "${exe[@]}" --log-level info responder --listen 0.0.0.0 --udp-port 0 --tcp-port 0 2>"$tmp/r.log" &
    rpid=$!
    pids=("$rpid")
    line=""
    for _ in $(seq 100); do
      line=$(grep -m1 'responder: udp' "$tmp/r.log" || true)
      [[ -n $line ]] && break
      sleep 0.1
    done
    [[ -n $line ]] || { echo "responder did not start: $(cat "$tmp/r.log")" >&2; exit 1; }
    if [[ $PROTO == udp ]]; then port=$(sed -E 's/.*udp [0-9.]+:([0-9]+).*/\1/' <<<"$line");
    else port=$(sed -E 's/.*tcp [0-9.]+:([0-9]+).*/\1/' <<<"$line"); fi
    targets=()
    for i in $(seq "$TARGETS"); do targets+=("127.1.$((i / 250)).$((i % 250 + 1)):$port"); done
    interval=$(python3 -c "print($TARGETS / $rate)")
    "${exe[@]}" --log-level warn ping "$PROTO" "${targets[@]}" -i "$interval" -q --json >"$tmp/p.json" &
    ppid=$!
    pids=("$rpid" "$ppid")
    sleep "$SETTLE"
    r=$(mem "$rpid")
    p=$(mem "$ppid")
    kill -INT "$ppid"
    wait "$ppid" || true
    kill "$rpid"
    wait "$rpid" || true
    pids=()
    rl=$(python3 -c 'import json,sys
rows=[json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print(sum(r["received"] for r in rows), sum(r["lost"] for r in rows))' "$tmp/p.json")
    printf '%-6s %-6s %-6s | %-34s | %-34s | %s %s\n' "$build" "$PROTO" "$rate" "$r" "$p" "$rl" "$(cut -d' ' -f1 /proc/loadavg)"
  done
done
