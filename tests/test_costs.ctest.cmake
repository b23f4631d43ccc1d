# Run by ctest (a TEST_INCLUDE_FILES script, after the directory's discovered GoogleTest tests are
# defined): the costs of tests/test_costs.cmake. ctest ignores a name that is not a test.
include(${CMAKE_CURRENT_LIST_DIR}/test_costs.cmake)
list(LENGTH QCONFORM_TEST_COSTS _n)
math(EXPR _last "${_n} - 1")
foreach(_i RANGE 0 ${_last} 2)
  math(EXPR _j "${_i} + 1")
  list(GET QCONFORM_TEST_COSTS ${_i} _name)
  list(GET QCONFORM_TEST_COSTS ${_j} _cost)
  set_tests_properties(${_name} PROPERTIES COST ${_cost})
endforeach()
