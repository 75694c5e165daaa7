# Issue 15, deploy: what `cmake --install` puts where, and the Debian package CPack builds from it
# (`cpack -G DEB` in the build directory; docs/deploy.md). Paths are relative to the prefix, so
# `cmake --install build --prefix /tmp/x` stays inside /tmp/x; the package's prefix is /usr (units
# in /usr/lib/systemd/system, as Debian 12's merged /usr allows).
include(GNUInstallDirs)
# cpack installs through the build tree's install rules: without this it first builds every target
# (tests, benchmarks) to package one binary.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)
# weft-probe: the lean responder/prober executable (src/cli/probe_main.cpp, docs/probe.md).
install(TARGETS weft weft-probe RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# weft-dpdk (`weft stack --device dpdk`) only on request (`cmake --install build --component dpdk`):
# in the package its libraries would make every agent host install DPDK.
if(TARGET weft-dpdk)
  install(TARGETS weft-dpdk RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT dpdk EXCLUDE_FROM_ALL)
endif()
install(FILES deploy/systemd/weft-controller.service deploy/systemd/weft-agent.service
        DESTINATION lib/systemd/system)
install(FILES deploy/systemd/weft.sysusers.conf DESTINATION lib/sysusers.d RENAME weft.conf)
# The example config (install it as /etc/weft/weft.yaml, docs/deploy.md) and the Grafana dashboard.
install(FILES deploy/weft.yaml deploy/grafana-weft.json DESTINATION ${CMAKE_INSTALL_DATADIR}/weft)
# The dashboard is compiled into weft (src/controller/web_assets); the same files are installed for a
# proxy or a CDN that serves them itself.
install(FILES web/index.html DESTINATION ${CMAKE_INSTALL_DATADIR}/weft/web)
install(DIRECTORY web/assets/ DESTINATION ${CMAKE_INSTALL_DATADIR}/weft/web/assets)

set(CPACK_PACKAGE_NAME weft)
set(CPACK_PACKAGE_VENDOR weft)
set(CPACK_PACKAGE_CONTACT "weft maintainers <weft@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "datacenter network mesh monitor (agent, controller, dashboard) and RDMA tools")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)  # the debug info is most of the binary (135 MB RelWithDebInfo)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)  # Depends: from the libraries weft links (dpkg-shlibdeps)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${CMAKE_SOURCE_DIR}/deploy/debian/postinst)
set(CPACK_DEBIAN_COMPRESSION_TYPE gzip)  # xz takes several times longer for a few MB less
include(CPack)
