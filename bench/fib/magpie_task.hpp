#pragma once
// bench/fib/magpie_task.hpp — fib as a magpie task: fork fib(n−1), call fib(n−2), join. Shared by
// the fib benchmark (magpie.cpp) and trace_overhead (bench/trace/).
#include "magpie/magpie.hpp"

namespace fib_problem {
// Internal linkage, as when it was local to the benchmark's file: an inline (external) coroutine
// compiles to a different, longer resume function with GCC 12 (fib: 328 instructions, not 281).
namespace {
magpie::task<long> magpie_fib(int n) {
  if (n < 2) {
    co_return n;
  }
  long a = 0;
  long b = 0;
  co_await magpie::fork(&a, magpie_fib, n - 1);
  co_await magpie::call(&b, magpie_fib, n - 2);
  co_await magpie::join();
  co_return a + b;
}
} // namespace
} // namespace fib_problem
