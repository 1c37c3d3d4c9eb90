#!/usr/bin/env bash
# Sets up everything and runs magpie's tests and examples in five builds, chosen so that every
# compiler, standard library, C++ standard, assertion setting and sanitizer is covered:
#   dev                GCC 12, libstdc++, C++20, -O1 with assertions (+ the spin models and the
#                      install/consumer checks)
#   release            GCC 12 -O3 NDEBUG, C++20: the build users and benchmarks run
#   release-clang-fences-cxx23  Clang 16 -O3 NDEBUG, libstdc++, C++23, with the opt-in
#                      MAGPIE_ASYMMETRIC_FENCES
#   asan-ubsan-libcxx  Clang 16, libc++, C++20, -O1 with assertions, ASan+UBSan
#   tsan               Clang 16, libstdc++, C++20, assertions, ThreadSanitizer
# plus clang-format, the documentation build (Doxygen, warnings as errors), clang-tidy and the
# benchmark results page (results-page: scripts/results_page.py's page of a fixture run, rendered
# by headless Chromium and checked against its results.json by scripts/check_results_page.py). The
# presets dev-clang, dev-libcxx, dev-cxx23, release-clang-fences and asan-ubsan remain for
# development; what each would add is covered above (Clang with assertions under the sanitizers,
# libc++ under ASan, C++23 and the fences in one release build).
# Usage: scripts/test.sh [quick | PRESET|docs|clang-tidy|results-page...]
#   (default: all presets and checks)
#   quick: the GCC dev build of the library, the examples and a core subset of the tests, run once
#   (a few minutes): for a first check that magpie works here. The full run is what CI runs.
# Ends with the skipped tests and why, the failed ones by name, the time each stage took, then
# `N passed, N failed, N skipped`; exit status 1 when anything failed (a skipped test is not a
# failure). Uses ccache for the compiles when it is installed.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)
scripts/deps.sh test
deps_done=$(date +%s)

