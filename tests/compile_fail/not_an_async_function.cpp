// EXPECT: fn must return magpie::task<T>
// fork of an ordinary function (it does not return magpie::task<T>).
#include "magpie/magpie.hpp"

int plain(int n) { return n; }

magpie::task<int> parent(int n) {
  int r = 0;
  co_await magpie::fork(&r, plain, n);
  co_await magpie::join();
  co_return r;
}

int main() {
  magpie::inline_scheduler s;
  return magpie::sync_wait(s, parent, 1);
}
