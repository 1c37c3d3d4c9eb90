// examples/placement.cpp — a pool pinned one worker per core, stealing by topological distance.
// docs/topology.md shows this program; CI runs it and checks its last line.
#include <cstdio>

#include "magpie/magpie.hpp"

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

int main() {
  magpie::pool_options options(magpie::placement::one_per_core());
  options.victims = magpie::victim_policy::weighted;
  magpie::lazy_pool pool(options);
  std::printf("%s", pool.describe().c_str()); // the worker -> PU map, and whether each is pinned
  std::printf("fib(25) = %ld\n", magpie::sync_wait(pool, fib, 25));
}
