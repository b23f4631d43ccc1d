# qconform_add_conformance_tests(): ctest tests that run qconform on a client's backends, one test per
# suite x backend (docs/integrate.md, "CI").
#
#   qconform_add_conformance_tests(
#     BACKENDS name...          the backends to run: names a plugin offers, "exec:CMD ARGS", "py:MODULE:CLASS"
#     [PLUGIN target|path...]   plugins to load (a CMake target is resolved to its file; the test depends on it)
#     [SUITES file|folder...]   case files, or folders of them (default: qconform's default suites)
#     [PREFIX name]             test name prefix (default: conformance)
#     [BASELINE file [GATE]]    known mismatches; with GATE a test fails only on a change
#     [TIMEOUT seconds] [ISOLATE]
#     [LABELS label...]         ctest labels (conformance is always added)
#     [ARGS arg...]             more arguments for qconform run
#     [REPORT_DIR dir])         where each test writes its reports (default: <binary dir>/qconform-reports)
#
# Test NAME: <PREFIX>.<suite file stem>.<backend> (an exec: backend as "exec", py:M:C as py_M_C). Each test
# writes report.json, report.html and report.junit.xml (JUnit for CI) into
# <REPORT_DIR>/<suite>/<backend slug>/. Exit 77 (every result SKIP) is a ctest skip.
function(qconform_add_conformance_tests)
  cmake_parse_arguments(QC "GATE;ISOLATE" "PREFIX;BASELINE;TIMEOUT;REPORT_DIR" "BACKENDS;PLUGIN;SUITES;LABELS;ARGS"
                        ${ARGN})
  if(NOT QC_BACKENDS)
    message(FATAL_ERROR "qconform_add_conformance_tests: BACKENDS is required")
  endif()
  if(QC_GATE AND NOT QC_BASELINE)
    message(FATAL_ERROR "qconform_add_conformance_tests: GATE needs BASELINE")
  endif()
  if(NOT QC_PREFIX)
    set(QC_PREFIX conformance)
  endif()
  if(NOT QC_REPORT_DIR)
    set(QC_REPORT_DIR ${CMAKE_CURRENT_BINARY_DIR}/qconform-reports)
  endif()
  if(NOT QC_SUITES)
    set(QC_SUITES ${QCONFORM_CASES_DIR})
  endif()
  # The suite files: folders expand to their *.json case files (not the schema).
  set(files)
  foreach(s IN LISTS QC_SUITES)
    get_filename_component(s ${s} ABSOLUTE)
    if(IS_DIRECTORY ${s})
      file(GLOB_RECURSE found ${s}/*.json)
      list(FILTER found EXCLUDE REGEX "schema\\.json$")
      list(SORT found)
      list(APPEND files ${found})
    else()
      list(APPEND files ${s})
    endif()
  endforeach()
  set(common)
  foreach(p IN LISTS QC_PLUGIN)
    if(TARGET ${p})
      list(APPEND common --plugin $<TARGET_FILE:${p}>)
    else()
      get_filename_component(p ${p} ABSOLUTE)
      list(APPEND common --plugin ${p})
    endif()
  endforeach()
  if(QC_BASELINE)
    get_filename_component(b ${QC_BASELINE} ABSOLUTE)
    list(APPEND common --baseline ${b})
    if(QC_GATE)
      list(APPEND common --gate)
    endif()
  endif()
  if(QC_TIMEOUT)
    list(APPEND common --timeout ${QC_TIMEOUT})
  endif()
  if(QC_ISOLATE)
    list(APPEND common --isolate)
  endif()
  foreach(f IN LISTS files)
    get_filename_component(suite ${f} NAME_WE)
    foreach(backend IN LISTS QC_BACKENDS)
      # exec: commands (often generator expressions) are named "exec"; one per call (PREFIX tells them apart).
      if(backend MATCHES "^exec:")
        set(slug exec)
      else()
        string(REGEX REPLACE "[^A-Za-z0-9_.-]+" "_" slug "${backend}")
        string(REGEX REPLACE "^_+|_+$" "" slug "${slug}")
      endif()
      set(dir ${QC_REPORT_DIR}/${suite}/${slug})
      add_test(NAME ${QC_PREFIX}.${suite}.${slug}
               COMMAND ${QCONFORM_EXECUTABLE} run ${f} --backend ${backend} ${common} --report-dir ${dir} --quiet
                       ${QC_ARGS})
      set_tests_properties(${QC_PREFIX}.${suite}.${slug} PROPERTIES SKIP_RETURN_CODE 77
                           LABELS "conformance;${QC_LABELS}" ENVIRONMENT "PYTHONPATH=${QCONFORM_PYTHONPATH}")
    endforeach()
  endforeach()
endfunction()
