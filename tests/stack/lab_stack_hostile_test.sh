#!/usr/bin/env bash
# Lab test (root; skips with 77 without): the hostile-network soak (bench/stack_soak.sh) at a short
# length: weft on AF_PACKET against the kernel through lab/hostile/relay.py (loss 0 and 3 %, 2 %
# duplication, 5 % reordering, delay 300 +/- 200 us) with the kernel peer squeezed (SO_RCVBUF
# 16 KiB, tcp_rmem 4096 16384 65536), weft as server and as client, every byte checked. Fails on a
# stall over 5 s, a wrong byte or a failed transfer. HOSTILE_SECONDS (default 50) sets the length.
# Weft as client used to stall for good against the squeezed peer (1 of 60 transfers in a
# 12-minute soak: its pure ACKs carried SEQ outside the peer's zero window and were discarded);
# every segment now carries an acceptable SEQ, so any stall fails this test.
set -euo pipefail
WEFT=${1:?usage: $0 path/to/weft}
[[ $(id -u) == 0 ]] || { echo "SKIP: needs root"; exit 77; }
LOSSES="0 3" SIZES="262144" SEED=${SEED:-1} CELL_LIMIT=60 \
  exec "$(dirname "$0")/../../bench/stack_soak.sh" "$WEFT" "${HOSTILE_SECONDS:-50}"
