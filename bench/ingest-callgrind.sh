#!/usr/bin/env bash
# Instructions per window of `weft bench ingest`, counted by callgrind: repeatable on a loaded
# machine, unlike seconds (docs/BENCHMARKS.md, "Ingest and fleet"). Runs 301 agents x 300 targets
# (targets are other agents) for 1 and for 3 rounds and divides the difference by the 180,600 extra
# windows, so set-up
# (registration, pinglists, encoding the reports) cancels out. Counts user-space instructions only:
# system calls (loopback TCP, SQLite's WAL writes) are not in them. Takes a few minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
WEFT=${WEFT:-build/weft}
command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 1; }
DIR=$(mktemp -d /tmp/wms-cg-XXXXXX)
# KEEP=1 keeps the callgrind files for callgrind_annotate (the per-part rows in BENCHMARKS.md).
if [[ -n ${KEEP:-} ]]; then echo "callgrind files kept in $DIR" >&2; else trap 'rm -rf "$DIR"' EXIT; fi
total() {  # total instructions of the controller (the process with the SQLite writer) and of the client
  local ctl=0 cli=0
  for f in "$DIR"/r$1.*; do
    n=$(grep -m1 '^summary:' "$f" | awk '{print $2}')
    if grep -q 'write_loop' "$f"; then ctl=$n; else cli=$n; fi
  done
  echo "$ctl $cli"
}
for r in 1 3; do
  valgrind --tool=callgrind --callgrind-out-file="$DIR/r$r.%p" "$WEFT" --log-level warn bench ingest \
    --agents 301 --targets 300 --rounds $r --connections 2 --http-threads 2 --port 18195 --json >/dev/null 2>"$DIR/log$r"
done
read -r c1 k1 <<<"$(total 1)"
read -r c3 k3 <<<"$(total 3)"
# The client's difference includes encoding the extra reports (before its clock starts).
echo "{\"controller_instructions_per_window\": $(( (c3 - c1) / 180600 )), \"client_instructions_per_window_incl_encoding\": $(( (k3 - k1) / 180600 ))}"
