#!/usr/bin/env bash
# Checks deploy/systemd/*.service with systemd-analyze verify (unknown keys, bad values, missing
# executables), with ExecStart pointed at the weft just built. Exit 77 (skip) without systemd-analyze.
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
