// fib — magpie: fork fib(n−1), call fib(n−2), join (fib/magpie_task.hpp).
#include "common/magpie_runtime.hpp"
#include "fib/magpie_task.hpp"
#include "fib/problem.hpp"

int main(int argc, char **argv) {
  auto const o = bench::parse_options(argc, argv);
  auto const &z = fib_problem::find(o.size);
  bench::magpie_runtime rt(o);
  return bench::measure(
      o, fib_problem::name, rt.name(), [&] { return rt.run(fib_problem::magpie_fib, z.n); },
      [&](long r) { return fib_problem::check(r, z); });
}
