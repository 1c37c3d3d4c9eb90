// EXPECT: Parameter = 2; ParameterType = const long int&|binds_to_a_temporary<2UL, const long &
// The diagnostic for a reference parameter bound to a temporary names which one: the second
// parameter (`long const &`), given the int `i` (an lvalue, but it must be converted to long, so
// the reference would bind to a temporary), of a child with three.
#include "magpie/magpie.hpp"

magpie::task<long> child(int const &a, long const &b, int c) { co_return a + b + c; }

magpie::task<long> parent(int i) {
  long r = 0;
  co_await magpie::fork(&r, child, i, i, 3); // must not compile: parameter 2 binds a temporary
  co_await magpie::join();
  co_return r;
}

int main() {
  magpie::inline_scheduler s;
  return static_cast<int>(magpie::sync_wait(s, parent, 1));
}
