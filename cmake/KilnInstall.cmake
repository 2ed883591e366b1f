# `cmake --install build --prefix DIR`: what C and C++ users build against
# (docs/embedding.md, "Installing"):
#   DIR/include/kiln-c/   runtime.h, compiler.h and their C++ wrappers
#   DIR/lib/              libkiln_runtime.so, libkiln_compiler.so, and what
#                         the compiler links into every model
#                         (libKilnModelRuntime.a, KilnModelExports.map)
#   DIR/bin/              kilnc, kiln-run
#   DIR/lib/cmake/Kiln/   find_package(Kiln): Kiln::runtime, Kiln::compiler
#   DIR/lib/pkgconfig/    kiln-runtime.pc, kiln-compiler.pc
# The tree is relocatable (the package files find the prefix from their own
# place; the libraries and tools find each other through $ORIGIN); the
# compiler uses Debian's LLVM 22 (libLLVM) where it was built.
include(CMakePackageConfigHelpers)

install(DIRECTORY ${KILN_SOURCE_DIR}/include/kiln-c DESTINATION include
  FILES_MATCHING PATTERN "*.h" PATTERN "*.hpp")
set_target_properties(kiln_compiler kilnc PROPERTIES
  INSTALL_RPATH "$ORIGIN;$ORIGIN/../lib"
  INSTALL_RPATH_USE_LINK_PATH TRUE)
install(TARGETS kiln_runtime kiln_compiler LIBRARY DESTINATION lib)
install(FILES $<TARGET_FILE:KilnModelRuntime>
  ${CMAKE_ARCHIVE_OUTPUT_DIRECTORY}/KilnModelExports.map DESTINATION lib)
install(TARGETS kilnc kiln-run RUNTIME DESTINATION bin)

configure_package_config_file(${KILN_SOURCE_DIR}/cmake/KilnConfig.cmake.in
  ${KILN_BINARY_DIR}/cmake/KilnConfig.cmake
  INSTALL_DESTINATION lib/cmake/Kiln)
write_basic_package_version_file(${KILN_BINARY_DIR}/cmake/KilnConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${KILN_BINARY_DIR}/cmake/KilnConfig.cmake
  ${KILN_BINARY_DIR}/cmake/KilnConfigVersion.cmake
  DESTINATION lib/cmake/Kiln)

foreach(pc kiln-runtime kiln-compiler)
  configure_file(${KILN_SOURCE_DIR}/cmake/${pc}.pc.in
    ${KILN_BINARY_DIR}/cmake/${pc}.pc @ONLY)
  install(FILES ${KILN_BINARY_DIR}/cmake/${pc}.pc DESTINATION lib/pkgconfig)
endforeach()
