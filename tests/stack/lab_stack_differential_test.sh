#!/usr/bin/env bash
# Lab test (root and scapy; skips with 77 without either): lab/hostile/differential.sh, the same
# crafted frames to weft and to the kernel (bad TCP and IPv4 options, overlaps, urgent data, MSS
# 0/1, fragments with bogus first fragments, ICMP errors, a SYN flood, segments to a TIME-WAIT of
# the target after it closed first), answers compared. Fails on a difference not listed in
# lab/hostile/expected_differences.txt.
set -euo pipefail
exec "$(dirname "$0")/../../lab/hostile/differential.sh" "${1:?usage: $0 path/to/weft}"
