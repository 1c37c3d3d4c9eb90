#!/usr/bin/env bash
# Builds and runs one of magpie's examples (examples/<name>.cpp) with optimisation:
#   scripts/example.sh quicksort 5000000
#   scripts/example.sh dir_size /usr/include
# Installs the compilers and build tools if they are missing; builds in build/examples.
set -euo pipefail
cd "$(dirname "$0")/.."
if (($# == 0)) || [ ! -f "examples/$1.cpp" ]; then
  echo "usage: $0 NAME [ARGS...]   where NAME is one of:" >&2
  (cd examples && ls ./*.cpp | sed 's|^\./||; s|\.cpp$||; s|^|  |') >&2
  exit 2
fi
name=$1
shift
scripts/deps.sh build
cmake -S . -B build/examples -G Ninja -DCMAKE_CXX_COMPILER=g++-12 -DCMAKE_BUILD_TYPE=Release \
  -DMAGPIE_BUILD_TESTS=OFF -DMAGPIE_BUILD_EXAMPLES=ON >/dev/null
cmake --build build/examples --target "magpie_example_$name" >/dev/null
exec "build/examples/examples/magpie_example_$name" "$@"
