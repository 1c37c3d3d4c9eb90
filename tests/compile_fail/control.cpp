// CONTROL: must compile. The same includes and idioms as the failing cases, used correctly: if
// this file stopped compiling, the failing cases would fail for the wrong reason.
#include <memory>

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

magpie::task<void> consume(std::unique_ptr<int> p) {
  (void)p;
  co_return;
}

magpie::task<int> uses_move_only(int) {
  auto p = std::make_unique<int>(1);
  co_await magpie::call(consume, std::move(p)); // a move-only argument, moved
  auto buf = co_await magpie::stack_alloc<double>(8);
  (void)buf;
  co_return 0;
}

int main() {
  magpie::inline_scheduler s;
  long const r = magpie::sync_wait(s, fib, 10);
  return r == 55 && magpie::sync_wait(s, uses_move_only, 0) == 0 ? 0 : 1;
}
