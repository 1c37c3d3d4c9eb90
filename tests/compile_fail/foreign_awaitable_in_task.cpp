// EXPECT: await_transform
// A magpie task may only co_await magpie's awaitables (a foreign one would suspend the task
// without the stack hand-off protocol): the promise's await_transform for it is deleted.
#include <coroutine>

#include "magpie/magpie.hpp"

magpie::task<int> parent(int n) {
  co_await std::suspend_always{};
  co_return n;
}

int main() {
  magpie::inline_scheduler s;
  return magpie::sync_wait(s, parent, 1);
}
