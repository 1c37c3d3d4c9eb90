# cmake -DPROGRAM=<exe> -DEXPECTED=<file> [-DARGS=<a;b;...>] -P check_output.cmake
# Runs PROGRAM with ARGS; fails unless it exits with 0 and its standard output equals the contents
# of EXPECTED.
execute_process(COMMAND ${PROGRAM} ${ARGS} RESULT_VARIABLE status OUTPUT_VARIABLE out
                ERROR_VARIABLE err TIMEOUT 100)
file(READ ${EXPECTED} expected)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${PROGRAM} exited with ${status}\nstdout:\n${out}\nstderr:\n${err}")
endif()
if(NOT out STREQUAL expected)
  message(FATAL_ERROR "${PROGRAM}: output differs from ${EXPECTED}\n--- expected:\n${expected}--- got:\n${out}")
endif()
message(STATUS "output matches ${EXPECTED}")
