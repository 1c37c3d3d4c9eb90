#pragma once
// tests/algo/algo_support.hpp — what the algorithm tests share: the blocking call on whichever
// scheduler the test parameter names, and the sizes every algorithm is checked at.

#include <cstddef>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "common/test_support.hpp"

namespace magpie::test {

/// Calls `f(sched)` with the test's scheduler (a pool or the inline scheduler).
template <typename F>
decltype(auto) with_scheduler(any_scheduler &s, F &&f) {
  if (s.is_inline()) {
    return f(*s.inline_sched());
  }
  return f(*s.pool());
}

/// Fixture of the algorithm tests: `on(f)` calls f with the test's scheduler.
class algo_test : public scheduler_test {
public:
  template <typename F>
  decltype(auto) on(F &&f) {
    return with_scheduler(m_sched, std::forward<F>(f));
  }
};

/// 0, 1, small primes and a large size (smaller under sanitizers).
inline std::vector<std::size_t> algo_sizes() {
  return {0, 1, 2, 3, 7, 13, 101, 1009, 4099, static_cast<std::size_t>(scaled(200003, 30011))};
}

/// n pseudo-random values in [0, range).
inline std::vector<std::int64_t> random_values(std::size_t n, std::uint64_t seed,
                                               std::int64_t range = 1000000) {
  std::mt19937_64 g(seed);
  std::vector<std::int64_t> v(n);
  for (auto &x : v) {
    x = static_cast<std::int64_t>(g() % static_cast<std::uint64_t>(range)) - range / 2;
  }
  return v;
}

} // namespace magpie::test
