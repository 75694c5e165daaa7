#!/usr/bin/env bash
# Runs "$@" with a throw-away redis-server on 127.0.0.1 (port in weft's controller test range),
# exported as WEFT_TEST_REDIS. Exit 77 (skip) when redis-server is not installed.
set -euo pipefail
command -v redis-server >/dev/null || { echo "SKIP: redis-server not installed"; exit 77; }
PORT=${WEFT_REDIS_PORT:-18379}
DIR=$(mktemp -d /tmp/wms-redis-XXXXXX)
cleanup() {
  if [[ -f $DIR/pid ]]; then kill "$(cat "$DIR/pid")" 2>/dev/null || true; fi
  sleep 0.2
  rm -rf "$DIR"
}
trap cleanup EXIT
redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$DIR" \
  --daemonize yes --pidfile "$DIR/pid" --logfile "$DIR/log" >/dev/null
for _ in $(seq 50); do
  redis-cli -p "$PORT" ping 2>/dev/null | grep -q PONG && break
  sleep 0.1
done
redis-cli -p "$PORT" flushall >/dev/null
export WEFT_TEST_REDIS="redis://127.0.0.1:$PORT"
"$@"
