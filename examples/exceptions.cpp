// Exceptions: a child's exception reaches its parent's next join, after every sibling has
// finished; one that nobody catches reaches the caller of sync_wait.
#include <cstdio>
#include <stdexcept>
#include <string>

#include "magpie/magpie.hpp"

magpie::task<int> parse(std::string const &text) {
  std::size_t used = 0;
  int const value = std::stoi(text, &used); // throws std::invalid_argument on "oops"
  if (used != text.size()) {
    throw std::invalid_argument("trailing characters in \"" + text + "\"");
  }
  co_return value;
}

magpie::task<int> sum_or_zero(std::string const &a, std::string const &b) {
  int x = 0;
  int y = 0;
  try {
    co_await magpie::fork(&x, parse, a);
    co_await magpie::fork(&y, parse, b);
    co_await magpie::join(); // rethrows the first exception, once both children have finished
  } catch (std::invalid_argument const &e) {
    std::printf("caught: %s\n", e.what());
    co_return 0;
  }
  co_return x + y;
}

magpie::task<int> sum(std::string const &a, std::string const &b) {
  int x = 0;
  int y = 0;
  co_await magpie::fork(&x, parse, a);
  co_await magpie::call(&y, parse, b);
  co_await magpie::join(); // not caught here: passes on to whoever awaits us
  co_return x + y;
}

int main() {
  magpie::lazy_pool pool(2);
  std::string const one = "1";
  std::string const two = "2";
  std::string const bad = "2x";
  std::printf("sum_or_zero(1, 2)  = %d\n", magpie::sync_wait(pool, sum_or_zero, one, two));
  std::printf("sum_or_zero(1, 2x) = %d\n", magpie::sync_wait(pool, sum_or_zero, one, bad));
  try {
    magpie::sync_wait(pool, sum, bad, two);
  } catch (std::invalid_argument const &e) {
    std::printf("sync_wait rethrew: %s\n", e.what());
  }
  std::printf("the pool still works: %d\n", magpie::sync_wait(pool, sum, one, two));
}
