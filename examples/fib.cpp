// The README's example: fib with every call a task.
#include <cstdio>
#include <cstdlib>

#include "magpie/magpie.hpp"

magpie::task<long> fib(int n) {
  if (n < 2) {
    co_return n;
  }
  long a = 0;
  long b = 0;
  co_await magpie::fork(&a, fib, n - 1); // child runs now; our continuation may be stolen
  co_await magpie::call(&b, fib, n - 2); // child runs now; nothing to steal
  co_await magpie::join();               // wait for every child forked in this scope
  co_return a + b;
}

int main(int argc, char **argv) {
  int const n = argc > 1 ? std::atoi(argv[1]) : 30;
  magpie::lazy_pool pool; // hardware_concurrency() workers
  long const r = magpie::sync_wait(pool, fib, n);
  std::printf("fib(%d) = %ld\n", n, r);
  return 0;
}
