#!/usr/bin/env bash
# Installs magpie into a fresh prefix and checks the installed tree: the public headers, the
# library, the CMake package, the pkg-config file and the licence, and nothing else, all with the
# version of project() in CMakeLists.txt. Then builds and runs tests/install/consumer against it
# four ways: add_subdirectory, FetchContent, find_package, and a plain compiler command line with
# `pkg-config --cflags --libs magpie`. Usage: check_consumers.sh SOURCE WORKDIR CXX
set -euo pipefail
src=$1 work=$2 cxx=$3
rm -rf "$work" && mkdir -p "$work"
flags=(-G Ninja -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=Release)
cmake -S "$src" -B "$work/lib" "${flags[@]}" -DMAGPIE_BUILD_TESTS=OFF -DMAGPIE_BUILD_EXAMPLES=OFF >/dev/null
cmake --build "$work/lib" >/dev/null
prefix=$work/prefix
cmake --install "$work/lib" --prefix "$prefix" >/dev/null

# The installed tree, file by file.
libdir=$(sed -n 's/^CMAKE_INSTALL_LIBDIR:PATH=//p' "$work/lib/CMakeCache.txt")
{
  (cd "$src" && find include -type f)
  printf '%s\n' "$libdir/libmagpie.a" "$libdir/pkgconfig/magpie.pc" share/doc/magpie/LICENSE \
    "$libdir/cmake/magpie/magpieConfig.cmake" "$libdir/cmake/magpie/magpieConfigVersion.cmake" \
    "$libdir/cmake/magpie/magpieTargets.cmake" "$libdir/cmake/magpie/magpieTargets-release.cmake"
} | sort >"$work/expected-tree"
(cd "$prefix" && find . -type f -o -type l) | sed 's|^\./||' | sort >"$work/installed-tree"
if ! diff -u "$work/expected-tree" "$work/installed-tree"; then
  echo "installed tree differs from the expected one (- expected, + installed)" >&2
  exit 1
fi
version=$(sed -n 's/^project(magpie VERSION \([0-9][0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
export PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig
pc_version=$(pkg-config --modversion magpie)
cmake_version=$(sed -n 's/^set(PACKAGE_VERSION "\(.*\)")$/\1/p' "$prefix/$libdir/cmake/magpie/magpieConfigVersion.cmake")
if [ "$pc_version" != "$version" ] || [ "$cmake_version" != "$version" ]; then
  echo "versions differ: project() $version, pkg-config $pc_version, CMake package $cmake_version" >&2
  exit 1
fi
echo "installed tree: $(wc -l <"$work/installed-tree") files as expected, version $version"

for mode in subdirectory fetchcontent package; do
  cmake -S "$src/tests/install/consumer" -B "$work/$mode" "${flags[@]}" -DMODE=$mode \
    -DMAGPIE_SOURCE="$src" -DCMAKE_PREFIX_PATH="$prefix" -Wno-dev --no-warn-unused-cli >/dev/null
  cmake --build "$work/$mode" >/dev/null
  "$work/$mode/consumer"
  echo "consumer via $mode: ok"
done

mkdir -p "$work/pkgconfig"
# shellcheck disable=SC2046 # pkg-config's output is a list of words
"$cxx" -std=c++20 -O2 "$src/tests/install/consumer/main.cpp" -o "$work/pkgconfig/consumer" \
  $(pkg-config --cflags --libs magpie)
"$work/pkgconfig/consumer"
echo "consumer via pkg-config ($(pkg-config --cflags --libs magpie)): ok"
