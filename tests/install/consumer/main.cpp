#include <magpie/magpie.hpp>

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
  magpie::lazy_pool pool(2);
  return magpie::sync_wait(pool, fib, 20) == 6765 ? 0 : 1;
}
