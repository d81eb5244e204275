# Helpers that give every module the same shape: a library `magnetar::<name>`,
# sources included from `src/`, and one GoogleTest binary per module.

# magnetar_module(<name> SOURCES ... [DEPS ...])
function(magnetar_module name)
  cmake_parse_arguments(M "" "" "SOURCES;DEPS" ${ARGN})
  add_library(magnetar_${name} STATIC ${M_SOURCES})
  add_library(magnetar::${name} ALIAS magnetar_${name})
  target_include_directories(magnetar_${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(magnetar_${name} PUBLIC ${M_DEPS})
endfunction()

# magnetar_test(<binary> SOURCES ... DEPS ... [LABELS ...])
# Every test case becomes its own CTest test, so `ctest -j` runs them in parallel.
function(magnetar_test name)
  cmake_parse_arguments(T "" "" "SOURCES;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_DEPS} GTest::gtest GTest::gmock GTest::gtest_main)
  if(NOT T_LABELS)
    set(T_LABELS unit)
  endif()
  gtest_discover_tests(${name}
    DISCOVERY_MODE PRE_TEST
    PROPERTIES LABELS "${T_LABELS}"
    DISCOVERY_TIMEOUT 60)
endfunction()
