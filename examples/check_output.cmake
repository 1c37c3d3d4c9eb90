# cmake -DPROGRAM=<exe> -DEXPECTED=<file> -P check_output.cmake [-- args...]
# Runs PROGRAM with the arguments after `--`; fails unless it exits with 0 and its standard
# output equals the contents of EXPECTED.
set(args "")
set(seen_separator FALSE)
math(EXPR last "${CMAKE_ARGC} - 1")
foreach(i RANGE ${last})
  if(seen_separator)
    list(APPEND args "${CMAKE_ARGV${i}}")
  elseif("${CMAKE_ARGV${i}}" STREQUAL "--")
    set(seen_separator TRUE)
  endif()
endforeach()
execute_process(COMMAND ${PROGRAM} ${args} RESULT_VARIABLE status OUTPUT_VARIABLE out
                ERROR_VARIABLE err TIMEOUT 100)
file(READ ${EXPECTED} expected)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${PROGRAM} exited with ${status}\nstdout:\n${out}\nstderr:\n${err}")
endif()
if(NOT out STREQUAL expected)
  message(FATAL_ERROR "${PROGRAM}: output differs from ${EXPECTED}\n--- expected:\n${expected}--- got:\n${out}")
endif()
message(STATUS "output matches ${EXPECTED}")
