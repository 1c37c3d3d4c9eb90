# Compiles SOURCE with CXX (-fsyntax-only, STD_FLAG, FLAGS) and succeeds only if compilation FAILS
# with a diagnostic matching EXPECT. With EXPECT empty ("control"), succeeds only if it compiles.
#   cmake -DCXX=... [-DFLAGS=...] [-DSTD_FLAG=-std=c++20] -DSOURCE=... -DINCLUDE=...
#         [-DEXPECT=regex] -P expect_compile_failure.cmake
if(NOT STD_FLAG)
  set(STD_FLAG -std=c++20)
endif()
separate_arguments(flags UNIX_COMMAND "${FLAGS}")
execute_process(
  COMMAND ${CXX} ${STD_FLAG} ${flags} -fsyntax-only -I${INCLUDE} ${SOURCE}
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
