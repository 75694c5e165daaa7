#!/usr/bin/env bash
# Issue 15, deploy: `cmake --install` into a temporary prefix installs weft, the units, the sysusers
# file, the example config and the web assets; `cpack -G DEB` builds a Debian package whose
# contents (dpkg -x into a temporary root, no root needed) hold the same and whose weft runs
# (`weft --version`). Usage: package_test.sh BUILD_DIR. Exit 77 (skip) without dpkg-deb.
set -euo pipefail
BUILD=$1
command -v dpkg-deb >/dev/null || { echo "SKIP: dpkg-deb not installed"; exit 77; }
TMP=$(mktemp -d /tmp/wms-package-XXXXXX)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
expect_files() {  # ROOT PREFIX: what both the install and the package must hold
  local f
  for f in bin/weft bin/weft-probe lib/systemd/system/weft-controller.service lib/systemd/system/weft-agent.service \
    lib/sysusers.d/weft.conf share/weft/weft.yaml share/weft/grafana-weft.json share/weft/web/index.html \
    share/weft/web/assets/app.js; do
    [[ -f $1/$2/$f ]] || fail "$1/$2/$f missing"
  done
}

cmake --install "$BUILD" --prefix "$TMP/prefix" >"$TMP/install.log" || { cat "$TMP/install.log"; fail "cmake --install"; }
expect_files "$TMP/prefix" .
"$TMP/prefix/bin/weft" --version | grep -q '^weft ' || fail "installed weft --version"
"$TMP/prefix/bin/weft-probe" --version | grep -q '^weft-probe ' || fail "installed weft-probe --version"

(cd "$TMP" && cpack -G DEB --config "$BUILD/CPackConfig.cmake" -B "$TMP/pkg" >"$TMP/cpack.log" 2>&1) ||
  { cat "$TMP/cpack.log"; fail "cpack -G DEB"; }
DEB=$(ls "$TMP"/pkg/weft_*.deb)
dpkg-deb -f "$DEB" Package Version Depends | sed 's/^/  /'
dpkg-deb -x "$DEB" "$TMP/root"
expect_files "$TMP/root" usr
dpkg-deb -e "$DEB" "$TMP/control"
[[ -x $TMP/control/postinst ]] || fail "the package has no postinst (the weft user)"
VERSION=$("$TMP/root/usr/bin/weft" --version) || fail "weft from the package does not run"
[[ $VERSION == "weft $(dpkg-deb -f "$DEB" Version)" ]] || fail "'$VERSION' is not the package's version"
"$TMP/root/usr/bin/weft-probe" --version >/dev/null || fail "weft-probe from the package does not run"
echo "ok   $(basename "$DEB") ($(du -k "$DEB" | cut -f1) kB): $VERSION"
