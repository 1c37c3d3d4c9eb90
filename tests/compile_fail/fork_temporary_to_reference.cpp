// EXPECT: a reference parameter of the child would bind to a temporary
// Issue 7, item 1: a forked child's `int const &` parameter bound to the temporary `i + 1000`.
// When a thief resumes the parent, the parent's full-expression ends and the temporary dies while
// the child still reads it (seen with Clang 16 -O2 on 2 workers: wrong values in ~50% of runs).
#include "magpie/magpie.hpp"

magpie::task<long> child(int const &x) { co_return x; }

magpie::task<long> parent(int i) {
  long r = 0;
  co_await magpie::fork(&r, child, i + 1000); // must not compile: pass an lvalue, or take by value
  co_await magpie::join();
  co_return r;
}

int main() {
  magpie::inline_scheduler s;
  return static_cast<int>(magpie::sync_wait(s, parent, 1));
}
