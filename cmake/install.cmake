# `cmake --install <build> --prefix <dir>`: the C++ client as a library for other projects.
# Installs nereus::client and what it needs from nereus (nereus::proto, nereus::base) and, when
# built, nereus::runtime: static libraries in lib/, headers in include/nereus/..., a CMake package
# (lib/cmake/nereus: find_package(nereus) -> nereus::client, nereus::runtime) and a pkg-config
# file (lib/pkgconfig/nereus-client.pc). Third-party dependencies stay Debian's: the package
# config finds them again (cmake/nereus-config.cmake.in). See README.md "Using the C++ client".
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(nereus_install_targets nereus_base nereus_proto nereus_client)
set(nereus_install_modules base proto client)
if(TARGET nereus_runtime)
    list(APPEND nereus_install_targets nereus_runtime)
    list(APPEND nereus_install_modules runtime)
endif()
foreach(t IN LISTS nereus_install_targets)
    string(REPLACE "nereus_" "" short ${t})
    set_target_properties(${t} PROPERTIES EXPORT_NAME ${short})
endforeach()

install(TARGETS ${nereus_install_targets} EXPORT nereus-targets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
foreach(m IN LISTS nereus_install_modules)
    install(DIRECTORY ${PROJECT_SOURCE_DIR}/src/nereus/${m}/
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/nereus/${m}
        FILES_MATCHING PATTERN "*.h")
endforeach()
# The generated protobuf header that nereus/proto/pulsar_api.h includes.
install(FILES ${PROJECT_BINARY_DIR}/src/nereus/proto/gen/nereus/proto/pulsar_api.pb.h
    DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/nereus/proto)

set(nereus_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/nereus)
install(EXPORT nereus-targets NAMESPACE nereus:: FILE nereus-targets.cmake
    DESTINATION ${nereus_cmake_dir})
if(TARGET nereus_runtime)
    set(NEREUS_WITH_RUNTIME ON)
else()
    set(NEREUS_WITH_RUNTIME OFF)
endif()
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/nereus-config.cmake.in
    ${PROJECT_BINARY_DIR}/nereus-config.cmake INSTALL_DESTINATION ${nereus_cmake_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/nereus-config-version.cmake
    VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/nereus-config.cmake
    ${PROJECT_BINARY_DIR}/nereus-config-version.cmake DESTINATION ${nereus_cmake_dir})

# pkg-config: `pkg-config --cflags --libs nereus-client` (static libraries, so Libs lists the
# third-party ones too; Requires names the ones that ship a .pc file).
# The prefix is found from the .pc file's own place, so `cmake --install --prefix X` works.
file(RELATIVE_PATH nereus_pc_up /nereus/${CMAKE_INSTALL_LIBDIR}/pkgconfig /nereus)
set(NEREUS_PC_PREFIX "\${pcfiledir}/${nereus_pc_up}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/nereus-client.pc.in
    ${PROJECT_BINARY_DIR}/nereus-client.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/nereus-client.pc
    DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
