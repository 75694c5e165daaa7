#!/usr/bin/env bash
# Issue 17, RSS: the lean `weft-probe` executable maps none of the libraries only the controller,
# the agent or RDMA need; `weft-probe responder` answers `weft-probe ping` (UDP and TCP) and the
# full `weft ping` on loopback; and its two commands take the same options as `weft responder` and
# `weft ping`. Usage: lean_binary_test.sh WEFT_PROBE WEFT
set -euo pipefail
LEAN=$1 FULL=$2
TMP=$(mktemp -d /tmp/weft-lean-XXXXXX)
RPID=""
cleanup() {
  if [[ -n $RPID ]]; then kill "$RPID" 2>/dev/null || true; wait "$RPID" 2>/dev/null || true; fi
  rm -rf "$TMP"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

# 1. What it links: nothing of TLS, HTTP, YAML, SQLite, Redis, snappy or verbs (a release build is
#    static and needs no shared library at all; a sanitizer build is dynamic).
command -v readelf >/dev/null || { echo "SKIP: readelf not installed"; exit 77; }
readelf -d "$LEAN" 2>/dev/null | sed -nE 's/.*\(NEEDED\).*\[(.*)\]/\1/p' >"$TMP/needed" || true
readelf -h "$LEAN" >/dev/null || fail "$LEAN is not an ELF file"
for lib in libssl libcrypto libcpp-httplib libyaml-cpp libsqlite3 libhiredis libsnappy libibverbs librdmacm; do
  if grep -q "$lib" "$TMP/needed"; then fail "weft-probe links $lib"; fi
done

# 2. The same options as the full commands (the help texts differ only in the program's name, and
#    in `weft ping`'s RDMA options, which the lean ping leaves out: every lean line is a full one).
for cmd in responder ping; do
  # The usage line names the program as run (its path): compare from its base name on.
  "$LEAN" "$cmd" --help | sed -E 's#^Usage: [^ ]*weft-probe#Usage: weft#; s/weft-probe/weft/g' >"$TMP/lean-$cmd"
  "$FULL" "$cmd" --help | sed -E 's#^Usage: [^ ]*weft#Usage: weft#' >"$TMP/full-$cmd"
  extra=$(comm -13 <(sort -u "$TMP/full-$cmd") <(sort -u "$TMP/lean-$cmd"))
  [[ -z $extra ]] || fail "'weft-probe $cmd --help' has lines 'weft $cmd --help' has not: $extra"
  [[ $(wc -l <"$TMP/lean-$cmd") -gt 5 ]] || fail "weft-probe $cmd --help: $(cat "$TMP/lean-$cmd")"
done
cmp -s "$TMP/full-responder" "$TMP/lean-responder" || fail "weft-probe responder --help differs from weft's"

# 3. A lean responder on ephemeral ports, answering lean and full probers.
"$LEAN" --log-level info responder --listen 127.0.0.1 --udp-port 0 --tcp-port 0 2>"$TMP/responder.log" &
RPID=$!
line=""
for _ in $(seq 100); do  # up to 10 s for it to bind and say where
  line=$(grep -m1 'responder: udp' "$TMP/responder.log" || true)
  [[ -n $line ]] && break
  sleep 0.1
done
[[ -n $line ]] || fail "the responder did not start: $(cat "$TMP/responder.log")"
UPORT=$(sed -E 's/.*udp 127\.0\.0\.1:([0-9]+).*/\1/' <<<"$line")
TPORT=$(sed -E 's/.*tcp 127\.0\.0\.1:([0-9]+).*/\1/' <<<"$line")

received() {  # received JSON_LINE -> "received lost"
  python3 -c 'import json,sys; d=json.loads(sys.stdin.readline()); print(d["received"], d["lost"])'
}
check() {  # check WHAT EXPECTED COMMAND...
  local what=$1 want=$2; shift 2
  local out got
  out=$("$@" --json) || fail "$what: exit status $? ($out)"
  got=$(received <<<"$out")
  [[ $got == "$want 0" ]] || fail "$what: received/lost '$got', expected '$want 0' ($out)"
  echo "ok   $what: $out"
}
check "weft-probe ping udp" 5 "$LEAN" ping udp "127.0.0.1:$UPORT" -c 5 -i 0.05
check "weft-probe ping tcp" 5 "$LEAN" ping tcp "127.0.0.1:$TPORT" -c 5 -i 0.05
check "weft-probe ping tcp --keep-open" 3 "$LEAN" ping tcp "127.0.0.1:$TPORT" -c 3 -i 0.05 --keep-open
check "weft ping udp (full) to weft-probe responder" 3 "$FULL" ping udp "127.0.0.1:$UPORT" -c 3 -i 0.05

# 4. RDMA is the full executable's: a clear refusal, exit status 2.
rc=0
"$LEAN" ping rdma 127.0.0.1 -c 1 2>"$TMP/rdma.err" || rc=$?
[[ $rc == 2 ]] && grep -q 'full weft' "$TMP/rdma.err" || fail "weft-probe ping rdma: status $rc, $(cat "$TMP/rdma.err")"

# 5. The responder stops on SIGTERM and counts what it answered (5 + 3 UDP, 3 kept-open TCP).
kill "$RPID"
wait "$RPID" || fail "the responder exited with status $?"
RPID=""
answered=$(sed -nE 's/.*responder: answered ([0-9]+),.*/\1/p' "$TMP/responder.log")
[[ $answered == 11 ]] || fail "the responder answered '$answered', expected 11: $(cat "$TMP/responder.log")"
echo "ok   weft-probe: $(wc -l <"$TMP/needed") shared libraries needed, answers, same options"
