// EXPECT: the object of a member-function child is a temporary
// A member-function coroutine forked on a temporary object: the coroutine keeps `this`.
#include "magpie/magpie.hpp"

struct counter {
  long base = 40;
  magpie::task<long> add(int k) const { co_return base + k; }
};

magpie::task<long> parent(int i) {
  long r = 0;
  co_await magpie::fork(&r, &counter::add, counter{}, i);
  co_await magpie::join();
  co_return r;
}

int main() {
  magpie::inline_scheduler s;
  return static_cast<int>(magpie::sync_wait(s, parent, 2));
}
