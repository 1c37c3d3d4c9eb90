# FindMagpieHwloc.cmake — finds hwloc (https://www.open-mpi.org/projects/hwloc/) for magpie, at
# magpie's own configure time and, when magpie was built with it, at the configure time of a
# project that calls find_package(magpie): magpieConfig.cmake ships this module beside it.
#
# pkg-config is not required: when it is present, its answer for `hwloc` is only a hint for
# find_path and find_library, which also search the usual prefixes, CMAKE_PREFIX_PATH and
# MagpieHwloc_ROOT. Defines MagpieHwloc_FOUND, MagpieHwloc_VERSION (when pkg-config knows it) and
# the imported target magpie::hwloc (the library and its include directory).
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(PC_MAGPIE_HWLOC QUIET hwloc)
endif()
find_path(MAGPIE_HWLOC_INCLUDE_DIR hwloc.h HINTS ${PC_MAGPIE_HWLOC_INCLUDE_DIRS})
find_library(MAGPIE_HWLOC_LIBRARY hwloc HINTS ${PC_MAGPIE_HWLOC_LIBRARY_DIRS})
mark_as_advanced(MAGPIE_HWLOC_INCLUDE_DIR MAGPIE_HWLOC_LIBRARY)
set(MagpieHwloc_VERSION "${PC_MAGPIE_HWLOC_VERSION}")
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(MagpieHwloc
  REQUIRED_VARS MAGPIE_HWLOC_LIBRARY MAGPIE_HWLOC_INCLUDE_DIR
  VERSION_VAR MagpieHwloc_VERSION)
if(MagpieHwloc_FOUND AND NOT TARGET magpie::hwloc)
  add_library(magpie::hwloc UNKNOWN IMPORTED)
  set_target_properties(magpie::hwloc PROPERTIES
    IMPORTED_LOCATION "${MAGPIE_HWLOC_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${MAGPIE_HWLOC_INCLUDE_DIR}")
endif()
