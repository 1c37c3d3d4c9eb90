// fib — magpie: fork fib(n−1), call fib(n−2), join.
#include "common/magpie_runtime.hpp"
#include "fib/problem.hpp"

namespace {
magpie::task<long> fib(int n) {
  if (n < 2) {
    co_return n;
  }
  long a = 0;
  long b = 0;
  co_await magpie::fork(&a, fib, n - 1);
  co_await magpie::call(&b, fib, n - 2);
  co_await magpie::join();
  co_return a + b;
}
} // namespace

int main(int argc, char **argv) {
  auto const o = bench::parse_options(argc, argv);
  auto const &z = fib_problem::find(o.size);
  bench::magpie_runtime rt(o);
  return bench::measure(
      o, fib_problem::name, rt.name(), [&] { return rt.run(fib, z.n); },
      [&](long r) { return fib_problem::check(r, z); });
}
