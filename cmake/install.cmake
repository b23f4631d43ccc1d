# `cmake --install build --prefix P` lays out a relocatable package (docs/integrate.md):
#   P/bin/qconform                          the CLI; it finds its suites in ../share/qconform/cases
#   P/include/qconform/*.hpp, plugin.h      the core: what a backend, a plugin or an exec runner needs
#   P/include/qconform/{oracles,cases,...}  the oracle and harness headers (for qconform::oracle and beyond)
#   P/lib/libqconform_*.a                   the static libraries (position independent: plugins link them)
#   P/lib/cmake/qconform/                   qconformConfig.cmake, qconformConfigVersion.cmake, the targets
#   P/share/qconform/cases/                 the default suites and case.schema.json
#   P/share/qconform/report.schema.json     the report schema
#   P/python/qconform/                      the Python package (PYTHONPATH=P/python)
# Every path in the exported targets is relative to the prefix, so the tree can be moved.
include(CMakePackageConfigHelpers)

set(QCONFORM_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/qconform)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/core/include/qconform DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
foreach(dir oracles cases reports harness backends)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${dir}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/qconform/${dir}
          FILES_MATCHING PATTERN "*.hpp" PATTERN "*.inc")
endforeach()

# The libraries in link order. The INTERFACE targets that carry the project's warning and
# floating-point flags are linked privately (link-only once exported, so they add nothing to a client);
# they are exported only because a static library's private links travel with it.
set(QCONFORM_EXPORTED_TARGETS qconform_core qconform_oracle qconform_cases qconform_reports qconform_host qconform_vnni qconform_exec
                              qconform_backends qconform_harness qconform_warnings qconform_strict_fp)
if(QCONFORM_BUILD_HIP)
  list(APPEND QCONFORM_EXPORTED_TARGETS qconform_hip qconform_hip_kernels)
endif()
foreach(t IN LISTS QCONFORM_EXPORTED_TARGETS)
  string(REGEX REPLACE "^qconform_" "" _qc_export_name ${t})
  set_target_properties(${t} PROPERTIES EXPORT_NAME ${_qc_export_name})
  if(NOT TARGET qconform::${_qc_export_name})
    add_library(qconform::${_qc_export_name} ALIAS ${t})
  endif()
endforeach()
install(TARGETS ${QCONFORM_EXPORTED_TARGETS} EXPORT qconformTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT qconformTargets NAMESPACE qconform:: DESTINATION ${QCONFORM_CMAKE_DIR})
install(TARGETS qconform RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

install(DIRECTORY ${PROJECT_SOURCE_DIR}/cases/ DESTINATION ${CMAKE_INSTALL_DATADIR}/qconform/cases
        FILES_MATCHING PATTERN "*.json" PATTERN "*.onnx" PATTERN "*.npy")  # models: cases/models
install(FILES ${PROJECT_SOURCE_DIR}/reports/report.schema.json DESTINATION ${CMAKE_INSTALL_DATADIR}/qconform)
install(FILES ${PROJECT_SOURCE_DIR}/cmake/qconform_conformance.cmake DESTINATION ${QCONFORM_CMAKE_DIR})

set(QCONFORM_CONFIG_HIP ${QCONFORM_BUILD_HIP})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/qconformConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/qconformConfig.cmake INSTALL_DESTINATION ${QCONFORM_CMAKE_DIR}
                              PATH_VARS CMAKE_INSTALL_BINDIR CMAKE_INSTALL_DATADIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/qconformConfigVersion.cmake VERSION ${PROJECT_VERSION}
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/qconformConfig.cmake ${PROJECT_BINARY_DIR}/qconformConfigVersion.cmake
        DESTINATION ${QCONFORM_CMAKE_DIR})
