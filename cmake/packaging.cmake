# Install rules and the Debian package (CPack DEB).
#
# `cmake --install <build> --prefix /usr` (or `cpack -G DEB` in the build directory) installs:
#   /usr/bin/streamd, /usr/bin/streamctl                     component server / client
#   /etc/streamd/streamd.yaml (deploy/streamd.yaml)          component server, a conffile in the .deb
#   /lib/systemd/system/streamd.service                      component server
#   /usr/lib/<arch>/libstreamd-client.a, libstreamd_proto.a,
#   /usr/include/streamd/{client/*.h,proto/{placement,error_codes,framing}.h}, streamd-client.pc   component dev
#   /usr/share/doc/streamd/*.md                              component docs
# The configuration and unit paths are absolute (Debian's places, not under the prefix) and honour
# DESTDIR; override STREAMD_SYSCONF_DIR / STREAMD_SYSTEMD_UNIT_DIR for another layout. Targets that do
# not exist yet (a partial tree) are skipped, so configuring never fails on their account.
# The package's maintainer scripts (deploy/debian/) create the `streamd` system user and
# /var/lib/streamd; see docs/OPERATIONS.md.

include(GNUInstallDirs)

set(STREAMD_SYSCONF_DIR "/etc/streamd" CACHE PATH "Where the sample configuration is installed")
set(STREAMD_SYSTEMD_UNIT_DIR "/lib/systemd/system" CACHE PATH "Where the systemd unit is installed")

if(TARGET streamd)
  install(TARGETS streamd RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT server)
endif()
if(TARGET streamctl)
  install(TARGETS streamctl RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT client)
endif()
install(FILES deploy/streamd.yaml DESTINATION ${STREAMD_SYSCONF_DIR} COMPONENT server)
install(FILES deploy/streamd.service DESTINATION ${STREAMD_SYSTEMD_UNIT_DIR} COMPONENT server)

# The client library is static; its generated protocol code lives in libstreamd_proto.a, so both are
# installed and the pkg-config file names both. Its dependencies go in Requires, not Requires.private:
# a static archive's users link them too (protobuf, and OpenSSL for TLS; libprotobuf-dev and
# libssl-dev describe them).
if(TARGET streamd_client AND TARGET streamd_proto)
  install(TARGETS streamd_client streamd_proto ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev)
  # Public headers include each other as "client/x.h": consumers add -I<includedir>/streamd. wire.h is
  # internal (it includes the generated protocol header) and streamctl/ is the tool, not the library.
  install(DIRECTORY client/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/streamd/client COMPONENT dev
          FILES_MATCHING PATTERN "*.h" PATTERN "wire.h" EXCLUDE PATTERN "streamctl" EXCLUDE)
  # The wire contract the client shares with the broker, which its headers include: the placement
  # rule, the error table and the framing.
  install(FILES proto/placement.h proto/error_codes.h proto/framing.h
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/streamd/proto COMPONENT dev)
  # Relocatable: the prefix is found from the .pc file's own place, so `cpack` (prefix /usr) and
  # `cmake --install --prefix ANY` both produce a correct file.
  file(RELATIVE_PATH STREAMD_PC_TO_PREFIX "/p/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/p")
  string(REGEX REPLACE "/$" "" STREAMD_PC_TO_PREFIX "${STREAMD_PC_TO_PREFIX}")
  configure_file(${CMAKE_CURRENT_LIST_DIR}/streamd-client.pc.in ${PROJECT_BINARY_DIR}/streamd-client.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/streamd-client.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
          COMPONENT dev)
endif()

install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT docs)
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT docs FILES_MATCHING PATTERN "*.md")

# One .deb holding every component: a broker host also wants streamctl, and the library is small.
set(CPACK_GENERATOR "DEB")
set(CPACK_PACKAGE_NAME "streamd")
set(CPACK_PACKAGE_VENDOR "streamd")
set(CPACK_PACKAGE_CONTACT "streamd maintainers <streamd@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "broker daemon for durable, partitioned, offset-addressed logs")
set(CPACK_PACKAGE_DESCRIPTION
    "streamd keeps named, partitioned logs on local disk and serves them over TCP: producers append \
batches that are fsynced before they are acknowledged, readers read any partition from any offset. \
The package holds the daemon, the streamctl command-line client, the static C++ client library, a \
hardened systemd unit and the production configuration.")
set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION "net")
set(CPACK_DEBIAN_PACKAGE_PRIORITY "optional")
# Shared-library dependencies come from dpkg-shlibdeps (dpkg-dev, pulled in by build-essential).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# useradd/groupadd are in passwd, which every Debian system has; the static library needs protobuf's
# and OpenSSL's headers and libraries to be linked against.
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "libprotobuf-dev, libssl-dev")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/deploy/debian/conffiles
    ${PROJECT_SOURCE_DIR}/deploy/debian/postinst
    ${PROJECT_SOURCE_DIR}/deploy/debian/prerm
    ${PROJECT_SOURCE_DIR}/deploy/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# Packaging never rebuilds: `cpack` packs what the build already produced (the packaging test runs
# cpack inside ctest, after the build).
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)
include(CPack)

# The package and unit tests live with the rules they check; here every target is already defined.
if(BUILD_TESTING)
  add_subdirectory(tests/packaging)
endif()
