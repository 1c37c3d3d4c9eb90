// EXPECT: the child's parameter types cannot be seen
// A function object with overloaded call operators, given a temporary: fork cannot tell whether
// the chosen overload takes it by reference, so it asks for lvalues.
#include "magpie/magpie.hpp"

struct overloaded {
  magpie::task<long> operator()(long const &x) const { co_return x; }
  magpie::task<long> operator()(char const *) const { co_return 0; }
};

magpie::task<long> parent(int i) {
  overloaded child;
  long r = 0;
  co_await magpie::fork(&r, child, i + 1L);
  co_await magpie::join();
  co_return r;
}

int main() {
  magpie::inline_scheduler s;
  return static_cast<int>(magpie::sync_wait(s, parent, 2));
}
