#!/usr/bin/env bash
# scripts/bench.sh — magpie's benchmark suite, end to end: installs what is missing (Debian
# packages), configures and builds the `bench` preset (GCC 12, Release; `bench-clang` with
# --compiler clang) and runs scripts/bench.py with the same arguments.
#
#   ./scripts/bench.sh                      # default sizes, all problems × runtimes × 1..nproc workers
#   ./scripts/bench.sh --only fib,uts:T3 --workers 1,2 --reps 3
#   ./scripts/bench.sh --compiler clang     # Clang 16 (OpenMP peer: LLVM's libomp)
#   ./scripts/bench.sh --paper              # the paper's sizes (Table I): hours on 2 cores
#   ./scripts/bench.sh --only edges         # entering the pool from ordinary code (bench/edges)
#
# Results: results/<timestamp>/ and results/latest (see bench/README.md). Its index.html shows the
# table and the plots in a browser; its results.md is the Markdown table;
# scripts/results_table.py RUN --update bench/README.md puts it into the README.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

compiler=gcc
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  case "${args[$i]}" in
    --compiler) compiler="${args[$((i + 1))]:-gcc}" ;;
    --compiler=*) compiler="${args[$i]#--compiler=}" ;;
    -h|--help) exec python3 scripts/bench.py --help ;;
  esac
done
case "$compiler" in
  gcc) preset=bench ;;
  clang) preset=bench-clang ;;
  *) echo "bench.sh: --compiler must be gcc or clang" >&2; exit 2 ;;
esac

# 1. Packages, installed only if missing (shared with scripts/test.sh).
scripts/deps.sh bench

# 2. Configure and build (Release; the preset fixes the compiler and the build folder).
echo "bench.sh: building preset $preset"
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset"

# 3. The machine the numbers come from: its topology as magpie reads it (hwloc if built with it).
echo "bench.sh: topology: $(build/$preset/bench/bin/topology_magpie)"

# 4. Run. Matplotlib comes from Debian's python3-matplotlib, so prefer the system Python; any
#    Python 3.11 works without plots.
python=python3
for candidate in /usr/bin/python3 python3; do
  if "$candidate" -c 'import matplotlib' >/dev/null 2>&1; then python="$candidate"; break; fi
done
exec "$python" scripts/bench.py "$@"
