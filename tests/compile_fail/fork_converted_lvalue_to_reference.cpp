// EXPECT: a reference parameter of the child would bind to a temporary
// An lvalue of another type: binding `long const &` to an `int` lvalue materialises a converted
// temporary in the parent's full-expression, which dangles exactly like an rvalue argument.
#include "magpie/magpie.hpp"

magpie::task<long> child(long const &x) { co_return x; }

magpie::task<long> parent(int i) {
  long r = 0;
  co_await magpie::fork(&r, child, i); // int -> long const &: a temporary
  co_await magpie::join();
  co_return r;
}

int main() {
  magpie::inline_scheduler s;
  return static_cast<int>(magpie::sync_wait(s, parent, 1));
}
