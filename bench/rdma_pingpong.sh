#!/usr/bin/env bash
# RDMA pingpong in the Soft-RoCE qemu lab (docs/BENCHMARKS.md, "RDMA library against perftest").
# Needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
exec lab/rdma-guest-pingpong build/weft 2000
