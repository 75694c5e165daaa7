#!/usr/bin/env bash
# Runs "$@" with throw-away Redis servers on 127.0.0.1 that speak TLS, with certificates made up
# at each run (a CA, a server certificate for 127.0.0.1, a client certificate, and an unrelated CA):
#  - one server with a password that asks clients for a certificate (tls-auth-clients yes), on a
#    TLS port and on a plain port beside it;
#  - a Redis Cluster of 3 masters whose nodes talk TLS to clients and to each other (tls-cluster).
# Exports WEFT_TEST_REDIS_TLS (rediss://:PASS@127.0.0.1:TLSPORT), WEFT_TEST_REDIS_TLS_PLAIN_PORT,
# WEFT_TEST_REDIS_TLS_CLUSTER (rediss-cluster://127.0.0.1:BASE,...), and the PEM files
# WEFT_TEST_REDIS_TLS_CA, _CERT, _KEY (the client's) and _WRONG_CA. Exit 77 (skip) when
# redis-server, redis-cli or openssl is missing, or redis-server was built without TLS.
set -euo pipefail
for p in redis-server redis-cli openssl; do command -v "$p" >/dev/null || { echo "SKIP: $p not installed"; exit 77; }; done
BASE=${WEFT_REDIS_TLS_PORT:-18610}
TLS_PORT=$BASE PLAIN_PORT=$((BASE + 1))
CLUSTER_PORTS=$(seq $((BASE + 2)) $((BASE + 4)))
DIR=$(mktemp -d /tmp/wms-redis-tls-XXXXXX)
cleanup() {
  for f in "$DIR"/*.pid; do [[ -f $f ]] && kill "$(cat "$f")" 2>/dev/null || true; done
  sleep 0.3
  for f in "$DIR"/*.pid; do [[ -f $f ]] && kill -9 "$(cat "$f")" 2>/dev/null || true; done
  rm -rf "$DIR"
}
trap cleanup EXIT
cd "$DIR"
ca() {  # NAME: a self-signed CA
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=$1" -keyout "$1.key" -out "$1.pem" 2>/dev/null
}
leaf() {  # NAME CN SAN: a certificate signed by ca
  openssl req -newkey rsa:2048 -nodes -subj "/CN=$2" -keyout "$1.key" -out "$1.csr" 2>/dev/null
  printf 'subjectAltName=%s\n' "$3" >"$1.ext"
  openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile "$1.ext" -out "$1.pem" 2>/dev/null
}
ca ca
ca wrong-ca
leaf server redis-test "IP:127.0.0.1,DNS:localhost"
leaf client weft-controller "DNS:weft-controller"
PASS="tls-$(head -c 9 /dev/urandom | od -An -tx1 | tr -d ' \n')"
TLS_ARGS=(--tls-cert-file server.pem --tls-key-file server.key --tls-ca-cert-file ca.pem)
CLI_TLS=(--tls --cacert ca.pem --cert client.pem --key client.key)
redis-server --port "$PLAIN_PORT" --tls-port "$TLS_PORT" --bind 127.0.0.1 "${TLS_ARGS[@]}" --tls-auth-clients yes \
  --requirepass "$PASS" --save '' --appendonly no --dir "$DIR" --daemonize yes --pidfile "$DIR/single.pid" \
  --logfile "$DIR/single.log" >/dev/null 2>"$DIR/start.err" || {
  grep -qi "tls" "$DIR/start.err" && { echo "SKIP: redis-server without TLS: $(cat "$DIR/start.err")"; exit 77; }
  cat "$DIR/start.err"; exit 1
}
for p in $CLUSTER_PORTS; do
  redis-server --port 0 --tls-port "$p" --bind 127.0.0.1 "${TLS_ARGS[@]}" --tls-auth-clients no --tls-cluster yes \
    --cluster-enabled yes --cluster-config-file "$DIR/nodes-$p.conf" --cluster-node-timeout 1000 \
    --save '' --appendonly no --dir "$DIR" --daemonize yes --pidfile "$DIR/c$p.pid" --logfile "$DIR/c$p.log" >/dev/null
done
for p in "$TLS_PORT" $CLUSTER_PORTS; do
  for _ in $(seq 50); do
    REDISCLI_AUTH="$PASS" redis-cli "${CLI_TLS[@]}" -p "$p" ping 2>/dev/null | grep -q PONG && break
    sleep 0.1
  done
done
ADDRS=""
for p in $CLUSTER_PORTS; do ADDRS+="127.0.0.1:$p "; done
# shellcheck disable=SC2086
redis-cli "${CLI_TLS[@]}" --cluster create $ADDRS --cluster-replicas 0 --cluster-yes >"$DIR/create.log" 2>&1 ||
  { cat "$DIR/create.log"; exit 1; }
ok=0
for _ in $(seq 100); do
  ok=1
  for p in $CLUSTER_PORTS; do
    redis-cli "${CLI_TLS[@]}" -p "$p" cluster info 2>/dev/null | grep -q 'cluster_state:ok' || { ok=0; break; }
  done
  [[ $ok == 1 ]] && break
  sleep 0.1
done
[[ $ok == 1 ]] || { echo "the TLS cluster did not reach cluster_state:ok"; exit 1; }
cd - >/dev/null
first=$((BASE + 2))
export WEFT_TEST_REDIS_TLS="rediss://:$PASS@127.0.0.1:$TLS_PORT" WEFT_TEST_REDIS_TLS_PLAIN_PORT="$PLAIN_PORT"
export WEFT_TEST_REDIS_TLS_CLUSTER="rediss-cluster://127.0.0.1:$first,127.0.0.1:$((first + 1))"
export WEFT_TEST_REDIS_TLS_CA="$DIR/ca.pem" WEFT_TEST_REDIS_TLS_CERT="$DIR/client.pem" \
  WEFT_TEST_REDIS_TLS_KEY="$DIR/client.key" WEFT_TEST_REDIS_TLS_WRONG_CA="$DIR/wrong-ca.pem"
"$@"
