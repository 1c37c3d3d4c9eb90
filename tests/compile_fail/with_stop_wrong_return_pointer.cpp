// EXPECT: with_stop: the return pointer must point to the child's value type
// with_stop: the return pointer's type differs from the child's value type (long vs int).
#include "magpie/magpie.hpp"

magpie::task<long> fib(int n) { co_return n; }

magpie::task<int> parent(int n) {
  int r = 0; // fib returns task<long>: &r is the wrong pointer type
  co_await magpie::with_stop(magpie::stop_token{}, &r, fib, n);
  co_await magpie::join();
  co_return r;
}

int main() {
  magpie::inline_scheduler s;
  return magpie::sync_wait(s, parent, 3);
}
