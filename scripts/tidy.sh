#!/usr/bin/env bash
# Runs clang-tidy 16 (.clang-tidy) over magpie's library sources, tests and examples, using the
# compile commands of a Clang configuration (default build/tidy: the dev-clang preset without the
# tests' precompiled header, so that each test file is checked as written; configured here, not
# built). The public headers are checked through the translation units that include them. Any
# finding fails.
# Usage: scripts/tidy.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/tidy}
if [ ! -f "$build/compile_commands.json" ]; then
  cmake --preset dev-clang -B "$build" -DMAGPIE_TEST_PCH=OFF >/dev/null
fi
# Every source file of the library, its tests and examples, except the programs that must not
# compile (tests/compile_fail) and the benchmarks (built with other runtimes' headers).
mapfile -t files < <(git ls-files 'src/*.cpp' 'tests/*.cpp' 'examples/*.cpp' | grep -v '^tests/compile_fail/')
start=$(date +%s)
run-clang-tidy-16 -quiet -p "$build" -j "$(nproc)" "${files[@]/#/$PWD/}" >"$build/clang-tidy.log" 2>&1 &&
  status=0 || status=$?
grep -E '(warning|error):' "$build/clang-tidy.log" | sort -u || true
echo "clang-tidy: ${#files[@]} files in $(($(date +%s) - start)) s, exit status $status (log: $build/clang-tidy.log)"
exit "$status"
