#!/usr/bin/env bash
# Controller ingest: 1,000 simulated agents x 300 targets over HTTP on loopback into the embedded
# store (docs/BENCHMARKS.md, "Ingest and fleet"). Prints one JSON object.
set -euo pipefail
cd "$(dirname "$0")/.."
WEFT=${WEFT:-build/weft}
exec "$WEFT" --log-level warn bench ingest --agents 1000 --targets 300 --rounds 10 --connections 8 --http-threads 10 --json
