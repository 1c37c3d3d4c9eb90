# Compiles SOURCE with CXX (-fsyntax-only) and succeeds only if compilation FAILS with a
# diagnostic matching EXPECT. With EXPECT empty ("control"), succeeds only if it compiles.
#   cmake -DCXX=... -DSOURCE=... -DINCLUDE=... [-DEXPECT=regex] -P expect_compile_failure.cmake
execute_process(
  COMMAND ${CXX} -std=c++20 -fsyntax-only -I${INCLUDE} ${SOURCE}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(log "${out}${err}")
if(NOT DEFINED EXPECT OR EXPECT STREQUAL "")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "control file ${SOURCE} must compile, but:\n${log}")
  endif()
  message(STATUS "compiled, as it must")
  return()
endif()
if(rc EQUAL 0)
  message(FATAL_ERROR "${SOURCE} compiled, but must be rejected with a diagnostic matching: ${EXPECT}")
endif()
if(NOT log MATCHES "${EXPECT}")
  message(FATAL_ERROR "${SOURCE} was rejected, but not with the expected diagnostic `${EXPECT}`:\n${log}")
endif()
string(REGEX MATCH "[^\n]*${EXPECT}[^\n]*" line "${log}")
message(STATUS "rejected as expected: ${line}")
