#!/usr/bin/env bash
# Issue 24's lab figures (docs/BENCHMARKS.md, "Fault localisation in the Clos lab"): all six faults
# in turn in the namespace Clos (lab/clos.py), each held HOLD seconds after it is named; prints the
# time to blame and to clear per fault and the polls that named an innocent element. Needs root.
#   bench/clos_faults.sh [BUILD_DIR] [extra lab_clos_test.py options]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shift || true
exec python3 tests/lab_clos/lab_clos_test.py "$build/weft" --faults all --no-lab-checks \
  --hold "${HOLD:-20}" --no-fail "$@"
