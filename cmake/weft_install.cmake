# Issue 15, deploy: what `cmake --install` puts where, and the Debian package CPack builds from it
# (`cpack -G DEB` in the build directory; docs/deploy.md). Paths are relative to the prefix, so
# `cmake --install build --prefix /tmp/x` stays inside /tmp/x; the package's prefix is /usr (units
# in /usr/lib/systemd/system, as Debian 12's merged /usr allows).
include(GNUInstallDirs)
# cpack installs through the build tree's install rules: without this it first builds every target
# (tests, benchmarks) to package one binary.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)
# Three Debian packages (components), so that a controller host installs no verbs, XDP or io_uring
# library: weft-common (the weft user, the example config, the Grafana and web files, the docs),
# weft (weft, weft-probe and the agent unit; everything for an agent host, the RDMA tools and the
# stack) and weft-controller (weft-controller, the controller-only executable, and its unit).
# weft-probe: the lean responder/prober executable (src/cli/probe_main.cpp, docs/probe.md).
install(TARGETS weft weft-probe RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT agent)
install(TARGETS weft-controller RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT controller)
# weft-dpdk (`weft stack --device dpdk`) only on request (`cmake --install build --component dpdk`):
# in the package its libraries would make every agent host install DPDK.
if(TARGET weft-dpdk)
  install(TARGETS weft-dpdk RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT dpdk EXCLUDE_FROM_ALL)
endif()
install(FILES deploy/systemd/weft-agent.service DESTINATION lib/systemd/system COMPONENT agent)
install(FILES deploy/systemd/weft-controller.service DESTINATION lib/systemd/system COMPONENT controller)
install(FILES deploy/systemd/weft.sysusers.conf DESTINATION lib/sysusers.d RENAME weft.conf COMPONENT common)
# The example config (install it as /etc/weft/weft.yaml, docs/deploy.md) and the Grafana dashboard.
install(FILES deploy/weft.yaml deploy/grafana-weft.json DESTINATION ${CMAKE_INSTALL_DATADIR}/weft COMPONENT common)
# The dashboard is compiled into weft (src/controller/web_assets); the same files are installed for a
# proxy or a CDN that serves them itself.
install(FILES web/index.html DESTINATION ${CMAKE_INSTALL_DATADIR}/weft/web COMPONENT common)
install(DIRECTORY web/assets/ DESTINATION ${CMAKE_INSTALL_DATADIR}/weft/web/assets COMPONENT common)
# The units' Documentation= points here.
install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT common)
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT common PATTERN "BENCHMARKS.md" EXCLUDE)

set(CPACK_PACKAGE_NAME weft)
set(CPACK_PACKAGE_VENDOR weft)
set(CPACK_PACKAGE_CONTACT "weft maintainers <weft@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "datacenter network mesh monitor (agent, controller, dashboard) and RDMA tools")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)  # the debug info is most of the binary (135 MB RelWithDebInfo)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL common agent controller)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)  # Depends: from the libraries each package's programs link
set(CPACK_DEBIAN_COMPRESSION_TYPE gzip)  # xz takes several times longer for a few MB less
set(CPACK_DEBIAN_COMMON_PACKAGE_NAME weft-common)
set(CPACK_DEBIAN_COMMON_PACKAGE_ARCHITECTURE all)
set(CPACK_COMPONENT_COMMON_DESCRIPTION "weft: the weft user, example config, dashboard files and documentation")
set(CPACK_DEBIAN_AGENT_PACKAGE_NAME weft)
set(CPACK_COMPONENT_AGENT_DESCRIPTION "weft: the agent, the probe and RDMA tools and the user-space TCP/IP stack")
set(CPACK_DEBIAN_CONTROLLER_PACKAGE_NAME weft-controller)
set(CPACK_COMPONENT_CONTROLLER_DESCRIPTION "weft: the mesh monitor's controller (API, dashboard, ingest)")
set(CPACK_COMPONENT_AGENT_DEPENDS common)       # Depends: weft-common (= version)
set(CPACK_COMPONENT_CONTROLLER_DEPENDS common)
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)
set(CPACK_DEBIAN_COMMON_PACKAGE_CONTROL_EXTRA ${CMAKE_SOURCE_DIR}/deploy/debian/weft-common/postinst)
foreach(pkg IN ITEMS agent controller)
  set(dir ${CMAKE_SOURCE_DIR}/deploy/debian/weft-${pkg})
  string(TOUPPER ${pkg} PKG)
  set(CPACK_DEBIAN_${PKG}_PACKAGE_CONTROL_EXTRA ${dir}/postinst ${dir}/prerm ${dir}/postrm)
endforeach()
include(CPack)
