#!/usr/bin/env bash
# 64 KiB one-way latency of the message connections against perftest, and whether the number of
# slots (the receive buffers a slot type rotates through) moves it: one guest boot, ROUNDS rounds,
# each running ib_send_lat and ib_write_lat (-s 65536), then `weft msg bench --mode latency --sizes
# 65536` for send-recv, simplex-ring, read-pull and magic-ring with --slots 64 (the default), then
# send-recv and simplex-ring with --slots 4. Prints "PT <tool> <perftest row>" and "W slots=N
# <weft row>" lines; bench/msg_lat64_summary.py turns them into per-round ratios and medians.
#   bench/msg_lat64_slots.sh [WEFT_BINARY] [ROUNDS] [ITERS]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
weft=${1:-$here/../build/weft}
rounds=${2:-6}
iters=${3:-300}
exec "$here/../lab/rdma-guest" --timeout "${MSG_BENCH_TIMEOUT:-3000}" --bin "$weft" \
  --bin "$(command -v ib_write_lat)" -- "
  ip=10.9.0.1
  pt() {
    \$1 -d rxe0 -x 1 -F -s 65536 -n $iters >/dev/null 2>&1 &
    sleep 1
    \$1 -d rxe0 -x 1 -F -s 65536 -n $iters \$ip 2>/dev/null | awk -v t=\$1 '\$1 == 65536 { print \"PT\", t, \$0 }'
    wait
  }
  port=47700
  wb() {
    port=\$((port + 1))
    weft --log-level warn msg bench --server --bind \$ip --port \$port --timeout-ms 60000 >/dev/null 2>&1 &
    weft --log-level warn msg bench --client \$ip --port \$port --mode latency --sizes 65536 --type \$1 \
      --slots \$2 --iters $iters --warmup 30 --timeout-ms 60000 2>/dev/null | grep -v '^#' | sed \"s/^/W slots=\$2 /\"
    wait
  }
  for r in \$(seq 1 $rounds); do
    pt ib_send_lat
    pt ib_write_lat
    for t in send-recv simplex-ring read-pull magic-ring; do wb \$t 64; done
    for t in send-recv simplex-ring; do wb \$t 4; done
  done"
