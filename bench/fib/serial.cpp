// fib — the serial projection (T_s): plain recursion.
#include "fib/problem.hpp"

namespace {
long fib(int n) {
  if (n < 2) {
    return n;
  }
  return fib(n - 1) + fib(n - 2);
}
} // namespace

int main(int argc, char **argv) {
  auto const o = bench::parse_options(argc, argv);
  auto const &z = fib_problem::find(o.size);
  int volatile n = z.n; // not a compile-time constant
  return bench::measure(
      o, fib_problem::name, "serial", [&] { return fib(n); },
      [&](long r) { return fib_problem::check(r, z); });
}
