#!/usr/bin/env bash
# Message connections in the Soft-RoCE lab, for docs/BENCHMARKS.md ("Message connections"):
#   bench/msg_guest.sh [WEFT_BINARY] [ROUNDS] [ITERS]
# One guest, server and client on rxe0 (10.9.0.1). Each round, for 64 B, 4 KiB and 64 KiB:
# perftest's ib_send_lat / ib_write_lat / ib_read_lat, then `weft msg bench` latency for every
# type; then ib_send_bw / ib_write_bw and weft bandwidth for every type. perftest and weft runs
# alternate within a round, so each weft figure has a perftest reference from the same minute.
# Then the shared ring N:1 for N in SHARED_SENDERS (default "1 3"): N sender processes stream
# ITERS messages each into one receiver (--mode bandwidth); the receiver's and senders' JSON lines.
# Prints raw lines: "PT <test> <size> <perftest data row>" and weft's JSON lines.
# Environment: WAITS="busy channel" runs every weft run once per wait mode (busy polling, or
# blocking on the completion channel: Options::wait), back to back; SIZES="64 4096" other sizes.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
weft=${1:-$here/../build/weft}
rounds=${2:-5}
iters=${3:-1000}
# The base guest image has ib_send_lat only; the other perftest binaries go in with --bin.
pt_bins=()
for t in ib_write_lat ib_read_lat ib_send_bw ib_write_bw; do pt_bins+=(--bin "$(command -v $t)"); done
exec "$here/../lab/rdma-guest" --timeout "${MSG_BENCH_TIMEOUT:-3000}" --bin "$weft" "${pt_bins[@]}" -- "
  pt() {  # pt TEST SIZE ITERS [extra]
    \$1 -d rxe0 -x 1 -F -s \$2 -n \$3 \$4 >/dev/null 2>&1 &
    sleep 1
    \$1 -d rxe0 -x 1 -F -s \$2 -n \$3 \$4 10.9.0.1 2>/dev/null | awk -v t=\$1 -v s=\$2 '\$1 == s { print \"PT\", t, s, \$0 }'
    wait
  }
  wb() {  # wb MODE SIZE (each run on a port of its own)
    for w in ${WAITS:-busy}; do
      port=\$((port + 1))
      weft --log-level warn msg bench --server --bind 10.9.0.1 --port \$port --timeout-ms 60000 >/dev/null 2>&1 &
      weft --log-level warn msg bench --client 10.9.0.1 --port \$port --mode \$1 --sizes \$2 --max-message 65536 \
        --wait \$w --iters $iters --warmup 50 --timeout-ms 60000 --json | sed \"s/^{/{\\\"round\\\":\$r,/\"
      wait
    done
  }
  shr() {  # shr SIZE: the shared ring with N senders, for each N
    for n in ${SHARED_SENDERS:-1 3}; do
      port=\$((port + 1))
      weft --log-level warn msg bench --server --bind 10.9.0.1 --port \$port --timeout-ms 60000 >/tmp/sh.out 2>/dev/null &
      weft --log-level warn msg bench --client 10.9.0.1 --port \$port --type shared-ring --senders \$n --mode bandwidth \
        --sizes \$1 --max-message 65536 --iters $iters --timeout-ms 60000 --json 2>/dev/null | grep '^{' |
        sed \"s/^{/{\\\"round\\\":\$r,\\\"n\\\":\$n,/\"
      wait
      grep '^{' /tmp/sh.out | sed \"s/^{/{\\\"round\\\":\$r,\\\"n\\\":\$n,/\"
    done
  }
  port=47200
  for r in \$(seq 1 $rounds); do
    for s in ${SIZES:-64 4096 65536}; do
      pt ib_send_lat \$s $iters; pt ib_write_lat \$s $iters; pt ib_read_lat \$s $iters
      wb latency \$s
      pt ib_send_bw \$s $iters; pt ib_write_bw \$s $iters
      wb bandwidth \$s
      shr \$s
    done
  done"
