#!/usr/bin/env bash
# Ingest with 1, 2 and 3 controller replicas over one 3+3 Redis Cluster (started on loopback by
# tests/controller/with_redis_cluster.sh). Replica i is its own `weft bench ingest` (a controller
# and its simulated agents, names r<i>-NNNNN, so the replicas take different agents, as behind a
# load balancer); all of a round's replicas run at once, and each also applies the others' windows
# from the replica feed (redis_feed.hpp). Rounds interleave N = 1, 2, 3; ROUNDS rounds (default 5).
# Prints per run: the sum of the replicas' windows/s, and each replica's controller CPU per window
# it took in (which includes applying the other replicas' windows). Median over rounds at the end.
# Usage: bench/redis_replicas_ingest.sh BUILD_DIR [ROUNDS]
set -euo pipefail
BUILD=$1
ROUNDS=${2:-5}
HERE=$(cd "$(dirname "$0")/.." && pwd)
ARGS="--agents 100 --targets 100 --rounds 5 --json"
inner() {
  local out=()
  for i in $(seq "$ROUNDS"); do
    for n in 1 2 3; do
      for p in $WEFT_TEST_REDIS_CLUSTER_PORTS; do redis-cli -p "$p" flushall >/dev/null 2>&1 || true; done
      pids=()
      for r in $(seq "$n"); do
        "$BUILD/weft" bench ingest $ARGS --agent-prefix "r$r-" --port $((18095 + r)) \
          --store "$WEFT_TEST_REDIS_CLUSTER" >"$TMPD/r$r.json" &
        pids+=($!)
      done
      for p in "${pids[@]}"; do wait "$p"; done
      line=$(python3 - "$n" "$TMPD" <<'PY'
import json, sys
n, d = int(sys.argv[1]), sys.argv[2]
runs = [json.load(open(f"{d}/r{r}.json")) for r in range(1, n + 1)]
assert all(x["request_errors"] == 0 for x in runs), runs
print(f"{n} {sum(x['windows_per_s'] for x in runs):.0f} " + ",".join(f"{x['cpu_us_per_window']:.1f}" for x in runs))
PY
)
      echo "round $i: replicas, windows/s (sum), controller CPU us/window per replica: $line"
      out+=("$line")
    done
  done
  python3 - "${out[@]}" <<'PY'
import statistics, sys
rows = [l.split() for l in sys.argv[1:]]
base = None
for n in ("1", "2", "3"):
    w = [float(r[1]) for r in rows if r[0] == n]
    cpu = [float(c) for r in rows if r[0] == n for c in r[2].split(",")]
    m = statistics.median(w)
    base = base or m
    print(f"median: {n} replica(s): {m:.0f} windows/s ({m / base:.2f} x 1 replica), "
          f"controller CPU {statistics.median(cpu):.1f} us per window taken in")
PY
}
export -f inner
TMPD=$(mktemp -d /tmp/wms-replicas-bench-XXXXXX)
trap 'rm -rf "$TMPD"' EXIT
export BUILD ROUNDS ARGS TMPD
WEFT_REDIS_CLUSTER_PORT=18410 "$HERE/tests/controller/with_redis_cluster.sh" bash -c inner
