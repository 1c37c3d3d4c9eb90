// Only the algorithms' umbrella header, as docs/algorithms.md says: for_each, reduce and sort on
// a pool that it brings in.
#include <algorithm>
#include <functional>
#include <numeric>
#include <vector>

#include <magpie/algo.hpp>

bool use_algo() {
  magpie::lazy_pool pool(2);
  std::vector<long> v(1000);
  std::iota(v.begin(), v.end(), 1L);
  magpie::for_each(pool, v.begin(), v.end(), [](long &x) { x = 1001 - x; });
  long const sum = magpie::reduce(pool, v.begin(), v.end(), 0L, std::plus<>{});
  magpie::sort(pool, v.begin(), v.end());
  return sum == 500500 && std::is_sorted(v.begin(), v.end());
}
