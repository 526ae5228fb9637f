# `cmake --install` and the Debian package (CPack): the layout akts runs from on a node.
#   /usr/bin/akts                              the static binary (the library's BPF code is in its skeletons)
#   /usr/lib/akts/bpf/*.bpf.o                  the dispatcher and the library's policies, as built (eBPF objects)
#   /usr/share/akts/include/                   what admission's gate 1 compiles a candidate policy against
#   /usr/lib/systemd/system/akts.service       the unit (not enabled: `systemctl enable --now akts`)
#   /etc/akts/akts.json                        the example config (a conffile: an edited one is kept); always
#                                              under /etc (CMAKE_INSTALL_FULL_SYSCONFDIR for the /usr prefix)
#   /usr/share/man/man1/akts.1.gz              from --help (help2man), when help2man is there
#   /usr/share/doc/akts/{copyright,changelog.gz,README.md,deploy.md}
#   /usr/share/akts/terminfo/                  a few terminals' entries for `akts top` (ncurses, linked statically,
#                                              reads them at run time; the container image has no other)
include(GNUInstallDirs)

install(TARGETS akts RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${BPF_GEN_DIR}/akts_dispatcher.bpf.o DESTINATION lib/akts/bpf)
foreach(_p IN LISTS AKTS_LIBRARY_POLICIES)
  install(FILES ${BPF_GEN_DIR}/akts_${_p}.bpf.o DESTINATION lib/akts/bpf)
endforeach()
file(GLOB _akts_headers CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/bpf/*.h)
install(FILES ${_akts_headers} DESTINATION ${CMAKE_INSTALL_DATADIR}/akts/include)
install(DIRECTORY ${SCX_INCLUDE_DIR}/scx ${SCX_INCLUDE_DIR}/bpf-compat ${LIBBPF_INCLUDE_DIR}/bpf
        DESTINATION ${CMAKE_INSTALL_DATADIR}/akts/include)

# The terminals akts top is most often run in, from the build host's ncurses-base (ncurses's terminfo database).
foreach(_t xterm xterm-256color screen screen-256color tmux tmux-256color linux vt100 vt220 dumb rxvt-unicode)
  string(SUBSTRING ${_t} 0 1 _l)
  foreach(_d /lib/terminfo /usr/share/terminfo)
    if(EXISTS ${_d}/${_l}/${_t})
      install(FILES ${_d}/${_l}/${_t} DESTINATION ${CMAKE_INSTALL_DATADIR}/akts/terminfo/${_l})
      break()
    endif()
  endforeach()
endforeach()

# The unit names the installed binary: written at install time, so `--prefix` and the package's /usr both hold.
install(CODE "
  set(AKTS_INSTALLED_BIN \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}/akts\")
  configure_file(\"${PROJECT_SOURCE_DIR}/dist/akts.service.in\" \"${CMAKE_BINARY_DIR}/dist/akts.service\" @ONLY)
")
install(FILES ${CMAKE_BINARY_DIR}/dist/akts.service DESTINATION lib/systemd/system)
install(FILES ${PROJECT_SOURCE_DIR}/dist/akts.json DESTINATION ${CMAKE_INSTALL_FULL_SYSCONFDIR}/akts)
# What lintian says of a deliberate choice: one static binary that runs on any root filesystem, and eBPF
# objects (not amd64 code) beside it.
install(FILES ${PROJECT_SOURCE_DIR}/dist/debian/lintian-overrides DESTINATION ${CMAKE_INSTALL_DATADIR}/lintian/overrides
        RENAME akts)

# The man page, from --help.
find_program(HELP2MAN help2man)
if(HELP2MAN)
  add_custom_command(
    OUTPUT ${CMAKE_BINARY_DIR}/dist/akts.1.gz
    COMMAND ${HELP2MAN} --no-info --section=1 --name "run-time sched_ext policy switching"
            --include ${PROJECT_SOURCE_DIR}/dist/akts.h2m --output ${CMAKE_BINARY_DIR}/dist/akts.1 $<TARGET_FILE:akts>
    COMMAND gzip -9nf ${CMAKE_BINARY_DIR}/dist/akts.1
    DEPENDS akts ${PROJECT_SOURCE_DIR}/dist/akts.h2m
    COMMENT "man page (help2man)" VERBATIM)
  add_custom_target(akts_man ALL DEPENDS ${CMAKE_BINARY_DIR}/dist/akts.1.gz)
  install(FILES ${CMAKE_BINARY_DIR}/dist/akts.1.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
else()
  message(STATUS "help2man not found: no man page (apt-get install help2man)")
endif()

# Debian wants a copyright file and the changelog, compressed (a native package's is changelog.gz).
set(_changelog ${CMAKE_BINARY_DIR}/dist/changelog)
string(TIMESTAMP _date "%a, %d %b %Y %H:%M:%S +0000" UTC)  # SOURCE_DATE_EPOCH, when set, for a reproducible one
file(WRITE ${_changelog} "akts (${PROJECT_VERSION}) unstable; urgency=medium\n\n  * Built from the akts repository; see git log.\n\n -- akts maintainers <maintainers@akts.invalid>  ${_date}\n")
add_custom_command(OUTPUT ${_changelog}.gz COMMAND gzip -9nkf ${_changelog} DEPENDS ${_changelog} VERBATIM)
add_custom_target(akts_changelog ALL DEPENDS ${_changelog}.gz)
install(FILES ${_changelog}.gz ${PROJECT_SOURCE_DIR}/dist/copyright DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/docs/deploy.md DESTINATION ${CMAKE_INSTALL_DOCDIR})

# The Debian package: `cpack -G DEB` in the build directory (./akts package).
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME akts)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
# Installed into a staging DESTDIR with the prefix /usr, so what names the prefix (the unit's ExecStart) is right.
set(CPACK_SET_DESTDIR ON)
set(CPACK_INSTALL_PREFIX /usr)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_PACKAGE_CONTACT "akts maintainers <maintainers@akts.invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "run-time sched_ext policy switching for LLM-serving nodes")
# CPack puts the summary first: this is the long description's body.
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "akts loads a library of sched_ext (eBPF) scheduling policies once, verified,
and switches between them at run time by writing one integer: from the
command line, a control socket, an MCP server for agents, or a controller
that watches telemetry. A wrong choice falls through to a safe default.
Needs a kernel with sched_ext (CONFIG_SCHED_CLASS_EXT).")
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://docs.kernel.org/scheduler/sched-ext.html")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
# The binary is static: it depends on no library.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS OFF)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${PROJECT_SOURCE_DIR}/dist/debian/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
