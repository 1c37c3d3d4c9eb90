// fib — OpenMP tasks: a task for fib(n−1), fib(n−2) inline, taskwait.
#include "common/omp_runtime.hpp"
#include "fib/problem.hpp"

namespace {
long fib(int n) {
  if (n < 2) {
    return n;
  }
  long a = 0;
#pragma omp task shared(a) firstprivate(n)
  a = fib(n - 1);
  long const b = fib(n - 2);
#pragma omp taskwait
  return a + b;
}
} // namespace

int main(int argc, char **argv) {
  bench::ensure_omp_stacksize(argv);
  auto const o = bench::parse_options(argc, argv);
  auto const &z = fib_problem::find(o.size);
  bench::omp_runtime rt(o);
  return bench::measure(
      o, fib_problem::name, rt.name(), [&] { return rt.run([&] { return fib(z.n); }); },
      [&](long r) { return fib_problem::check(r, z); },
      {{"omp_lib", bench::json_string(bench::omp_library())}});
}
