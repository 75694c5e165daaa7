#!/usr/bin/env bash
# How long the byte-for-byte check takes in the Soft-RoCE lab, per connection type: one guest boot,
# for every type and every largest size, `weft msg bench --mode check` with COUNT random-size
# messages (msg/test_pattern.hpp: each power-of-two range of 0..MAX equally likely), every byte
# compared by the receiver. Prints one line per run: "CHECK type max count seconds verified rc".
# This is where the issue's 1 M messages per type run (the CI suite checks fewer: docs/msg.md).
#   bench/msg_check_count.sh [WEFT_BINARY] [COUNT] ["MAX MAX..."] ["TYPE TYPE..."]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
weft=${1:-$here/../build/weft}
count=${2:-1000000}
maxes=${3:-"1024"}
types=${4:-"send-recv send-recv-srq read-pull simplex-ring magic-ring duplex-ring faa-ring"}
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg) at $(date -u +%H:%M:%S)"
"$here/../lab/rdma-guest" --timeout "${MSG_BENCH_TIMEOUT:-7200}" --bin "$weft" -- "
  port=47300
  for m in $maxes; do
    for t in $types; do
      port=\$((port + 1))
      weft --log-level warn msg bench --server --bind 10.9.0.1 --port \$port --mode check \
        --timeout-ms 60000 >/tmp/srv 2>&1 &
      s0=\$(cut -d' ' -f1 /proc/uptime)
      weft --log-level warn msg bench --client 10.9.0.1 --port \$port --mode check --type \$t \
        --max-message \$m --iters $count --timeout-ms 60000 --json >/tmp/cli 2>&1
      rc=\$?
      wait
      s1=\$(cut -d' ' -f1 /proc/uptime)
      v=\$(grep -o '\"verified\":[0-9]*' /tmp/srv | cut -d: -f2)
      echo \"CHECK \$t \$m $count \$(awk \"BEGIN { print \$s1 - \$s0 }\") \${v:-0} \$rc\"
      [ \$rc -eq 0 ] || { cat /tmp/cli /tmp/srv; }
    done
  done"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg) at $(date -u +%H:%M:%S)"
