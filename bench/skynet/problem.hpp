#pragma once
// bench/skynet/problem.hpp — a 10-ary tree of tasks with 10^D leaves numbered 0 … 10^D − 1
// (BENCHMARKS.md, "skynet"). Each leaf returns its number; each inner task forks nine children,
// calls the tenth, joins and returns the sum, 10^D·(10^D − 1)/2.

#include <cstdint>
#include <string>

#include "common/harness.hpp"

namespace skynet_problem {

inline constexpr char const *name = "skynet";

struct size {
  char const *name;
  int depth;
};

inline constexpr size sizes[] = {
    {"default", 7}, // 11,111,111 tasks
    {"paper", 8},   // 111,111,111 tasks
    {"6", 6},       // 1,111,111 tasks
};

inline size const &find(std::string const &s) {
  for (auto const &z : sizes) {
    if (s == z.name) {
      return z;
    }
  }
  bench::unknown_size(name, s);
}

inline std::int64_t leaves(int depth) {
  std::int64_t l = 1;
  for (int d = 0; d < depth; ++d) {
    l *= 10;
  }
  return l;
}

inline bench::verdict check(std::int64_t got, size const &z) {
  std::int64_t const l = leaves(z.depth);
  return bench::check_equal(got, l * (l - 1) / 2);
}

} // namespace skynet_problem
