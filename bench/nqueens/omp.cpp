// nqueens — OpenMP tasks: a task per valid row (board by value), taskwait, sum.
#include "common/omp_runtime.hpp"
#include "nqueens/problem.hpp"

namespace {
using nqueens_problem::board;

long nq(int n, int j, board a) {
  if (j == n) {
    return 1;
  }
  std::array<long, nqueens_problem::max_n> parts{};
  for (int i = 0; i < n; ++i) {
    board b = a;
    b[j] = static_cast<char>(i);
    if (nqueens_problem::ok(b, j)) {
#pragma omp task shared(parts) firstprivate(n, j, i, b)
      parts[i] = nq(n, j + 1, b);
    }
  }
#pragma omp taskwait
  long sum = 0;
  for (int i = 0; i < n; ++i) {
    sum += parts[i];
  }
  return sum;
}
} // namespace

int main(int argc, char **argv) {
  bench::ensure_omp_stacksize(argv);
  auto const o = bench::parse_options(argc, argv);
  auto const &z = nqueens_problem::find(o.size);
  bench::omp_runtime rt(o);
  return bench::measure(
      o, nqueens_problem::name, rt.name(),
      [&] { return rt.run([&] { return nq(z.n, 0, board{}); }); },
      [&](long r) { return nqueens_problem::check(r, z); },
      {{"omp_lib", bench::json_string(bench::omp_library())}});
}
