#!/usr/bin/env bash
# Runs "$@" with a throw-away redis-server on 127.0.0.1 that wants a password: requirepass for the
# default user and an ACL user "weft-ctl" with its own password. Exports WEFT_TEST_REDIS_AUTH
# (redis://127.0.0.1:PORT, no credentials), WEFT_TEST_REDIS_PASS and WEFT_TEST_REDIS_ACL_PASS.
# Exit 77 (skip) when redis-server is not installed. Passwords are made up at each run.
set -euo pipefail
command -v redis-server >/dev/null || { echo "SKIP: redis-server not installed"; exit 77; }
PORT=${WEFT_REDIS_AUTH_PORT:-18571}
DIR=$(mktemp -d /tmp/wms-redis-auth-XXXXXX)
cleanup() {
  if [[ -f $DIR/pid ]]; then kill "$(cat "$DIR/pid")" 2>/dev/null || true; fi
  sleep 0.2
  rm -rf "$DIR"
}
trap cleanup EXIT
PASS="p@ss:$(head -c 9 /dev/urandom | od -An -tx1 | tr -d ' \n')"  # '@' and ':' need escaping in a URL
ACL_PASS="acl-$(head -c 9 /dev/urandom | od -An -tx1 | tr -d ' \n')"
cat >"$DIR/redis.conf" <<CONF
port $PORT
bind 127.0.0.1
save ""
appendonly no
dir $DIR
daemonize yes
pidfile $DIR/pid
logfile $DIR/log
requirepass "$PASS"
user weft-ctl on >$ACL_PASS ~* &* +@all
CONF
redis-server "$DIR/redis.conf" >/dev/null
for _ in $(seq 50); do
  REDISCLI_AUTH="$PASS" redis-cli -p "$PORT" ping 2>/dev/null | grep -q PONG && break
  sleep 0.1
done
REDISCLI_AUTH="$PASS" redis-cli -p "$PORT" flushall >/dev/null
export WEFT_TEST_REDIS_AUTH="redis://127.0.0.1:$PORT" WEFT_TEST_REDIS_PASS="$PASS" WEFT_TEST_REDIS_ACL_PASS="$ACL_PASS"
"$@"
