// fib — oneTBB: a task_group per call; run fib(n−1), compute fib(n−2) inline, wait.
#include <tbb/task_group.h>

#include "common/tbb_runtime.hpp"
#include "fib/problem.hpp"

namespace {
long fib(int n) {
  if (n < 2) {
    return n;
  }
  long a = 0;
  tbb::task_group g;
  g.run([&] { a = fib(n - 1); });
  long const b = fib(n - 2);
  g.wait();
  return a + b;
}
} // namespace

int main(int argc, char **argv) {
  auto const o = bench::parse_options(argc, argv);
  auto const &z = fib_problem::find(o.size);
  bench::tbb_runtime rt(o);
  return bench::measure(
      o, fib_problem::name, rt.name(), [&] { return rt.run([&] { return fib(z.n); }); },
      [&](long r) { return fib_problem::check(r, z); });
}
