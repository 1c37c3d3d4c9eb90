#!/usr/bin/env bash
# Sets up everything and runs magpie's tests and examples: GCC 12, Clang 16, Clang 16 with libc++
# and GCC 12 in C++23 mode (with assertions, -O2), the release builds users and benchmarks run
# (GCC 12 -O3 NDEBUG; Clang 16 release with the opt-in MAGPIE_ASYMMETRIC_FENCES), then the whole
# suite under ASan+UBSan and under ThreadSanitizer, the spin models and the install/consumer
# checks; plus clang-format, the documentation build (Doxygen, warnings as errors) and clang-tidy.
# Usage: scripts/test.sh [PRESET|docs|clang-tidy...]   (default: all eight presets and both checks)
# Ends with the skipped tests and why, the failed ones by name, then `N passed, N failed, N skipped`;
# exit status 1 when anything failed (a skipped test is not a failure).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh test

presets=("$@")
if ((${#presets[@]} == 0)); then
  presets=(docs dev dev-clang clang-tidy dev-libcxx dev-cxx23 release release-clang-fences asan-ubsan
    tsan)
fi
jobs=$(nproc)
passed=0 failed=0 skipped=0 failed_presets=()
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Reads ctest's JUnit file ($1) for preset $2: prints "passed failed skipped" on the first line,
# then one line per skipped test: preset<TAB>reason<TAB>name. ctest's own summary counts skipped
# tests as passed; here a test passed only if it ran and succeeded. A gtest skip's reason is the
# line after "<file>:<line>: Skipped" in its output. For each failed test, appends to file $3 its
# name and the first lines of its output that say what went wrong (a CI log's tail then shows the
# message, not only the name).
junit_counts() {
  awk -v preset="$2" -v excerpts="$3" '
    function attr(k,   s) {
      if (match($0, k "=\"[^\"]*\"") == 0) return ""
      return substr($0, RSTART + length(k) + 2, RLENGTH - length(k) - 3)
    }
    function unxml(s) {
      gsub(/&lt;/, "<", s); gsub(/&gt;/, ">", s); gsub(/&quot;/, "\"", s); gsub(/&apos;/, "'\''", s)
      gsub(/&amp;/, "\\&", s); return s
    }
    /<testcase / { name = unxml(attr("name")); sub(/  # .*$/, "", name); status = attr("status"); why = ""; reason = ""; grab = 0; said = ""; nsaid = 0; follow = 0; next }
    # A line that names a failure, and the three after it (gtest prints the values there).
    /<failure / { next }
    nsaid < 12 && !/^[ \t]*<\/(testcase|system-out)>/ && (follow > 0 || /: Failure$|[Ee]rror|[Ee]xception|terminate|Timeout|SUMMARY|WARNING: ThreadSanitizer|magpie:/) {
      follow = (/: Failure$|[Ee]rror|[Ee]xception|terminate/ ? 3 : follow - 1)
      line = unxml($0); sub(/^[ \t]*(<system-out>)?/, "", line); sub(/<\/system-out>$/, "", line)
      if (line !~ /^\[/ && line != "") { said = said "      " substr(line, 1, 200) "\n"; nsaid++ }
    }
    /<skipped message=/ { why = attr("message"); next }
    grab == 1 { if ($0 !~ /^\[/) reason = unxml($0); grab = 2 }
    /: Skipped$/ { grab = 1 }
    /<\/testcase>/ {
      if (status == "run") p++
      else if (status == "disabled") { s++; out = out preset "\tdisabled (DISABLED test property; the reason is beside it in tests/)\t" name "\n" }
      else if (status == "notrun" && why ~ /^SKIP_/) {
        s++; out = out preset "\t" (reason == "" ? "skipped (no reason given)" : reason) "\t" name "\n"
      } else {  # failed, timed out, or could not run
        f++; out = out preset "\tFAILED\t" name "\n"
        printf "  [%s] %s\n%s", preset, name, (said == "" ? "      (no message in its output)\n" : said) >> excerpts
      }
    }
    END { printf "%d %d %d\n%s", p, f, s, out }
  ' "$1"
}

# Formatting is part of the contract (.clang-format): one check, before any build.
echo "=== magpie tests: clang-format ==="
if git ls-files '*.hpp' '*.cpp' | xargs clang-format-16 --dry-run -Werror; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)) failed_presets+=(clang-format)
fi
: >"$tmp/skipped"
: >"$tmp/excerpts"
: >"$tmp/failed"
# A check that is not a ctest preset: passes or fails as a whole.
run_check() {
  local name=$1
  shift
  echo "=== magpie tests: $name ==="
  if "$@"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1)) failed_presets+=("$name")
  fi
}
for preset in "${presets[@]}"; do
  case "$preset" in
    docs) run_check docs scripts/docs.sh build/docs; continue ;;
    clang-tidy) run_check clang-tidy scripts/tidy.sh build/dev-clang; continue ;;
  esac
  echo "=== magpie tests: preset $preset ==="
  extra=()
  # Checks that do not depend on the compiler or sanitizer run once, in the dev preset.
  if [ "$preset" = dev ]; then extra=(-DMAGPIE_MODEL_CHECK=ON -DMAGPIE_INSTALL_TEST=ON); fi
  # A preset that does not configure or build counts as one failure; the others still run.
  if ! { cmake --preset "$preset" "${extra[@]}" >/dev/null && cmake --build --preset "$preset" -j "$jobs"; }; then
    echo "preset $preset: the build failed" >&2
    failed=$((failed + 1)) failed_presets+=("$preset")
    continue
  fi
  junit="$tmp/$preset.xml"
  if ctest --preset "$preset" -j "$jobs" --output-junit "$junit"; then :; else failed_presets+=("$preset"); fi
  if [ -s "$junit" ]; then
    junit_counts "$junit" "$preset" "$tmp/excerpts" >"$tmp/counts"
    read -r p f s <"$tmp/counts"
    tail -n +2 "$tmp/counts" | grep -v $'\tFAILED\t' >>"$tmp/skipped" || true
    tail -n +2 "$tmp/counts" | grep $'\tFAILED\t' | cut -f1,3 >>"$tmp/failed" || true
    passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
    if ((f > 0)) && [[ " ${failed_presets[*]} " != *" $preset "* ]]; then failed_presets+=("$preset"); fi
  else
    echo "ctest wrote no results for preset $preset" >&2
    failed=$((failed + 1)) failed_presets+=("$preset")
  fi
done
echo
echo "presets: ${presets[*]}"
if [ -s "$tmp/skipped" ]; then
  # Grouped by preset and reason; instances of one parameterised test share a line: a/b/{x,y}.
  echo "skipped:"
  awk -F'\t' '
    {
      key = $1 "\t" $2
      if (!(key in seen)) { seen[key] = 1; keys[++nk] = key }
      base = $3; param = ""
      if (match($3, /\/[^\/.]+$/) && index($3, "/") < RSTART) { base = substr($3, 1, RSTART - 1); param = substr($3, RSTART + 1) }
      t = key "\t" base
      if (!(t in params)) { names[key] = names[key] SUBSEP base; params[t] = param; n[key]++ }
      else params[t] = params[t] "," param
      cnt[key]++
    }
    END {
      for (i = 1; i <= nk; i++) {
        split(keys[i], kr, "\t")
        printf "  [%s] %d: %s\n", kr[1], cnt[keys[i]], kr[2]
        m = split(substr(names[keys[i]], 2), bs, SUBSEP)
        for (j = 1; j <= m; j++) {
          pr = params[keys[i] "\t" bs[j]]
          printf "      %s%s\n", bs[j], pr == "" ? "" : (pr ~ /,/ ? "/{" pr "}" : "/" pr)
        }
      }
    }
  ' "$tmp/skipped"
fi
if [ -s "$tmp/failed" ]; then
  # Repeated at the end, where a CI log's tail shows it: the tests that failed, timed out or did not run.
  if [ -s "$tmp/excerpts" ]; then
    echo "what the failed tests said (first lines that name a failure):"
    head -n 200 "$tmp/excerpts"
  fi
  echo "failed:"
  awk -F'\t' '{ printf "  [%s] %s\n", $1, $2 }' "$tmp/failed"
fi
echo "${passed} passed, ${failed} failed, ${skipped} skipped"
if ((${#failed_presets[@]})); then
  echo "failing presets: ${failed_presets[*]}" >&2
  exit 1
fi
