# Runs a known-bug reproducer and succeeds only while the bug still reproduces: the command must
# fail (a non-zero exit, or death by a signal or a sanitizer) with output matching EXPECT.
#   cmake -DNAME=<name> -DEXPECT=<regex> [-DTIMEOUT=<s>] -P known_bug.cmake -- <command> <args>...
# A reproducer that passes turns this test red: the bug was fixed, or the reproducer rotted (it
# no longer reaches the bug, or its gtest filter matches nothing). Either way move it to the
# regular suite (or repair it) and update docs/guarantees.md ("Known limitations").
set(command "")
set(in_command FALSE)
math(EXPR last "${CMAKE_ARGC} - 1")
foreach(i RANGE ${last})
  if(in_command)
    list(APPEND command "${CMAKE_ARGV${i}}")
  elseif(CMAKE_ARGV${i} STREQUAL "--")
    set(in_command TRUE)
  endif()
endforeach()
if(NOT command OR NOT DEFINED NAME OR NOT DEFINED EXPECT OR EXPECT STREQUAL "")
  message(FATAL_ERROR "usage: cmake -DNAME=.. -DEXPECT=regex -P known_bug.cmake -- command...")
endif()
if(NOT DEFINED TIMEOUT)
  set(TIMEOUT 240)
endif()

set(ENV{MAGPIE_TEST_KNOWN_BUGS} 1)
execute_process(COMMAND ${command} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                TIMEOUT ${TIMEOUT})
set(log "${out}${err}")

if(rc STREQUAL "0")
  message(FATAL_ERROR
          "known bug ${NAME} NO LONGER REPRODUCES: its reproducer passed.\n"
          "Either the bug was fixed (then make the reproducer a regular test: remove its "
          "MAGPIE_SKIP_KNOWN_BUG and its magpie_add_known_bug registration, and move the entry "
          "in docs/guarantees.md from \"Known limitations\" to \"Found by this suite and fixed\"), "
          "or the reproducer rotted and must be repaired.\nIts output:\n${log}")
endif()
if(NOT log MATCHES "${EXPECT}")
  message(FATAL_ERROR
          "known bug ${NAME}: the reproducer failed (${rc}), but not in the expected way "
          "(output matching `${EXPECT}`). Its output:\n${log}")
endif()
string(REGEX MATCH "[^\n]*${EXPECT}[^\n]*" line "${log}")
message(STATUS "known bug ${NAME} still reproduces, as expected (${rc}): ${line}")
