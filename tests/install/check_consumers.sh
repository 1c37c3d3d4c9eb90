#!/usr/bin/env bash
# Installs magpie into a fresh prefix and checks the installed tree: the public headers, the
# library, the CMake package, the pkg-config file and the licence, and nothing else, all with the
# version of project() in CMakeLists.txt, and an exported link interface without empty generator
# expressions. Then builds and runs tests/install/consumer against it four ways: add_subdirectory,
# FetchContent, find_package (where pkg-config cannot be found), and a plain compiler command line
# with `pkg-config --cflags --libs magpie`. The consumer includes magpie/magpie.hpp and, in a
# translation unit each, every layer's umbrella header alone; where magpie was built with Asio, it
# also uses magpie::asio, and where it was built with MPI, magpie::mpi (neither in the pkg-config
# mode: those targets are CMake's).
# Usage: check_consumers.sh SOURCE WORKDIR CXX [CMAKE_ARG...]  (the CMAKE_ARGs go to every
# configure, e.g. -DMAGPIE_ASIO_INCLUDE_DIR=... or -DCMAKE_PREFIX_PATH=... for hwloc)
set -euo pipefail
src=$1 work=$2 cxx=$3
shift 3
rm -rf "$work" && mkdir -p "$work"
flags=(-G Ninja -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=Release "$@")
cmake -S "$src" -B "$work/lib" "${flags[@]}" -DMAGPIE_BUILD_TESTS=OFF -DMAGPIE_BUILD_EXAMPLES=OFF >/dev/null
cmake --build "$work/lib" >/dev/null
prefix=$work/prefix
cmake --install "$work/lib" --prefix "$prefix" >/dev/null

# What the library was built with: a cache entry that names a file found (not *-NOTFOUND).
cache=$work/lib/CMakeCache.txt
found() {
  local value
  value=$(sed -n "s/^$1:[A-Z]*=//p" "$cache")
  [[ -n $value && $value != *NOTFOUND ]]
}
libdir=$(sed -n 's/^CMAKE_INSTALL_LIBDIR:PATH=//p' "$cache")
with_asio=0 with_hwloc=0 with_mpi=0
if found MAGPIE_ASIO_INCLUDE_DIR; then with_asio=1; fi
if ! grep -q '^MAGPIE_WITH_MPI:STRING=OFF$' "$cache" && found MPI_CXX_HEADER_DIR; then with_mpi=1; fi
if ! grep -q '^MAGPIE_WITH_HWLOC:STRING=OFF$' "$cache" && found MAGPIE_HWLOC_LIBRARY &&
  found MAGPIE_HWLOC_INCLUDE_DIR; then with_hwloc=1; fi
echo "library built with: asio $with_asio, hwloc $with_hwloc, mpi $with_mpi"

# The installed tree, file by file.
pkgdir=$libdir/cmake/magpie
{
  (cd "$src" && find include -type f)
  printf '%s\n' "$libdir/libmagpie.a" "$libdir/pkgconfig/magpie.pc" share/doc/magpie/LICENSE \
    "$pkgdir/magpieConfig.cmake" "$pkgdir/magpieConfigVersion.cmake" \
    "$pkgdir/magpieTargets.cmake" "$pkgdir/magpieTargets-release.cmake"
  if ((with_asio)); then echo "$pkgdir/magpieAsioTargets.cmake"; fi
  if ((with_mpi)); then
    printf '%s\n' "$libdir/libmagpie_mpi.a" "$pkgdir/magpieMpiTargets.cmake" \
      "$pkgdir/magpieMpiTargets-release.cmake"
  fi
  if ((with_hwloc)); then echo "$pkgdir/FindMagpieHwloc.cmake"; fi
} | sort >"$work/expected-tree"
(cd "$prefix" && find . -type f -o -type l) | sed 's|^\./||' | sort >"$work/installed-tree"
if ! diff -u "$work/expected-tree" "$work/installed-tree"; then
  echo "installed tree differs from the expected one (- expected, + installed)" >&2
  exit 1
fi
# Every exported link interface names something: no $<LINK_ONLY:> or other empty expression.
if grep -nE '\$<[A-Z_]+:>' "$prefix/$pkgdir"/*.cmake; then
  echo "the installed CMake package has empty generator expressions (above)" >&2
  exit 1
fi
version=$(sed -n 's/^project(magpie VERSION \([0-9][0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
export PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
pc_version=$(pkg-config --modversion magpie)
cmake_version=$(sed -n 's/^set(PACKAGE_VERSION "\(.*\)")$/\1/p' "$prefix/$libdir/cmake/magpie/magpieConfigVersion.cmake")
if [ "$pc_version" != "$version" ] || [ "$cmake_version" != "$version" ]; then
  echo "versions differ: project() $version, pkg-config $pc_version, CMake package $cmake_version" >&2
  exit 1
fi
echo "installed tree: $(wc -l <"$work/installed-tree") files as expected, version $version"

consumer_flags=(-DMAGPIE_SOURCE="$src" -DASIO=$((with_asio ? 1 : 0)) -DMPI=$((with_mpi ? 1 : 0))
  -Wno-dev --no-warn-unused-cli)
for mode in subdirectory fetchcontent package; do
  mode_flags=()
  # find_package(magpie) needs neither pkg-config nor, for a magpie built without it, hwloc.
  if [ $mode = package ]; then
    mode_flags=(-DCMAKE_DISABLE_FIND_PACKAGE_PkgConfig=TRUE)
  else
    # These modes build the library again, with the consumer: unoptimised, since they test how
    # magpie is found and linked, not how fast it runs (the last flags win over "${flags[@]}").
    mode_flags=(-DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-O0)
  fi
  # Appended to what the caller passed: the prefix is searched first.
  cmake -S "$src/tests/install/consumer" -B "$work/$mode" "${flags[@]}" -DMODE=$mode \
    "${consumer_flags[@]}" "${mode_flags[@]}" \
    "-DCMAKE_PREFIX_PATH=$prefix;$(sed -n 's/^CMAKE_PREFIX_PATH:[A-Z]*=//p' "$cache")" >/dev/null
  cmake --build "$work/$mode" >/dev/null
  "$work/$mode/consumer"
  if ((with_asio)); then "$work/$mode/consumer_asio"; fi
  if ((with_mpi)); then "$work/$mode/consumer_mpi"; fi
  echo "consumer via $mode (magpie::magpie$( ((with_asio)) && echo ', magpie::asio')$( ((with_mpi)) && echo ', magpie::mpi')): ok"
done

mkdir -p "$work/pkgconfig"
consumer=$src/tests/install/consumer
# shellcheck disable=SC2046 # pkg-config's output is a list of words
"$cxx" -std=c++20 -O0 "$consumer"/{main,core,sched,sync,algo,io,trace}.cpp \
  -o "$work/pkgconfig/consumer" $(pkg-config --cflags --libs magpie)
"$work/pkgconfig/consumer"
echo "consumer via pkg-config ($(pkg-config --cflags --libs magpie)): ok"
