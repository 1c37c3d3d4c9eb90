// EXPECT: stack_alloc_uninitialized needs a trivially default-constructible T
// An uninitialised stack array of std::string would hold strings whose lifetimes never began.
#include <string>

#include "magpie/magpie.hpp"

magpie::task<long> uses_strings(int n) {
  auto names = co_await magpie::stack_alloc_uninitialized<std::string>(static_cast<std::size_t>(n));
  co_return static_cast<long>(names.size());
}

int main() {
  magpie::inline_scheduler s;
  return static_cast<int>(magpie::sync_wait(s, uses_strings, 3));
}
