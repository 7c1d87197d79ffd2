# Install layout and the Debian package (cpack -G DEB). With the default
# prefix /usr/local everything lands under it (config in /usr/local/etc/dq).
# Configure with -DCMAKE_INSTALL_PREFIX=/usr for the package (as
# tests/package/check-deb.sh does): the config is then /etc/dq/dq.ini and the
# unit /usr/lib/systemd/system/dq.service.
include(GNUInstallDirs)

set(DQ_PACKAGED_INI "${CMAKE_BINARY_DIR}/packaging/dq.ini")
add_custom_command(
  OUTPUT "${DQ_PACKAGED_INI}"
  COMMAND ${CMAKE_COMMAND} -DINPUT=${CMAKE_SOURCE_DIR}/conf/dq.ini -DOUTPUT=${DQ_PACKAGED_INI}
          -P ${CMAKE_SOURCE_DIR}/cmake/packaged_config.cmake
  DEPENDS "${CMAKE_SOURCE_DIR}/conf/dq.ini" "${CMAKE_SOURCE_DIR}/cmake/packaged_config.cmake"
  COMMENT "Writing the packaged dq.ini")
add_custom_target(dq_packaged_config ALL DEPENDS "${DQ_PACKAGED_INI}")

if(TARGET dqd)
  install(TARGETS dqd RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
if(TARGET dqctl)
  install(TARGETS dqctl RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(FILES "${DQ_PACKAGED_INI}" DESTINATION ${CMAKE_INSTALL_FULL_SYSCONFDIR}/dq)
install(FILES "${CMAKE_SOURCE_DIR}/packaging/dq.logrotate"
        DESTINATION ${CMAKE_INSTALL_FULL_SYSCONFDIR}/logrotate.d RENAME dq)
install(FILES "${CMAKE_SOURCE_DIR}/packaging/dq.service"
        DESTINATION ${CMAKE_INSTALL_PREFIX}/lib/systemd/system)
install(DIRECTORY "${CMAKE_SOURCE_DIR}/sql/" DESTINATION ${CMAKE_INSTALL_DATADIR}/dq/sql
        FILES_MATCHING PATTERN "*.sql")
install(FILES "${CMAKE_SOURCE_DIR}/README.md" "${CMAKE_SOURCE_DIR}/LICENSE"
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY "${CMAKE_SOURCE_DIR}/docs/" DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs)

set(CPACK_PACKAGE_NAME "dq")
set(CPACK_PACKAGE_VENDOR "The dq authors")
set(CPACK_PACKAGE_CONTACT "dq maintainers <dq@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "dq: a delay queue server (delayed jobs delivered to HTTP callbacks)")
set(CPACK_RESOURCE_FILE_LICENSE "${CMAKE_SOURCE_DIR}/LICENSE")
set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION "net")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# tzdata: the time zones dq reads from /usr/share/zoneinfo at run time
# (libdate-tz3 comes from the shared-library scan above).
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser, tzdata")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "redis-server")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    "${CMAKE_SOURCE_DIR}/packaging/debian/postinst;${CMAKE_SOURCE_DIR}/packaging/debian/prerm;${CMAKE_SOURCE_DIR}/packaging/debian/postrm;${CMAKE_SOURCE_DIR}/packaging/debian/conffiles")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
