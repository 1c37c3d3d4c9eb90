// EXPECT: the child has a defaulted reference parameter
// A defaulted reference parameter binds to a temporary made inside fork, which dies before the
// child has even run.
#include "magpie/magpie.hpp"

magpie::task<long> parent(int) {
  auto child = [](long const &x = 7) -> magpie::task<long> { co_return x; };
  long r = 0;
  co_await magpie::fork(&r, child);
  co_await magpie::join();
  co_return r;
}

int main() {
  magpie::inline_scheduler s;
  return static_cast<int>(magpie::sync_wait(s, parent, 2));
}
