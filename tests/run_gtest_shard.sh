#!/usr/bin/env bash
# Runs one shard of a GoogleTest executable as one process and leaves one result file per test case
# behind, for scripts/test_results.py (ctest runs this per shard: tests/CMakeLists.txt).
#   run_gtest_shard.sh BINARY INDEX COUNT RESULTS_DIR [PREFIX]
# The shard is the cases GoogleTest assigns to INDEX of COUNT (GTEST_SHARD_INDEX/GTEST_TOTAL_SHARDS),
# in one process: no process start per case. Its results go to RESULTS_DIR/<binary>.<INDEX>.xml
# (GoogleTest's XML, test names prefixed with PREFIX). When the process does not end normally with
# a full report (a crash, an abort, a sanitizer report, a hang past MAGPIE_SHARD_TIMEOUT seconds,
# default 600), every case of the shard runs again on its own, as ctest would run it, so that the
# failure is pinned on the case that caused it (RESULTS_DIR/<binary>.<INDEX>.<k>.xml; a case that
# writes no report gets a written failure with its exit status and last lines of output).
# Exit status: 0 when every case passed or was skipped, 1 otherwise.
set -uo pipefail
binary=$1 index=$2 count=$3 results=$4 prefix=${5:-}
name=$(basename "$binary")
limit=${MAGPIE_SHARD_TIMEOUT:-600}
mkdir -p "$results"
rm -f "$results/$name.$index".*xml "$results/$name.$index.xml"
xml="$results/$name.$index.xml"

# Prefixes the test names in a report (tasks. for the MAGPIE_OBSERVE_TASKS binaries).
with_prefix() {
  [ -n "$prefix" ] && [ -f "$1" ] && sed -i "s/ classname=\"/ classname=\"$prefix/" "$1"
  return 0
}
# True if report $1 exists and records a failed case.
has_failure() { [ -f "$1" ] && grep -q '<failure' "$1"; }
# Writes report FILE with one failed case: write_failure FILE SUITE TEST MESSAGE DETAILS.
write_failure() {
  cat >"$1" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<testsuites><testsuite name="$2">
<testcase name="$3" status="run" result="completed" classname="$2">
<failure message="$4">$4
$5</failure>
</testcase></testsuite></testsuites>
EOF
}

export GTEST_TOTAL_SHARDS=$count GTEST_SHARD_INDEX=$index
timeout -k 10 "$limit" "$binary" --gtest_output="xml:$xml"
status=$?
with_prefix "$xml"
if ((status == 0)) && [ -f "$xml" ]; then exit 0; fi
if ((status == 1)) && has_failure "$xml"; then exit 1; fi # failed cases, reported normally

# The process died, hung or failed after its report: run each case alone.
echo "magpie: shard $index/$count of $name ended with status $status without a full report;" \
  "running its cases one by one" >&2
rm -f "$xml"
# The shard's cases, as GoogleTest picks them: the n-th runnable (not DISABLED_) case of the
# binary, in listing order, belongs to shard n mod COUNT.
unset GTEST_TOTAL_SHARDS GTEST_SHARD_INDEX
mapfile -t cases < <("$binary" --gtest_list_tests | awk -v index_="$index" -v count="$count" '
  /^[^ ]/ { suite = $1; next }
  /^  / {
    sub(/^  /, ""); sub(/  *#.*$/, "")
    if (suite ~ /(^|\/)DISABLED_/ || $0 ~ /^DISABLED_/) next
    if (n++ % count == index_) print suite $0
  }')
k=0 any_failed=0
for case in "${cases[@]}"; do
  k=$((k + 1))
  one="$results/$name.$index.$k.xml"
  log=$(timeout -k 10 300 "$binary" --gtest_filter="$case" --gtest_output="xml:$one" 2>&1)
  st=$?
  printf '%s\n' "$log"
  ((st != 0)) && any_failed=1
  if ((st != 0)) && ! has_failure "$one"; then
    # No report of a failure, but the process failed: record it, with its last lines.
    suite=${case%%.*} test=${case#*.}
    tail=$(printf '%s\n' "$log" | tail -n 12 | sed 's/&/\&amp;/g; s/</\&lt;/g; s/>/\&gt;/g; s/"/\&quot;/g')
    why="exit status $st"
    ((st == 124 || st == 137)) && why="timed out after 300 s"
    write_failure "$one" "$suite" "$test" "the process ended abnormally: $why" "$tail"
  fi
  with_prefix "$one"
done
if ((!any_failed)); then
  # Each case passes alone but not in one process with the others: a failure of its own.
  write_failure "$results/$name.$index.0.xml" "${prefix}$name" "shard_$index" \
    "shard $index of $count ended with status $status, but each of its ${#cases[@]} cases passes on its own: they interfere (state left behind by one case, or a report at exit)" \
    "see the shard's output above"
fi
exit 1
