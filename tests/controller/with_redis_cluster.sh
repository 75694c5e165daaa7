#!/usr/bin/env bash
# Runs "$@" with a throw-away Redis Cluster on 127.0.0.1: 3 masters + 3 replicas (ports
# BASE..BASE+5, BASE = WEFT_REDIS_CLUSTER_PORT or 18390), created with redis-cli --cluster create,
# waited for until every node says cluster_state:ok. Exports WEFT_TEST_REDIS_CLUSTER
# (redis-cluster://127.0.0.1:BASE,127.0.0.1:BASE+1) and WEFT_TEST_REDIS_CLUSTER_PORTS (the six
# ports). The nodes allow DEBUG from loopback so a test can crash a master (DEBUG SEGFAULT), and
# fail over after 1 s (cluster-node-timeout 1000). Every node is stopped on exit, pass or fail.
# With WEFT_REDIS_CLUSTER_PASS set, every node wants that password (requirepass, and masterauth for
# its replica) and WEFT_TEST_REDIS_CLUSTER_NOAUTH is the URL without it.
# Exit 77 (skip) when redis-server or redis-cli is not installed.
set -euo pipefail
command -v redis-server >/dev/null || { echo "SKIP: redis-server not installed"; exit 77; }
command -v redis-cli >/dev/null || { echo "SKIP: redis-cli not installed"; exit 77; }
BASE=${WEFT_REDIS_CLUSTER_PORT:-18390}
PORTS=$(seq "$BASE" $((BASE + 5)))
DIR=$(mktemp -d /tmp/wms-rcluster-XXXXXX)
cleanup() {
  for p in $PORTS; do
    if [[ -f $DIR/$p.pid ]]; then kill "$(cat "$DIR/$p.pid")" 2>/dev/null || true; fi
  done
  sleep 0.3
  for p in $PORTS; do
    if [[ -f $DIR/$p.pid ]]; then kill -9 "$(cat "$DIR/$p.pid")" 2>/dev/null || true; fi
  done
  rm -rf "$DIR"
}
trap cleanup EXIT
AUTH_ARGS=()
if [[ -n ${WEFT_REDIS_CLUSTER_PASS:-} ]]; then
  AUTH_ARGS=(--requirepass "$WEFT_REDIS_CLUSTER_PASS" --masterauth "$WEFT_REDIS_CLUSTER_PASS")
  export REDISCLI_AUTH="$WEFT_REDIS_CLUSTER_PASS"  # redis-cli below (and the test's own calls)
fi
for p in $PORTS; do
  redis-server --port "$p" --bind 127.0.0.1 --save '' --appendonly no --dir "$DIR" \
    --cluster-enabled yes --cluster-config-file "$DIR/nodes-$p.conf" --cluster-node-timeout 1000 \
    --repl-diskless-sync-delay 0 \
    --enable-debug-command local --crash-log-enabled no --crash-memcheck-enabled no \
    --daemonize yes --pidfile "$DIR/$p.pid" --logfile "$DIR/$p.log" "${AUTH_ARGS[@]}" >/dev/null
done
for p in $PORTS; do
  for _ in $(seq 50); do
    redis-cli -p "$p" ping 2>/dev/null | grep -q PONG && break
    sleep 0.1
  done
done
ADDRS=""
for p in $PORTS; do ADDRS+="127.0.0.1:$p "; done
# shellcheck disable=SC2086
redis-cli --cluster create $ADDRS --cluster-replicas 1 --cluster-yes >"$DIR/create.log" 2>&1 ||
  { cat "$DIR/create.log"; exit 1; }
ok=0
for _ in $(seq 100); do
  ok=1
  for p in $PORTS; do
    redis-cli -p "$p" cluster info 2>/dev/null | grep -q 'cluster_state:ok' || { ok=0; break; }
  done
  [[ $ok == 1 ]] && break
  sleep 0.1
done
[[ $ok == 1 ]] || { echo "cluster did not reach cluster_state:ok"; exit 1; }
# Replicas sync asynchronously: wait until all three have their master link up (a replica that
# never synced refuses to take over), so WAIT has someone to ask and a failover can happen.
for _ in $(seq 100); do
  n=$(for p in $PORTS; do redis-cli -p "$p" info replication; done | grep -c '^master_link_status:up' || true)
  [[ $n == 3 ]] && break
  sleep 0.1
done
export WEFT_TEST_REDIS_CLUSTER="redis-cluster://127.0.0.1:$BASE,127.0.0.1:$((BASE + 1))"
if [[ -n ${WEFT_REDIS_CLUSTER_PASS:-} ]]; then
  export WEFT_TEST_REDIS_CLUSTER_NOAUTH="$WEFT_TEST_REDIS_CLUSTER"
  WEFT_TEST_REDIS_CLUSTER="redis-cluster://:$WEFT_REDIS_CLUSTER_PASS@127.0.0.1:$BASE,127.0.0.1:$((BASE + 1))"
fi
export WEFT_TEST_REDIS_CLUSTER_PORTS="$(echo $PORTS)"
"$@"
