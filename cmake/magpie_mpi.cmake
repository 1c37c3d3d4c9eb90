# magpie::mpi — tasks that await MPI requests (include/magpie/mpi/, src/mpi/): a static library on
# top of magpie::magpie and MPI's C interface (Debian: libopenmpi-dev). Defined only if CMake's
# FindMPI finds an implementation of it; the core never needs it (tests/layering.cmake checks).
# FindMPI is asked for its CXX component with MPI_CXX_SKIP_MPICXX: MPI's C interface as C++ code
# includes it, without the deprecated C++ bindings, and without enabling a C compiler in this
# project or in the projects that find an installed magpie::mpi.
set(MAGPIE_WITH_MPI AUTO CACHE STRING "Build magpie::mpi (tasks awaiting MPI requests): AUTO, ON or OFF")
set(MAGPIE_HAVE_MPI OFF)
if(NOT MAGPIE_WITH_MPI STREQUAL "OFF" AND CMAKE_SYSTEM_NAME STREQUAL "Linux")
  set(MPI_CXX_SKIP_MPICXX TRUE)
  find_package(MPI QUIET COMPONENTS CXX)
  if(MPI_CXX_FOUND)
    add_library(magpie_mpi src/mpi/poller.cpp src/mpi/operations.cpp src/mpi/environment.cpp)
    add_library(magpie::mpi ALIAS magpie_mpi)
    set_target_properties(magpie_mpi PROPERTIES EXPORT_NAME mpi POSITION_INDEPENDENT_CODE ON)
    target_link_libraries(magpie_mpi PUBLIC magpie::magpie MPI::MPI_CXX)
    set(MAGPIE_HAVE_MPI ON)
    # How magpie's MPI tests and examples run under mpiexec: as root if need be (containers),
    # over shared memory only (no network probing: quick to start), with more ranks than cores
    # allowed; under ASan, Open MPI's own allocations kept until exit are not reported as leaks.
    set(MAGPIE_MPI_RUN_ENV OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
        OMPI_MCA_btl=self,vader OMPI_MCA_rmaps_base_oversubscribe=1)
    if(MAGPIE_SANITIZE MATCHES "address")
      # Full unwinding at malloc: the leaks' stacks then reach libmpi / libopen-pal frames, which
      # the suppressions name (Open MPI is built without frame pointers).
      list(APPEND MAGPIE_MPI_RUN_ENV
           ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:fast_unwind_on_malloc=0
           LSAN_OPTIONS=suppressions=${PROJECT_SOURCE_DIR}/tests/mpi/lsan.supp)
    endif()
    message(STATUS "magpie: MPI ${MPI_CXX_VERSION} found (${MPI_CXX_HEADER_DIR}, ${MPIEXEC_EXECUTABLE}): magpie::mpi is built")
  elseif(MAGPIE_WITH_MPI STREQUAL "ON")
    message(FATAL_ERROR "magpie: MAGPIE_WITH_MPI=ON but no MPI implementation was found (apt install libopenmpi-dev openmpi-bin)")
  else()
    message(STATUS "magpie: MPI not found: magpie::mpi, its tests and examples are skipped (install libopenmpi-dev openmpi-bin)")
  endif()
else()
  message(STATUS "magpie: magpie::mpi disabled (MAGPIE_WITH_MPI=OFF, or not Linux)")
endif()
