#!/usr/bin/env bash
# Deploy: `cmake --install` into a temporary prefix installs weft, weft-controller, the units, the
# sysusers file, the example config, the web assets and the docs; `cpack -G DEB` builds three
# packages (weft-common, weft, weft-controller) whose contents (dpkg -x into temporary roots, no
# root needed) hold the same and whose programs run; weft-controller's Depends has no verbs, XDP or
# io_uring library. Usage: package_test.sh BUILD_DIR. Exit 77 (skip) without dpkg-deb.
set -euo pipefail
BUILD=$1
command -v dpkg-deb >/dev/null || { echo "SKIP: dpkg-deb not installed"; exit 77; }
TMP=$(mktemp -d /tmp/wms-package-XXXXXX)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
expect_files() {  # ROOT PREFIX FILES...: what both the install and the packages must hold
  local root=$1 prefix=$2 f
  shift 2
  for f in "$@"; do
    [[ -f $root/$prefix/$f ]] || fail "$root/$prefix/$f missing"
  done
}
COMMON=(lib/sysusers.d/weft.conf share/weft/weft.yaml share/weft/grafana-weft.json share/weft/web/index.html
  share/weft/web/assets/app.js share/doc/weft/README.md share/doc/weft/deploy.md)
AGENT=(bin/weft bin/weft-probe lib/systemd/system/weft-agent.service lib/weft/libweft_preload.so)
CONTROLLER=(bin/weft-controller lib/systemd/system/weft-controller.service)

cmake --install "$BUILD" --prefix "$TMP/prefix" >"$TMP/install.log" || { cat "$TMP/install.log"; fail "cmake --install"; }
expect_files "$TMP/prefix" . "${COMMON[@]}" "${AGENT[@]}" "${CONTROLLER[@]}"
"$TMP/prefix/bin/weft" --version | grep -q '^weft ' || fail "installed weft --version"
"$TMP/prefix/bin/weft-probe" --version | grep -q '^weft-probe ' || fail "installed weft-probe --version"
"$TMP/prefix/bin/weft-controller" --version | grep -q '^weft-controller ' || fail "installed weft-controller --version"

(cd "$TMP" && cpack -G DEB --config "$BUILD/CPackConfig.cmake" -B "$TMP/pkg" >"$TMP/cpack.log" 2>&1) ||
  { cat "$TMP/cpack.log"; fail "cpack -G DEB"; }
deb() { ls "$TMP"/pkg/"$1"_*.deb 2>/dev/null || fail "no $1 package: $(ls "$TMP/pkg")"; }
COMMON_DEB=$(deb weft-common) AGENT_DEB=$(deb weft) CONTROLLER_DEB=$(deb weft-controller)
mkdir -p "$TMP/root" "$TMP/control"
for d in "$COMMON_DEB" "$AGENT_DEB" "$CONTROLLER_DEB"; do
  dpkg-deb -f "$d" Package Version Depends | sed 's/^/  /'
  dpkg-deb -x "$d" "$TMP/root/$(basename "$d")"
  dpkg-deb -e "$d" "$TMP/control/$(basename "$d")"
done
expect_files "$TMP/root/$(basename "$COMMON_DEB")" usr "${COMMON[@]}"
expect_files "$TMP/root/$(basename "$AGENT_DEB")" usr "${AGENT[@]}"
expect_files "$TMP/root/$(basename "$CONTROLLER_DEB")" usr "${CONTROLLER[@]}"
# A controller host pulls no verbs, XDP or io_uring library; the agent package does pull verbs.
CDEPS=$(dpkg-deb -f "$CONTROLLER_DEB" Depends)
[[ $CDEPS != *ibverbs* && $CDEPS != *rdmacm* && $CDEPS != *xdp* && $CDEPS != *uring* ]] ||
  fail "weft-controller depends on a verbs/XDP/io_uring library: $CDEPS"
[[ $(dpkg-deb -f "$AGENT_DEB" Depends) == *libibverbs* ]] || fail "weft does not depend on libibverbs"
for d in "$AGENT_DEB" "$CONTROLLER_DEB"; do
  [[ $(dpkg-deb -f "$d" Depends) == *"weft-common (= "* ]] || fail "$(basename "$d") does not depend on weft-common"
done
# Maintainer scripts: the weft user, units stopped and disabled on removal.
[[ -x $TMP/control/$(basename "$COMMON_DEB")/postinst ]] || fail "weft-common has no postinst (the weft user)"
for d in "$AGENT_DEB" "$CONTROLLER_DEB"; do
  for script in postinst prerm postrm; do
    [[ -x $TMP/control/$(basename "$d")/$script ]] || fail "$(basename "$d") has no $script"
  done
  grep -q 'systemctl disable' "$TMP/control/$(basename "$d")/prerm" || fail "$(basename "$d") prerm does not disable its unit"
done
ROOT_AGENT=$TMP/root/$(basename "$AGENT_DEB")/usr/bin
VERSION=$("$ROOT_AGENT/weft" --version) || fail "weft from the package does not run"
[[ $VERSION == "weft $(dpkg-deb -f "$AGENT_DEB" Version)" ]] || fail "'$VERSION' is not the package's version"
"$ROOT_AGENT/weft-probe" --version >/dev/null || fail "weft-probe from the package does not run"
"$TMP/root/$(basename "$CONTROLLER_DEB")/usr/bin/weft-controller" --version >/dev/null ||
  fail "weft-controller from the package does not run"
echo "ok   $(cd "$TMP/pkg" && du -k *.deb | tr '\t\n' '  '): $VERSION"
