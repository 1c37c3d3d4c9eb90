// Only the core's umbrella header: a task's author writes magpie::task, fork, call and join.
#include <magpie/core.hpp>

magpie::task<long> core_fib(int n) {
  if (n < 2) {
    co_return n;
  }
  long a = 0;
  long b = 0;
  co_await magpie::fork(&a, core_fib, n - 1);
  co_await magpie::call(&b, core_fib, n - 2);
  co_await magpie::join();
  co_return a + b;
}
