#!/usr/bin/env bash
# Builds and runs tests/install/consumer against magpie three ways: add_subdirectory,
# FetchContent, and find_package after `cmake --install`. Usage: check_consumers.sh SOURCE WORKDIR CXX
set -euo pipefail
src=$1 work=$2 cxx=$3
rm -rf "$work" && mkdir -p "$work"
flags=(-G Ninja -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=Release)
cmake -S "$src" -B "$work/lib" "${flags[@]}" -DMAGPIE_BUILD_TESTS=OFF -DMAGPIE_BUILD_EXAMPLES=OFF >/dev/null
cmake --build "$work/lib" >/dev/null
cmake --install "$work/lib" --prefix "$work/prefix" >/dev/null
for mode in subdirectory fetchcontent package; do
  cmake -S "$src/tests/install/consumer" -B "$work/$mode" "${flags[@]}" -DMODE=$mode \
    -DMAGPIE_SOURCE="$src" -DCMAKE_PREFIX_PATH="$work/prefix" -Wno-dev --no-warn-unused-cli >/dev/null
  cmake --build "$work/$mode" >/dev/null
  "$work/$mode/consumer"
  echo "consumer via $mode: ok"
done
