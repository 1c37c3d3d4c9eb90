#pragma once
// bench/fib/problem.hpp — fib: every call a task, no cutoff (BENCHMARKS.md, "fib").
// Calls = 2·fib(n+1) − 1.

#include <string>

#include "common/harness.hpp"

namespace fib_problem {

inline constexpr char const *name = "fib";

struct size {
  char const *name;
  int n;
  long expected;
};

inline constexpr size sizes[] = {
    {"default", 34, 5'702'887}, // 18.5 M calls
    {"paper", 42, 267'914'296}, // Table I
    {"20", 20, 6'765},          {"30", 30, 832'040}, {"35", 35, 9'227'465}, {"40", 40, 102'334'155},
};

inline size const &find(std::string const &s) {
  for (auto const &z : sizes) {
    if (s == z.name) {
      return z;
    }
  }
  bench::unknown_size(name, s);
}

inline bench::verdict check(long got, size const &z) { return bench::check_equal(got, z.expected); }

} // namespace fib_problem
