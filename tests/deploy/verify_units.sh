#!/usr/bin/env bash
# Checks deploy/systemd/*.service with systemd-analyze verify (unknown keys, bad values, missing
# executables), with ExecStart pointed at the weft (and weft-controller) just built, and their
# exposure (systemd-analyze security --offline) at 4.0 or below, Debian's prometheus unit's level.
# Exit 77 (skip) without systemd-analyze.
# Usage: verify_units.sh SOURCE_DIR WEFT
set -euo pipefail
command -v systemd-analyze >/dev/null || { echo "SKIP: systemd-analyze not installed"; exit 77; }
SRC=$1
WEFT=$2
DIR=$(mktemp -d /tmp/wms-units-XXXXXX)
trap 'rm -rf "$DIR"' EXIT
for u in "$SRC"/deploy/systemd/*.service; do
  sed "s|/usr/bin/weft|$WEFT|" "$u" >"$DIR/$(basename "$u")"
done
# Any message is a finding (verify exits 0 on some warnings), so the output must be empty.
out=$(SYSTEMD_LOG_LEVEL=notice systemd-analyze verify --man=no "$DIR"/*.service 2>&1 || echo "exit status $?")
if [[ -n $out ]]; then
  echo "$out"
  exit 1
fi
grep -q '^CPUQuota=' "$DIR/weft-agent.service" && grep -q '^MemoryMax=' "$DIR/weft-controller.service"
echo "ok   $(ls "$DIR" | tr '\n' ' ')verified"
for u in "$DIR"/*.service; do
  level=$(systemd-analyze security --offline=true --no-pager "$u" 2>/dev/null |
    sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
  [[ -n $level ]] || { echo "FAIL: no exposure level for $(basename "$u")"; exit 1; }
  if awk -v l="$level" 'BEGIN { exit !(l > 4.0) }'; then
    echo "FAIL: $(basename "$u") exposure $level > 4.0"
    exit 1
  fi
  echo "ok   $(basename "$u") exposure $level (<= 4.0)"
done
