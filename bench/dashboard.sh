#!/usr/bin/env bash
# 500 x 500 heatmap render time in headless Chromium (docs/BENCHMARKS.md, "Dashboard").
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 tests/dashboard/render_bench.py --hosts 500 --runs 3
