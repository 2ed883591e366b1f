# The wheel from an existing build (pyproject.toml, docs/python.md):
#   pip wheel . -w dist -C cmake.define.KILN_WHEEL_FROM_BUILD=$PWD/build
# packages what that build tree already built (the two extension modules,
# libkiln_runtime.so, libkiln_compiler.so, the runtime archive and exports
# map compiled models link) instead of compiling Kiln a second time. It
# builds nothing: build the `kiln_python` target there first. The modules
# must be for the Python that builds the wheel (the build's KILN_PYTHON,
# .venv's); each installed library's RUNPATH is set to what the wheel needs
# ($ORIGIN, and Debian's LLVM for the compiler), replacing the build tree's.
set(prebuilt "${KILN_WHEEL_FROM_BUILD}")
find_package(Python 3.9 REQUIRED COMPONENTS Interpreter Development.Module)
set(modules
  "${prebuilt}/python/kiln/_runtime.${Python_SOABI}.so"
  "${prebuilt}/python/kiln/_compiler.${Python_SOABI}.so")
set(libraries
  "${prebuilt}/lib/libkiln_runtime.so"
  "${prebuilt}/lib/libkiln_compiler.so")
foreach(file ${modules} ${libraries}
    "${prebuilt}/lib/libKilnModelRuntime.a" "${prebuilt}/lib/KilnModelExports.map")
  if(NOT EXISTS "${file}")
    message(FATAL_ERROR "KILN_WHEEL_FROM_BUILD: ${file} is missing: build the "
      "kiln_python target in ${prebuilt} first, for this Python "
      "(${Python_EXECUTABLE}, ${Python_SOABI})")
  endif()
endforeach()
# pyproject.toml builds this target; here it has nothing to do.
add_custom_target(kiln_python)

file(GLOB py_sources
  ${CMAKE_CURRENT_SOURCE_DIR}/python/package/kiln/*.py
  ${CMAKE_CURRENT_SOURCE_DIR}/python/package/kiln/*.pyi
  ${CMAKE_CURRENT_SOURCE_DIR}/python/package/kiln/py.typed)
install(FILES ${py_sources} DESTINATION kiln)
install(PROGRAMS ${modules} ${libraries} DESTINATION kiln)
install(FILES "${prebuilt}/lib/libKilnModelRuntime.a"
  "${prebuilt}/lib/KilnModelExports.map" DESTINATION kiln)
# libkiln_runtime.so needs only libc (and has no RUNPATH to replace).
foreach(file ${modules} "${prebuilt}/lib/libkiln_compiler.so")
  get_filename_component(name "${file}" NAME)
  set(rpath "$ORIGIN")
  if(name STREQUAL "libkiln_compiler.so")
    set(rpath "$ORIGIN:/usr/lib/llvm-22/lib")
  endif()
  install(CODE "file(RPATH_SET FILE \"\${CMAKE_INSTALL_PREFIX}/kiln/${name}\"
    NEW_RPATH \"${rpath}\")")
endforeach()
