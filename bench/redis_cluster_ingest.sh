#!/usr/bin/env bash
# Ingest through one controller into a single redis-server vs a 3+3 Redis Cluster (both started on
# loopback by the tests' scripts), interleaved, ROUNDS rounds (default 5); prints each run's
# windows/s and the medians. Usage: bench/redis_cluster_ingest.sh BUILD_DIR [ROUNDS]
set -euo pipefail
BUILD=$1
ROUNDS=${2:-5}
HERE=$(cd "$(dirname "$0")/.." && pwd)
ARGS="--agents 100 --targets 100 --rounds 5 --json"
inner() {
  local single=() cluster=()
  for i in $(seq "$ROUNDS"); do
    redis-cli -p 18381 flushall >/dev/null
    s=$("$BUILD/weft" bench ingest $ARGS --store redis://127.0.0.1:18381 | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["request_errors"]==0, d; print(round(d["windows_per_s"]), end=" "); print(round(d["cpu_us_per_window"],1), file=sys.stderr)')
    for p in $WEFT_TEST_REDIS_CLUSTER_PORTS; do redis-cli -p "$p" flushall >/dev/null 2>&1 || true; done
    c=$("$BUILD/weft" bench ingest $ARGS --store "$WEFT_TEST_REDIS_CLUSTER" | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["request_errors"]==0, d; print(round(d["windows_per_s"]), end=" "); print(round(d["cpu_us_per_window"],1), file=sys.stderr)')
    echo "round $i: single $s windows/s, cluster $c windows/s"
    single+=("$s"); cluster+=("$c")
  done
  python3 -c "import statistics,sys; s=[int(x) for x in sys.argv[1].split()]; c=[int(x) for x in sys.argv[2].split()]; ms,mc=statistics.median(s),statistics.median(c); print(f'median: single {ms:.0f}, cluster {mc:.0f} windows/s, cluster/single {mc/ms:.2f}')" "${single[*]}" "${cluster[*]}"
}
export -f inner
export BUILD ROUNDS ARGS
WEFT_REDIS_PORT=18381 "$HERE/tests/controller/with_redis.sh" \
  "$HERE/tests/controller/with_redis_cluster.sh" bash -c inner
