#!/usr/bin/env bash
# Sets up everything and runs magpie's tests: GCC 12 and Clang 16 builds (with assertions, -O2),
# then the whole suite under ASan+UBSan and under ThreadSanitizer, the spin models and the
# install/consumer checks. Usage: scripts/test.sh [PRESET...]   (default: all four presets)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh test

presets=("$@")
if ((${#presets[@]} == 0)); then presets=(dev dev-clang asan-ubsan tsan); fi
jobs=$(nproc)
passed=0 failed=0 failed_presets=()

# Formatting is part of the contract (.clang-format): one check, before any build.
echo "=== magpie tests: clang-format ==="
if git ls-files '*.hpp' '*.cpp' | xargs clang-format-16 --dry-run -Werror; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)) failed_presets+=(clang-format)
fi
for preset in "${presets[@]}"; do
  echo "=== magpie tests: preset $preset ==="
  extra=()
  # Checks that do not depend on the compiler or sanitizer run once, in the dev preset.
  if [ "$preset" = dev ]; then extra=(-DMAGPIE_MODEL_CHECK=ON -DMAGPIE_INSTALL_TEST=ON); fi
  cmake --preset "$preset" "${extra[@]}" >/dev/null
  cmake --build --preset "$preset" -j "$jobs"
  log=$(mktemp)
  if ctest --preset "$preset" -j "$jobs" 2>&1 | tee "$log"; then :; else failed_presets+=("$preset"); fi
  p=$(sed -n 's/.*tests passed, \([0-9]*\) tests failed out of \([0-9]*\).*/\2 \1/p' "$log" | tail -1)
  if [ -n "$p" ]; then
    read -r total bad <<<"$p"
    passed=$((passed + total - bad)) failed=$((failed + bad))
  else
    failed=$((failed + 1)) failed_presets+=("$preset")
  fi
  rm -f "$log"
done
echo
echo "presets: ${presets[*]}"
echo "${passed} passed, ${failed} failed"
if ((${#failed_presets[@]})); then
  echo "failing presets: ${failed_presets[*]}" >&2
  exit 1
fi
