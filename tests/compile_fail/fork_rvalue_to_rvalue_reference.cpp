// EXPECT: a reference parameter of the child would bind to a temporary
// An rvalue-reference parameter: fork cannot tell std::move(local) (safe) from a prvalue
// (dangling), so both are rejected; the message says to take the parameter by value.
#include <utility>
#include <vector>

#include "magpie/magpie.hpp"

magpie::task<long> child(std::vector<int> &&v) { co_return static_cast<long>(v.size()); }

magpie::task<long> parent(int) {
  long r = 0;
  co_await magpie::fork(&r, child, std::vector<int>(3));
  co_await magpie::join();
  co_return r;
}

int main() {
  magpie::inline_scheduler s;
  return static_cast<int>(magpie::sync_wait(s, parent, 1));
}
