#!/usr/bin/env bash
# weft's packages and units under a real systemd: builds the three Debian packages (cpack), boots
# lab/systemd-guest (systemd as PID 1 on this host's root under a throw-away overlay) and runs
# tests/deploy/systemd_guest.sh there: install, the agent without settings, the controller over
# HTTPS, an agent with its own token, the exposure levels, crash restart, a usage error, reload,
# removal and purge. Usage: systemd_guest_test.sh BUILD_DIR. Exit 77 (skip) without root, qemu,
# dpkg-deb or a kernel in /boot.
set -euo pipefail
BUILD=$(readlink -f "$1")
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
skip() { echo "SKIP: $*"; exit 77; }
. "$ROOT/lab/guest-preconditions.sh"
guest_preconditions "the systemd guest (qemu's 9p share of / must read every file)"
command -v dpkg-deb >/dev/null || skip "dpkg-deb not installed"
TMP=$(mktemp -d /tmp/wsg-test-XXXXXX)
trap 'rm -rf "$TMP"' EXIT
(cd "$TMP" && cpack -G DEB --config "$BUILD/CPackConfig.cmake" -B "$TMP/pkg" >"$TMP/cpack.log" 2>&1) ||
  { cat "$TMP/cpack.log"; echo "FAIL: cpack -G DEB"; exit 1; }
mkdir -p "$TMP/share"
cp "$TMP"/pkg/*.deb "$HERE/systemd_guest.sh" "$TMP/share/"
exec "$ROOT/lab/systemd-guest" --timeout "${WSG_TIMEOUT:-720}" --share "$TMP/share" -- sh ./systemd_guest.sh
