#!/usr/bin/env bash
# Host test (label unit): `--hw-timestamps IFACE` on `weft ping`, `weft responder` and `weft agent`
# with an interface that does not exist: each says "IFACE: no such network interface", exits 1 and
# starts nothing (the agent never reaches its controller, the responder binds no port). A missing
# value is a usage error (2). There is no NIC with hardware stamps here, so only failures are tested.
set -u
WEFT=${1:?usage: hw_timestamps_cli_test.sh WEFT}
fail=0
check() {  # check NAME EXPECTED_RC EXPECTED_STDERR_PART ARGS...
  local name=$1 want=$2 text=$3; shift 3
  local err rc
  err=$(timeout 20 "$WEFT" "$@" 2>&1 >/dev/null); rc=$?
  if [[ $rc -ne $want ]]; then echo "FAIL $name: exit $rc, want $want; stderr: $err"; fail=1; return; fi
  if [[ $err != *"$text"* ]]; then echo "FAIL $name: no '$text' in: $err"; fail=1; return; fi
  echo "ok $name: $err"
}
nosuch="weftnosuch0: no such network interface"
check ping 1 "$nosuch" ping udp 127.0.0.1 -c 1 --hw-timestamps weftnosuch0
check responder 1 "$nosuch" responder --udp-port 0 --tcp-port 0 --hw-timestamps weftnosuch0
# Port 9 (discard) on loopback: nothing listens, and the agent must fail before it tries.
check agent 1 "weft agent: $nosuch" agent --controller http://127.0.0.1:9 --token t --hw-timestamps weftnosuch0
# Repeatable: the first interface that fails is named.
check agent-repeated 1 "weft agent: weftnosuch1: no such network interface" \
  agent --controller http://127.0.0.1:9 --token t --hw-timestamps weftnosuch1 --hw-timestamps weftnosuch0
check agent-bad-name 1 "not a network interface name" \
  agent --controller http://127.0.0.1:9 --token t --hw-timestamps "$(printf 'x%.0s' {1..40})"
check agent-no-value 2 "hw-timestamps" agent --controller http://127.0.0.1:9 --token t --hw-timestamps
exit $fail
