# Runs the trace test's writers into DIR, then checks every file there with check_trace.py.
file(REMOVE_RECURSE ${DIR})
file(MAKE_DIRECTORY ${DIR})
execute_process(COMMAND ${CMAKE_COMMAND} -E env MAGPIE_TRACE_OUT=${DIR} ${TEST}
                        --gtest_filter=*writes*
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the trace test failed (${rc})")
endif()
file(GLOB files ${DIR}/*.json)
if(NOT files)
  message(FATAL_ERROR "the trace test wrote no JSON into ${DIR}")
endif()
execute_process(COMMAND ${PYTHON} ${CHECK} ${files} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "check_trace.py failed (${rc})")
endif()
