#pragma once
// tests/common/workloads.hpp — the reference fork-join workload every suite uses, and its serial
// projection.

#include "magpie/magpie.hpp"

namespace magpie::test {

inline long serial_fib(int n) { return n < 2 ? n : serial_fib(n - 1) + serial_fib(n - 2); }

inline magpie::task<long> fib(int n) {
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

} // namespace magpie::test
