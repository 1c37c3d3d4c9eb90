// EXPECT: a lambda with captures .* passed as a temporary
// A lambda with captures passed to fork as a temporary: the coroutine keeps a pointer to the
// closure, whose captures die with the parent's full-expression when the continuation is stolen.
#include "magpie/magpie.hpp"

magpie::task<long> parent(int i) {
  long r = 0;
  long const base = 40;
  co_await magpie::fork(
      &r, [base](int k) -> magpie::task<long> { co_return base + k; }, i);
  co_await magpie::join();
  co_return r;
}

int main() {
  magpie::inline_scheduler s;
  return static_cast<int>(magpie::sync_wait(s, parent, 2));
}
