// EXPECT: parallel algorithms need random-access iterators
// A parallel algorithm over std::list iterators (bidirectional, not random-access).
#include <list>

#include "magpie/magpie.hpp"

int main() {
  magpie::lazy_pool pool(1);
  std::list<int> values{1, 2, 3};
  magpie::for_each(pool, values.begin(), values.end(), [](int &x) { ++x; });
}
