# ctest `layering.frame_fields_stay_in_core`: the layers keep to their interfaces. Run as:
#   cmake -DROOT=<source dir> -P layering.cmake
#  - outside include/magpie/core/, nothing may read or write a task frame's fields
#    (frame_base::m_ctx, m_stack, m_steals, ...): higher layers use the ext interface
#    (core/ext.hpp);
#  - the optional MPI layer stays optional: outside include/magpie/mpi(.hpp) and src/mpi/,
#    nothing includes <mpi.h> or a magpie/mpi header, so the core library (and
#    magpie/magpie.hpp) builds and links without MPI.
cmake_minimum_required(VERSION 3.25) # script mode: today's policies
file(GLOB_RECURSE sources ${ROOT}/include/magpie/*.hpp ${ROOT}/src/*.cpp)

# check(<pattern> <allowed-path-regex> <what is wrong> <what is right>): fails listing every line
# that matches <pattern> in a file whose path does not match <allowed-path-regex>.
function(check pattern allowed wrong right)
  set(offenders "")
  foreach(f ${sources})
    if(f MATCHES "${allowed}")
      continue()
    endif()
    file(STRINGS ${f} lines REGEX "${pattern}")
    foreach(line ${lines})
      string(STRIP "${line}" line)
      list(APPEND offenders "${f}: ${line}")
    endforeach()
  endforeach()
  if(offenders)
    list(JOIN offenders "\n  " text)
    message(FATAL_ERROR "${wrong}:\n  ${text}")
  endif()
  message(STATUS "${right}")
endfunction()

check("(->|\\.)m_(ctx|stack|steals|joins|unjoined|at_final|deferred|trivial_frame)[^A-Za-z0-9_]"
      "/include/magpie/core/"
      "frame fields used outside core (use magpie::core::ext instead)"
      "no frame field is touched outside include/magpie/core/")
check("#[ \t]*include[ \t]*[<\"](mpi\\.h|magpie/mpi)"
      "/include/magpie/mpi/|/include/magpie/mpi\\.hpp$|/src/mpi/"
      "MPI used outside the optional mpi layer (include/magpie/mpi/, src/mpi/)"
      "nothing outside the mpi layer includes MPI")
