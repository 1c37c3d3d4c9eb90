// EXPECT: parallel algorithms need random-access iterators
// A parallel reduce over a std::list (a range that is not random-access).
#include <list>

#include "magpie/magpie.hpp"

int main() {
  magpie::lazy_pool pool(1);
  std::list<int> values{1, 2, 3};
  return magpie::reduce(pool, values);
}
