// EXPECT: (deleted function .*pinned::pinned[(]pinned&&[)]|deleted constructor of .pinned)
// A task parameter whose type can be neither copied nor moved: a coroutine must move its
// parameters into its frame, so the task itself is ill-formed (and fork could not pass it). The
// compiler's own diagnostic names the deleted constructor (GCC and Clang spell it differently).
#include "magpie/magpie.hpp"

struct pinned {
  explicit pinned(int v) : value(v) {}
  pinned(pinned const &) = delete;
  pinned(pinned &&) = delete;
  int value;
};

magpie::task<int> take(pinned p) { co_return p.value; }

magpie::task<int> parent(int) {
  int r = 0;
  co_await magpie::call(&r, take, pinned(1));
  co_return r;
}

int main() {
  magpie::inline_scheduler s;
  return magpie::sync_wait(s, parent, 0);
}