presets=("$@")
quick=0
if ((${#presets[@]} == 1)) && [ "${presets[0]}" = quick ]; then
  quick=1 presets=(dev)
elif ((${#presets[@]} == 0)); then
  presets=(docs results-page dev clang-tidy release release-clang-fences-cxx23 asan-ubsan-libcxx tsan)
fi
jobs=$(nproc)
passed=0 failed=0 skipped=0 failed_presets=()
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# ccache, when installed, makes a second run on the same machine cheap. The sloppiness lets it
# cache the compiles that use the tests' precompiled header.
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
  echo "magpie tests: compiling through ccache ($(ccache --version | head -n1))"
fi
# The time each stage took, printed at the end: name, configure, build, test seconds ("-": none).
: >"$tmp/times"
stage_time() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$tmp/times"; }
stage_time "set-up (packages)" - - $((deps_done - started))

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
    /<testcase / { name = unxml(attr("name")); sub(/  # .*$/, "", name); status = attr("status"); why = ""; reason = ""; grab = 0; said = ""; nsaid = 0; follow = 0; shard = (name ~ /^shard\./); next }
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
      if (shard) next  # a shard of GoogleTest cases: its cases are counted from their reports
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
t0=$(date +%s)
if git ls-files '*.hpp' '*.cpp' | xargs clang-format-16 --dry-run -Werror; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)) failed_presets+=(clang-format)
fi
stage_time clang-format - - $(($(date +%s) - t0))
: >"$tmp/skipped"
: >"$tmp/excerpts"
: >"$tmp/failed"
# A check that is not a ctest preset: passes or fails as a whole.
run_check() {
  local name=$1 t0
  shift
  echo "=== magpie tests: $name ==="
  t0=$(date +%s)
  if "$@"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1)) failed_presets+=("$name")
  fi
  stage_time "$name" - - $(($(date +%s) - t0))
}
for preset in "${presets[@]}"; do
  case "$preset" in
    docs) run_check docs scripts/docs.sh build/docs; continue ;;
    clang-tidy) run_check clang-tidy scripts/tidy.sh build/tidy; continue ;;
    results-page) run_check results-page python3 scripts/check_results_page.py; continue ;;
  esac
  echo "=== magpie tests: preset $preset ==="
  extra=("${launcher[@]}")
  case "$preset" in
    # Checks that do not depend on the compiler or sanitizer run once, in the dev preset. Built
    # with -O1 and no debug information: CI reads gtest's file:line messages, not a debugger's
    # view, and GCC compiles a test file ~25 % faster than at -O2 -g1 (GCC's -O2 and -O3
    # optimisers run in the release build). -foptimize-sibling-calls: GCC makes symmetric
    # transfer a tail call only with it (without it deep task graphs overflow the thread's stack).
    dev)
      extra+=(-DCMAKE_CXX_FLAGS_DEBUG="-O1 -foptimize-sibling-calls")
      ((quick)) || extra+=(-DMAGPIE_MODEL_CHECK=ON -DMAGPIE_INSTALL_TEST=ON)
      ;;
    # The compile-fail cases are front-end checks (-fsyntax-only with the preset's compiler, its
    # -std= and its CMAKE_CXX_FLAGS): a preset would repeat exactly the run of another with the
    # same compiler, standard and library, so only dev (GCC), release-clang-fences-cxx23 (Clang,
    # C++23) and asan-ubsan-libcxx (Clang, libc++, C++20) run them.
    tsan | release) extra+=(-DMAGPIE_COMPILE_FAIL_TESTS=OFF) ;;
  esac
  t0=$(date +%s)
  configured=0 built=0 tested=0
  # A preset that does not configure or build counts as one failure; the others still run.
  if cmake --preset "$preset" "${extra[@]}" >/dev/null; then
    configured=$(date +%s)
    target=()
    ((quick)) && target=(--target magpie_quick)
    if cmake --build --preset "$preset" -j "$jobs" "${target[@]}"; then built=$(date +%s); fi
  fi
  if ((built == 0)); then
    echo "preset $preset: the build failed" >&2
    failed=$((failed + 1)) failed_presets+=("$preset")
    if ((configured)); then
      stage_time "$preset" $((configured - t0)) $(($(date +%s) - configured)) -
    else
      stage_time "$preset" $(($(date +%s) - t0)) - -
    fi
    continue
  fi
  junit="$tmp/$preset.xml"
  rm -rf "build/$preset/gtest-results" # the GoogleTest shards' reports (tests/run_gtest_shard.sh)
  select=()
  ((quick)) && select=(-L quick)
  # Twice as many tests as cores: many of them spend their time waiting (timers, sleeps, wake-ups,
  # compile-fail front ends on files), so two per core keep the cores busy; a test must pass on a
  # loaded machine anyway (watchdogs allow 60 s, 150 s under a sanitizer).
  if ctest --preset "$preset" -j "$((jobs * 2))" --output-junit "$junit" "${select[@]}"; then :; else failed_presets+=("$preset"); fi
  tested=$(date +%s)
  stage_time "$preset" $((configured - t0)) $((built - configured)) $((tested - built))
  if [ -s "$junit" ]; then
    junit_counts "$junit" "$preset" "$tmp/excerpts" >"$tmp/counts"
    read -r p f s <"$tmp/counts"
    # The GoogleTest cases, from the shards' reports.
    python3 scripts/test_results.py "$preset" "build/$preset/gtest-results" "$junit" "$tmp/excerpts" >"$tmp/gcounts"
    read -r gp gf gs <"$tmp/gcounts"
    tail -n +2 "$tmp/gcounts" >>"$tmp/counts"
    p=$((p + gp)) f=$((f + gf)) s=$((s + gs))
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
echo "time per stage (s): configure, build, run (tests or check), total"
awk -F'\t' -v total=$(($(date +%s) - started)) '
  { printf "  %-28s %9s %7s %7s %7d\n", $1, $2, $3, $4, ($2 + 0) + ($3 + 0) + ($4 + 0) }
  END { printf "  %-28s %9s %7s %7s %7d (%d min)\n", "all", "", "", "", total, (total + 30) / 60 }
' "$tmp/times"
echo "${passed} passed, ${failed} failed, ${skipped} skipped"
if ((${#failed_presets[@]})); then
  echo "failing presets: ${failed_presets[*]}" >&2
  exit 1
fi
