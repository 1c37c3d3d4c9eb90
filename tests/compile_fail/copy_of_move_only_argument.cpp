// EXPECT: an argument cannot be copied .*: pass std::move[(]x[)]
// A move-only argument passed as an lvalue: the child takes it by value, so fork would have to
// copy it. fork says what to do instead.
#include <memory>

#include "magpie/magpie.hpp"

magpie::task<void> consume(std::unique_ptr<int> p) {
  (void)p;
  co_return;
}

magpie::task<int> parent(int) {
  auto p = std::make_unique<int>(1);
  co_await magpie::fork(consume, p); // needs std::move(p)
  co_await magpie::join();
  co_return 0;
}

int main() {
  magpie::inline_scheduler s;
  return magpie::sync_wait(s, parent, 0);
}
