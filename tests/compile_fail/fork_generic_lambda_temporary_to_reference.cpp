// EXPECT: a reference parameter of the child would bind to a temporary
// A generic lambda with an `auto const &` parameter, given a temporary: fork sees the parameter
// type that deduction gives, and rejects it like the non-generic case.
#include "magpie/magpie.hpp"

magpie::task<long> parent(int i) {
  auto child = [](auto const &x) -> magpie::task<long> { co_return x; };
  long r = 0;
  co_await magpie::fork(&r, child, i + 1L);
  co_await magpie::join();
  co_return r;
}

int main() {
  magpie::inline_scheduler s;
  return static_cast<int>(magpie::sync_wait(s, parent, 1));
}
